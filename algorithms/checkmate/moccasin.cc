// moccasin — Bartan, Li, Teague, Lott and Dilkina, "Moccasin: Efficient
// Tensor Rematerialization for Neural Networks", ICML 2023.
//
// Moccasin restricts the schedules to those in which each value is
// computed at most C times (C = 2 in the paper) and is retained, after each
// compute, for one contiguous interval; bounding the number of intervals
// per value is what makes its model small and fast to solve. Here that
// class lives on Checkmate's stage grid (checkmate_model.h), in the stage
// order and from the warm start of checkmate_milp (the cheapest heuristic
// schedule that, staged in its own first-compute order, computes no value
// more than C times) or, where none fits in the class or it is cheaper, a
// greedy walk inside the class (moccasin_greedy.h), and solvers answer it:
// - gecode (moccasin_cp.h): the paper's model, C interval variables per
//   value, dependencies as coverage constraints and memory as one
//   cumulative constraint, as a constraint program on Gecode (the paper
//   used OR-tools CP-SAT, which Debian does not ship), searched by branch
//   and bound below the warm start's cost;
// - cbc (or highs): the staged MILP with the rows sum_t R[t,i] <= C
//   (S[t+1,i] <= S[t,i] + R[t,i] already makes every interval contiguous
//   and start at a compute), solved as checkmate_milp is (staged_milp.h),
//   on CBC or on HiGHS's executable.
// Chosen by measurement (results/checkmate_milp_vgg16.json, Checkmate's
// VGG16 at 8 budgets, threads=1): Gecode proves the same optima as CBC in
// 2.0 s in all against CBC's 16.5 s (checkmate_milp: 19.2 s), most at the
// root by propagation alone, because the warm start is optimal or nearly.
// But Gecode's search has no clause learning and no LP bound: where
// proving infeasibility or finding deep recomputation takes search
// (tests/moccasin_test.cc: random_layered:n=20, chain:n=6 at 3 units) it
// runs for minutes where CBC ends within a second, and it gives no bound.
// - cpsat (moccasin_cpsat.h): the same interval model on OR-Tools'
//   CP-SAT, the paper's solver, in a child process with the build's Python.
// Hence solver=auto (default): CP-SAT where the build found ortools, since
// on the default corpus at the main job's budgets it never answered worse
// than Gecode then the MILP and ended sooner in all (docs/algorithms.md);
// else Gecode for gecode_seconds, then the MILP from Gecode's best
// schedule unless Gecode settled the question, on CBC then HiGHS
// (kDefaultMilpSolver, chosen by measurement: docs/algorithms.md).
//
// Exact within its class: optimal among staged schedules (in the model's
// stage order) that compute each value at most C times. Every such
// schedule is a staged schedule, so its optimum is never below
// checkmate_milp's in the same stage order, and equal to it whenever an
// optimal staged schedule computes no value more than C times. The bound
// is reported as staged_lower_bound_cost, a bound for this class only.
// Where a warm-start heuristic's schedule fits but is outside the class,
// and the class has no schedule or a dearer one, that schedule is the
// answer (ClassAnswer), not optimal, with the class's bound kept;
// where none fits at all, reach_search gets more time and memory first
// (LastResort). A start at the base cost is optimal among all schedules
// and the answer without a solver (BaseCostAnswer).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/moccasin_cp.h"
#include "algorithms/checkmate/moccasin_cpsat.h"
#include "algorithms/checkmate/moccasin_greedy.h"
#include "algorithms/checkmate/staged_milp.h"
#include "model/limits.h"
#include "model/registry.h"

