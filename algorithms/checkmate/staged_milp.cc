// The MILP solver wiring of checkmate_milp and moccasin (staged_milp.h).
#include "algorithms/checkmate/staged_milp.h"

#include <Cbc_C_Interface.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/highs_process.h"
#include "algorithms/checkmate/lp_rounding.h"
#include "algorithms/common/warm_start.h"

namespace remat {
namespace {

// CbcMain1, which Cbc_solve runs, keeps static state in CBC 2.10, so two
// solves in one process must not overlap. The sweep and `remat solve` run
// each solve in its own process (the algorithms' isolate flag), where the
// lock is never contended; it guards programs that run solves in-process
// (benchmarks, programs that do not call InitIsolation).
std::mutex cbc_mutex;

// Above this many columns, preprocess=auto turns CBC's preprocessing off:
// there it ignores the time limit. Preprocessing is off by default: CBC
// 2.10's CglPreProcess::postProcess crashed the process (VGG19 at 19,577
// columns, and models under 10,000 columns stopped by a 10 s limit).
constexpr int kPreprocessMaxCols = 10000;

// settle_nonzeros_per_second's default: the fastest any MILP solver was
// measured to settle (prove, or improve on its warm start) a model whose
// warm start its LP bound does not already prove. HiGHS proved VGG19 at
// batch 379 (114,399 nonzeros) at 80% of its NoRemat peak in 9.3 s, 12,300
// nonzeros a second, and at 70% in 14.9 s; on the default corpus's U-Nets
// (169,000-174,000 nonzeros) neither solver improved on the warm start in
// 10 s at 11 of the 13 budgets where they stopped at the limit (by 0.01%
// at the other 2), nor HiGHS in 30-40 s at 3 of 4 budgets tried, while its
// root bound came within 1-3 s
// (docs/algorithms.md, "When the MILP solver is not run").
constexpr double kSettleNonzerosPerSecond = 12000;

struct CbcDeleter {
  void operator()(Cbc_Model* model) const { Cbc_deleteModel(model); }
};

}  // namespace

std::string_view MilpSolverName(MilpSolver solver) {
  switch (solver) {
    case MilpSolver::kCbc:
      return "CBC";
    case MilpSolver::kHighs:
      return "HiGHS";
    case MilpSolver::kAuto:
      return "CBC then HiGHS";
  }
  return "";
}

namespace {

// What a MILP solver answered, in the model's (scaled) units.
struct MilpAnswer {
  // Empty when the solver ran; else why not (status error).
  std::string error;
  bool proven_infeasible = false;
  bool optimal = false;
  std::optional<std::vector<double>> x;
  double objective = 0;
  // Proven lower bound on the objective; -inf when none.
  double bound = -std::numeric_limits<double>::infinity();
};

MilpAnswer SolveWithCbc(const CheckmateModel& model,
                        const std::optional<std::vector<double>>& start,
                        const StagedMilpOptions& options, double seconds) {
  std::unique_ptr<Cbc_Model, CbcDeleter> cbc(Cbc_newModel());
  Cbc_loadProblem(cbc.get(), model.num_cols(), model.num_rows(),
                  model.col_starts().data(), model.row_index().data(),
                  model.values().data(), model.col_lower().data(),
                  model.col_upper().data(), model.objective().data(),
                  model.row_lower().data(), model.row_upper().data());
  for (int col : model.integer_cols()) Cbc_setInteger(cbc.get(), col);
  if (start) {
    std::vector<int> cols(model.num_cols());
    for (int i = 0; i < model.num_cols(); ++i) cols[i] = i;
    Cbc_setMIPStartI(cbc.get(), model.num_cols(), cols.data(), start->data());
  }
  Cbc_setLogLevel(cbc.get(), 0);
  Cbc_setParameter(cbc.get(), "log", "0");
  // CBC counts CPU time by default; the deadline is wall-clock time.
  Cbc_setParameter(cbc.get(), "timeMode", "elapsed");
  // CglPreProcess does not look at the time limit: on large models it
  // alone can run many times past the deadline (seen at 100 nodes).
  const CbcPreprocess preprocess = options.preprocess;
  if (preprocess == CbcPreprocess::kOff ||
      (preprocess == CbcPreprocess::kAuto &&
       model.num_cols() > kPreprocessMaxCols)) {
    Cbc_setParameter(cbc.get(), "preprocess", "off");
  }
  Cbc_setParameter(cbc.get(), "threads",
                   std::to_string(options.threads).c_str());
  std::unique_lock lock(cbc_mutex);
  if (seconds < 1e9) Cbc_setMaximumSeconds(cbc.get(), seconds);
  Cbc_solve(cbc.get());
  lock.unlock();

  MilpAnswer answer;
  answer.proven_infeasible = Cbc_isProvenInfeasible(cbc.get());
  const double* best = Cbc_bestSolution(cbc.get());
  if (answer.proven_infeasible || best == nullptr) return answer;
  answer.optimal = Cbc_isProvenOptimal(cbc.get()) != 0;
  answer.objective = Cbc_getObjValue(cbc.get());
  answer.bound = Cbc_getBestPossibleObjValue(cbc.get());
  answer.x.emplace(best, best + model.num_cols());
  return answer;
}

MilpAnswer SolveWithHighs(const CheckmateModel& model,
                          const std::optional<std::vector<double>>& start,
                          const StagedMilpOptions& options, double seconds) {
  HighsRun run =
      RunHighs(model, start, std::min(seconds, 1e7), options.threads);
  MilpAnswer answer;
  answer.error = std::move(run.error);
  if (!answer.error.empty()) return answer;
  answer.proven_infeasible = run.model_status == "Infeasible";
  if (answer.proven_infeasible || !run.x) return answer;
  answer.optimal = run.model_status == "Optimal";
  for (int c = 0; c < model.num_cols(); ++c) {
    answer.objective += model.objective()[c] * (*run.x)[c];
  }
  if (run.bound) answer.bound = *run.bound;
  answer.x = std::move(run.x);
  return answer;
}

// solver=auto: on models of at most kCbcFirstMaxNonzeros, CBC for a share
// of the time, then, unless it settled the question, HiGHS for the rest
// from the better of CBC's schedule and the warm start, keeping the better
// bound; HiGHS alone on larger models. Measured (docs/algorithms.md, "Which
// MILP solver"): CBC proves small models many times sooner (chain:n=8 at
// 3 units, 4,360 nonzeros, in 0.4 s where HiGHS takes 17 s; the corpus's
// chain:n=16 in half HiGHS's time), HiGHS proves models CBC leaves open
// from 118,000 nonzeros on (VGG19 at batch 379), and a share of CBC before
// HiGHS only delays HiGHS where CBC does not finish in it (the 100-node
// random graph at 80%: 46 s against HiGHS's 19 s alone). `settled_by`
// names the solver whose answer stands.
constexpr double kCbcShare = 0.25;
constexpr double kCbcMaxSeconds = 30;
constexpr int64_t kCbcFirstMaxNonzeros = 100000;

MilpAnswer SolveWithCbcThenHighs(
    const CheckmateModel& model,
    const std::optional<std::vector<double>>& start,
    const StagedMilpOptions& options, double seconds, MilpSolver& settled_by) {
  settled_by = MilpSolver::kHighs;
  if (static_cast<int64_t>(model.values().size()) > kCbcFirstMaxNonzeros) {
    return SolveWithHighs(model, start, options, seconds);
  }
  const Deadline deadline = Deadline::In(seconds);
  MilpAnswer cbc = SolveWithCbc(model, start, options,
                                std::min(seconds * kCbcShare, kCbcMaxSeconds));
  if (cbc.proven_infeasible || cbc.optimal) {
    settled_by = MilpSolver::kCbc;
    return cbc;
  }
  MilpAnswer highs = SolveWithHighs(model, cbc.x ? cbc.x : start, options,
                                    std::max(0.0, deadline.SecondsLeft()));
  if (!highs.error.empty() || highs.proven_infeasible || highs.optimal) {
    return highs;
  }
  highs.bound = std::max(highs.bound, cbc.bound);
  if (!highs.x || (cbc.x && cbc.objective < highs.objective)) {
    settled_by = MilpSolver::kCbc;
    cbc.bound = highs.bound;
    return cbc;
  }
  return highs;
}

// The details every answer from the model carries (its stage order is
// ClassAnswer's, which every caller's answer passes through).
void AddModelDetails(const StagedStart& staged_start,
                     const std::string& warm_start_names,
                     AlgorithmOutput& out) {
  out.extra["variables"] = staged_start.model.num_cols();
  out.extra["warm_start"] = warm_start_names;
  out.extra["constraints"] = staged_start.model.num_rows();
}

}  // namespace

AlgorithmOutput SolveStagedMilp(const Graph& graph,
                                const SolveRequest& request,
                                const CheckmateOptions& checkmate,
                                const StagedMilpOptions& milp,
                                const StagedMilpClass& schedule_class,
                                StagedStart staged_start, MilpSolver solver) {
  const std::string warm_start_names = WarmStartText(checkmate.warm_start);
  const std::string_view name = MilpSolverName(solver);
  const std::optional<Incumbent>& incumbent = staged_start.incumbent;
  const CheckmateModel& model = staged_start.model;
  std::optional<std::vector<double>> start;
  if (incumbent) start = model.PointOf(incumbent->schedule);
  std::string warm_start = "none fits when staged";
  if (incumbent) {
    warm_start = fmt::format("{} (staged cost {}{})", incumbent->algorithm,
                             incumbent->cost,
                             start ? "" : ", rejected by the model's rows");
  }
  // What to answer if the solver overruns the deadline, or has no time at
  // all.
  std::optional<AlgorithmOutput> standby;
  if (incumbent) {
    standby = AlgorithmOutput::Found(
        incumbent->schedule,
        fmt::format("{} did not finish; warm start: {}", name, warm_start));
    standby->status = Status::kTimeout;
    standby->extra["warm_start"] = warm_start_names;
    if (request.standby) request.standby->Offer(*standby);
  }

  // The decision question "a schedule within the budget at cost <= X?"
  // (the Checkmate reproduction's) needs no MILP when the warm start
  // answers it.
  const int64_t target = milp.cost_target;
  if (target > 0 && incumbent && incumbent->cost <= target) {
    AlgorithmOutput out = AlgorithmOutput::Found(
        incumbent->schedule,
        fmt::format("warm start {} meets cost_target={}; {} not run",
                    warm_start, target, name));
    out.extra["warm_start"] = warm_start_names;
    return out;
  }

  // Leave a little time to extract and return the schedule.
  const double seconds = request.deadline.SecondsLeft() - 0.2;
  if (seconds <= 0) {
    if (standby) return *standby;
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout, fmt::format("no time left to run {}; no warm start "
                                      "fits",
                                      name));
  }
  // A model the solvers cannot settle in the time left: the time they
  // would have had goes to Checkmate's approximation, whose LP value bounds
  // the class (the solvers' root bound, less their cuts) and whose cheapest
  // rounding answers where it beats the warm start. The warm start's own
  // checkmate_lp had a share of the time only: answering the warm start
  // alone was up to 1.43% dearer than checkmate_lp given all of it (the
  // U-Nets of the default corpus at 10 s,
  // results/staged_never_dearer/).
  const double settle_rate = milp.settle_nonzeros_per_second;
  const auto nonzeros = static_cast<double>(model.values().size());
  if (incumbent && start && settle_rate > 0 &&
      nonzeros > settle_rate * seconds) {
    RoundedLp rounded = RoundRelaxation(graph, model, request.budget_bytes,
                                        Deadline::In(seconds), {});
    const bool rounding_wins = rounded.best && rounded.fits &&
                               rounded.best->simulation.cost < incumbent->cost;
    const int64_t cost =
        rounding_wins ? rounded.best->simulation.cost : incumbent->cost;
    const int64_t bound =
        rounded.lp_solved ? StagedBoundOf(model, rounded.lp_value) : 0;
    const bool optimal = rounded.lp_solved && cost <= bound;
    AlgorithmOutput out = AlgorithmOutput::Found(
        rounding_wins ? std::move(rounded.best->schedule)
                      : incumbent->schedule,
        fmt::format(
            "{}; {} not run: {:.0f} nonzeros, more than the {:.0f} "
            "(settle_nonzeros_per_second={:g} x the {:.1f} s left) that the "
            "MILP solvers were measured to settle; warm start: {}, {}; {}",
            optimal ? "optimal among " + schedule_class.name
                    : std::string("not proven optimal"),
            name, nonzeros, settle_rate * seconds, settle_rate, seconds,
            warm_start,
            rounded.lp_solved
                ? fmt::format("LP bound {:.0f}", rounded.lp_value)
                : std::string("the LP relaxation did not finish in time"),
            rounding_wins
                ? fmt::format("answered by the cheapest of its {} roundings "
                              "(cost {})",
                              rounded.offered, cost)
                : fmt::format("none of its {} roundings fits cheaper",
                              rounded.offered)));
    if (!optimal) out.status = Status::kTimeout;
    out.optimal = optimal;
    out.staged_lower_bound_cost = optimal ? cost : bound;
    out.extra["mip_gap"] =
        cost > 0 ? std::max(0.0, static_cast<double>(cost - bound) /
                                     static_cast<double>(cost))
                 : 0.0;
    out.extra["milp_solver"] = "none";
    out.extra["answer"] = rounding_wins ? "lp_rounding" : "warm_start";
    AddModelDetails(staged_start, warm_start_names, out);
    return out;
  }

  MilpSolver settled_by = solver;
  const MilpAnswer answer =
      solver == MilpSolver::kHighs ? SolveWithHighs(model, start, milp, seconds)
      : solver == MilpSolver::kCbc
          ? SolveWithCbc(model, start, milp, seconds)
          : SolveWithCbcThenHighs(model, start, milp, seconds, settled_by);
  if (!answer.error.empty()) {
    return AlgorithmOutput::NoSchedule(Status::kError, answer.error);
  }
  if (answer.proven_infeasible) {
    return AlgorithmOutput::NoSchedule(
        Status::kInfeasible,
        fmt::format("{} proved that no schedule of its class ({}) fits the "
                    "budget (other schedules may)",
                    MilpSolverName(settled_by), schedule_class.name));
  }
  if (!answer.x) {
    if (standby) return *standby;
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout,
        fmt::format("{} found no schedule of its class within the time "
                    "limit; warm start: {}",
                    name, warm_start));
  }
  const double scale = static_cast<double>(model.cost_scale());
  const bool optimal = answer.optimal;
  const double objective = answer.objective;
  // The objective takes integer values, so a fractional bound rounds up;
  // at a proven optimum the solver's last bound may lag behind the
  // objective. Costs are not negative, so 0 bounds every objective.
  const double bound = optimal
                           ? objective
                           : std::max(0.0, std::isfinite(answer.bound)
                                               ? std::ceil(answer.bound - 1e-6)
                                               : 0.0);
  const std::span<const double> x(*answer.x);
  AlgorithmOutput out = AlgorithmOutput::Found(
      model.Extract(model.RoundR(x, 0.5), model.RoundS(x, 0.5)),
      fmt::format("{}; {} MILP cost {:.0f}, bound {:.0f}; warm start: {}",
                  optimal ? "optimal among " + schedule_class.name
                          : std::string("time limit before proving optimality"),
                  MilpSolverName(settled_by), objective * scale, bound * scale,
                  warm_start));
  if (!optimal) out.status = Status::kTimeout;
  out.optimal = optimal;
  out.staged_lower_bound_cost =
      static_cast<int64_t>(std::llround(bound)) * model.cost_scale();
  out.extra["mip_gap"] =
      objective > 0 ? std::max(0.0, (objective - bound) / objective) : 0.0;
  out.extra["milp_solver"] = settled_by == MilpSolver::kHighs ? "highs" : "cbc";
  AddModelDetails(staged_start, warm_start_names, out);
  return out;
}