namespace remat {
namespace {

enum class MoccasinSolver { kAuto, kHighs, kCbc, kGecode, kCpSat };

struct MoccasinOptions {
  StagedMilpOptions milp;
  int computations;
  MoccasinSolver solver;
  double gecode_seconds;
  double cpsat_literals_per_second;
  CheckmateOptions checkmate;
};

const Options<MoccasinOptions> kOptions(
    NestedOptions(&MoccasinOptions::milp, StagedMilpOptionFields()),
    IntOption(&MoccasinOptions::computations, "computations", 2,
              "C: the most times each value is computed (each compute "
              "starts one retention interval)",
              1),
    ChoiceOption(&MoccasinOptions::solver, "solver", MoccasinSolver::kAuto,
                 {{"auto", MoccasinSolver::kAuto},
                  {"highs", MoccasinSolver::kHighs},
                  {"cbc", MoccasinSolver::kCbc},
                  {"gecode", MoccasinSolver::kGecode},
                  {"cpsat", MoccasinSolver::kCpSat}},
                 "auto (default): the interval model on OR-Tools' CP-SAT "
                 "where the build has ortools, else on Gecode for "
                 "gecode_seconds, then the MILP on CBC then HiGHS (as "
                 "checkmate_milp's solver=auto) unless Gecode settled it; "
                 "highs, cbc, gecode or cpsat: that one alone"),
    DoubleOption(&MoccasinOptions::gecode_seconds, "gecode_seconds", 2,
                 "solver=auto without CP-SAT: Gecode's share (at most a "
                 "tenth of the time left)"),
    DoubleOption(&MoccasinOptions::cpsat_literals_per_second,
                 "cpsat_literals_per_second", kCpSatLiteralsPerSecond,
                 "where CP-SAT runs, refuse (too_large) interval models of "
                 "more literals (n x C + edges x C^2) than this x the "
                 "seconds left (0: no such limit; the default is CP-SAT's "
                 "measured speed, docs/algorithms.md)"),
    NestedOptions(&MoccasinOptions::checkmate,
                  CheckmateOptionFields("moccasin", kExactStagedWarmStart,
                                        kMilpLimits)));

// The solver that runs, and why, for the answer's details (`solver`,
// `solver_choice`) and for the limits that bind it.
struct SolverChoice {
  bool cpsat;
  std::string why;
};

SolverChoice ChooseSolver(MoccasinSolver solver) {
  if (solver == MoccasinSolver::kCpSat) return {true, "solver=cpsat"};
  if (solver == MoccasinSolver::kGecode) return {false, "solver=gecode"};
  if (solver == MoccasinSolver::kCbc) return {false, "solver=cbc"};
  if (solver == MoccasinSolver::kHighs) return {false, "solver=highs"};
  if (std::optional<CpSatProgram> program = FindCpSat()) {
    return {true, fmt::format("solver=auto: CP-SAT, found ({} with ortools)",
                              program->python)};
  }
  return {false,
          "solver=auto: Gecode then the MILP, as CP-SAT was not found (a "
          "Python with ortools: python/requirements.txt, "
          "REMAT_CPSAT_PYTHON)"};
}

// The solver (or solvers, in their order) that `choice` runs.
std::string_view SolverName(MoccasinSolver solver, const SolverChoice& choice) {
  if (choice.cpsat) return "cpsat";
  switch (solver) {
    case MoccasinSolver::kGecode:
      return "gecode";
    case MoccasinSolver::kCbc:
      return "cbc";
    case MoccasinSolver::kHighs:
      return "highs";
    default:
      return "gecode+milp";
  }
}

void AddSolverDetails(AlgorithmOutput& out, std::string_view solver,
                      const SolverChoice& choice) {
  out.extra["solver"] = solver;
  out.extra["solver_choice"] = choice.why;
}

// Each solver is held to its own limits: CP-SAT to its measured speed on
// the interval model (kCpSatLiteralsPerSecond), the MILP solvers to theirs
// on the MILP's nonzeros, and Gecode alone, which builds the MILP's model
// but was not measured against its size, to that model's memory only.
std::optional<AlgorithmOutput> Refuse(const Graph& graph,
                                      const SolveRequest& request,
                                      const MoccasinOptions& options) {
  const SolverChoice choice = ChooseSolver(options.solver);
  const CheckmateLimitsFor limits =
      choice.cpsat ? CheckmateLimitsFor::kNoMilp
      : options.solver == MoccasinSolver::kGecode
          ? CheckmateLimitsFor::kMilpModel
          : CheckmateLimitsFor::kMilpSolver;
  std::optional<AlgorithmOutput> refused =
      RefuseCheckmateRequest(graph, request, options.checkmate, limits);
  const double per_second = options.cpsat_literals_per_second;
  const double seconds = request.deadline.SecondsLeft();
  if (!refused && choice.cpsat && per_second > 0 && seconds < 1e9) {
    const int64_t literals = CountIntervalModel(graph, options.computations);
    if (static_cast<double>(literals) > per_second * seconds) {
      refused = AlgorithmOutput::NoSchedule(
          Status::kTooLarge,
          fmt::format("CP-SAT's interval model would have {} literals (n x "
                      "C + edges x C^2): more than the {:.0f} "
                      "(cpsat_literals_per_second={} x the {:.1f} s left) "
                      "that CP-SAT was measured to answer in time "
                      "(docs/algorithms.md); raise the time limit or "
                      "cpsat_literals_per_second",
                      literals, per_second * seconds, per_second, seconds));
    }
  }
  if (refused) {
    AddSolverDetails(*refused, SolverName(options.solver, choice), choice);
  }
  return refused;
}

// Where no warm start fits, in the class or outside it, and reach_search
// is among the warm starts: reach_search, which finds a schedule within the
// budget wherever one exists and its remembered sets fit, once more with a
// quarter of the time left and kLastResortMib of memory (at most a quarter
// of the memory limit; as a warm start among thirteen it has its default
// memory and at most 5 s). On Checkmate's 1,000-node random layered graph
// at 70% of the NoRemat peak no warm start fits in 5 s, and the last
// resort's schedule is the answer, where CP-SAT finds none of the class in
// 10 minutes (results/moccasin_scale). Its schedule counts as outside the
// class only where it computes a value more than C times, so that the
// answer's message is true; else it is not used.
constexpr int64_t kLastResortMib = 1024;

std::optional<Incumbent> LastResort(const Graph& graph,
                                    const SolveRequest& request, int c) {
  const int64_t mib = std::min(kLastResortMib, MemoryLimit() / 4 >> 20);
  const double seconds = request.deadline.SecondsLeft() / 4;
  if (mib < 1 || seconds <= 0) return std::nullopt;
  SubSolution found = SubSolverOf(request).Solve(
      graph, "reach_search", {fmt::format("memory_mib={}", mib)},
      request.budget_bytes, seconds);
  if (!found.output.schedule || !found.simulation || !found.simulation->valid ||
      found.simulation->peak_bytes > request.budget_bytes) {
    return std::nullopt;
  }
  if (MostComputedNode(graph, *found.output.schedule).times <= c) {
    return std::nullopt;
  }
  return Incumbent{
      .schedule = std::move(*found.output.schedule),
      .cost = found.simulation->cost,
      .algorithm = fmt::format("reach_search (memory_mib={})", mib)};
}

class Moccasin : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const MoccasinOptions options = kOptions.Read(request.params);
    const int c = options.computations;
    const MoccasinSolver solver = options.solver;
    if (auto refused = Refuse(graph, request, options)) {
      return std::move(*refused);
    }
    const SolverChoice choice = ChooseSolver(solver);
    const bool cpsat = choice.cpsat;
    // CP-SAT's interval model needs the stages, not the MILP's columns.
    StagedStart start =
        BestStagedStart(graph, request, options.checkmate, c, !cpsat);
    if (auto optimal = BaseCostAnswer(graph, start)) {
      AddSolverDetails(*optimal, "none", choice);
      return std::move(*optimal);
    }
    // The greedy walk inside the class, where no heuristic fits in it or
    // where it is cheaper than the one that does. Its repair
    // walks only where there is no start at all: beside a start they would
    // take up to a quarter of the solver's time for a cheaper hint at best.
    if (std::optional<Incumbent> walked = GreedyIntervalStart(
            graph, start.model, request.budget_bytes, c,
            Deadline::In(std::max(request.deadline.SecondsLeft() / 4, 1e-3)),
            start.incumbent ? 1 : kMaxRepairWalks);
        walked && (!start.incumbent || walked->cost < start.incumbent->cost)) {
      start.incumbent = std::move(walked);
    }
    const std::vector<std::string>& warm = options.checkmate.warm_start;
    if (!start.incumbent && !start.cheapest_outside &&
        std::find(warm.begin(), warm.end(), "reach_search") != warm.end()) {
      start.cheapest_outside = LastResort(graph, request, c);
      if (start.cheapest_outside) {
        start.outside_class.push_back(
            fmt::format("{} (it computes a value more than {} times)",
                        start.cheapest_outside->algorithm, c));
      }
    }
    // A heuristic that fits but is outside the class is no start: the
    // answer names it, and is its schedule where that is cheaper than the
    // class's answer or the only one that fits. A solver's
    // process can overrun the deadline (CBC's root node; Python's start and
    // the model's construction under load): the watchdog then answers with
    // the cheapest warm start, not with nothing. The MILP's path offers its
    // own start where it has one.
    const ClassAnswer answer(graph, request, start,
                             cpsat ? "CP-SAT" : "the solver");
    const auto answered = [&](AlgorithmOutput out, std::string_view ran) {
      AddSolverDetails(out, ran, choice);
      return answer.Answer(std::move(out));
    };
    if (cpsat) {
      return answered(SolveMoccasinCpSat(graph, request.budget_bytes, c,
                                         options.milp.threads, start,
                                         request.deadline)
                          .output,
                      "cpsat");
    }
    std::string gecode_note;
    if (solver == MoccasinSolver::kAuto || solver == MoccasinSolver::kGecode) {
      const Deadline deadline =
          solver == MoccasinSolver::kGecode
              ? request.deadline
              : Deadline::In(std::min(options.gecode_seconds,
                                      request.deadline.SecondsLeft() / 10));
      CpAnswer cp = SolveMoccasinCp(graph, request, c, options.milp.threads,
                                    start, deadline);
      if (solver == MoccasinSolver::kGecode || cp.settled) {
        return answered(std::move(cp.output), "gecode");
      }
      gecode_note = fmt::format("; Gecode first: {}", cp.output.message);
    }
    AlgorithmOutput out = SolveStagedMilp(
        graph, request, options.checkmate, options.milp,
        {.name = fmt::format("staged schedules computing each value at most "
                             "{} times",
                             c),
         .max_computes = c},
        std::move(start),
        solver == MoccasinSolver::kCbc     ? MilpSolver::kCbc
        : solver == MoccasinSolver::kHighs ? MilpSolver::kHighs
                                           : kDefaultMilpSolver);
    out.message += gecode_note;
    return answered(std::move(out), SolverName(solver, choice));
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "moccasin",
    .description = "Moccasin's retention intervals (each value computed at "
                   "most C times) over Checkmate's stages: the interval "
                   "model on CP-SAT, or on Gecode then the MILP on CBC and "
                   "HiGHS (optimal in that class)",
    .citation = "Bartan et al., Moccasin: Efficient Tensor "
                "Rematerialization for Neural Networks, ICML 2023",
    .exact = true,
    .uses_budget = true,
    // CBC 2.10 crashed in CglPreProcess::postProcess and keeps static state.
    .isolate = true,
    // As Run refuses: each solver by its own limits.
    .refuse =
        [](const Graph& graph, const SolveRequest& request) {
          return Refuse(graph, request, kOptions.Read(request.params));
        },
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<Moccasin>(); },
});

}  // namespace
}  // namespace remat