std::vector<OptionField<StagedMilpOptions>> StagedMilpOptionFields() {
  return {
      ChoiceOption(&StagedMilpOptions::preprocess, "preprocess",
                   CbcPreprocess::kOff,
                   {{"auto", CbcPreprocess::kAuto},
                    {"on", CbcPreprocess::kOn},
                    {"off", CbcPreprocess::kOff}},
                   "CBC preprocessing (solver=cbc): off (default), on, or "
                   "auto (on up to 10000 columns); on has crashed CBC 2.10 in "
                   "CglPreProcess::postProcess when the time limit stopped "
                   "it"),
      IntOption(&StagedMilpOptions::cost_target, "cost_target", 0,
                "0 (default): minimize the cost; X > 0: answer with the warm "
                "start, without running the solver, when it costs at most X "
                "(not proven optimal)"),
      DoubleOption(&StagedMilpOptions::settle_nonzeros_per_second,
                   "settle_nonzeros_per_second", kSettleNonzerosPerSecond,
                   "where a warm start fits and the model has more nonzeros "
                   "than this x the seconds left, the MILP solver is not "
                   "run: the answer is the cheaper of the warm start and "
                   "the LP relaxation's roundings, with its bound "
                   "(default: the fastest rate the "
                   "solvers were measured to settle such models; 0: always "
                   "run it)"),
      IntOption(&StagedMilpOptions::threads, "threads", 1,
                "solver threads (the MILP solver's; moccasin's Gecode search "
                "too)",
                1)};
}

}  // namespace remat
