// checkmate_milp — Jain et al., "Checkmate: Breaking the Memory Wall with
// Optimal Tensor Rematerialization", MLSys 2020.
//
// The staged MILP of algorithms/checkmate_model.h solved by COIN-OR CBC in
// this process for a share of the time, then by HiGHS's executable in a
// child process (highs_process.h) unless CBC settled it (solver=auto, the
// default, chosen by measurement: results/solver_choice/cpu.md,
// docs/algorithms.md), or by either alone (the paper used Gurobi). Each stage
// computes one new node and may recompute earlier ones; the MILP picks what to
// recompute and what to keep between stages at least cost under the budget. It
// starts from the cheapest schedule the registered heuristics find, staged
// (CheckmateModel::Staged) in the order of its own first computes, which
// becomes the model's stage order, and stops at the request's deadline;
// CBC may overrun it during its root node, so the warm start is offered as
// the standby answer (StandbyAnswer) that the isolated process's watchdog
// gives instead (the CBC wiring is staged_milp.h, shared with moccasin).
// Where a warm-start heuristic's schedule fits but is outside the staged
// class, and the class has no schedule or a dearer one, that schedule is
// the answer (ClassAnswer), not optimal, with the class's bound kept.
// Where that start fits and the model has more nonzeros than the solvers
// were measured to settle in the time left (settle_nonzeros_per_second),
// no solver runs: the answer is the cheaper of the start and the roundings
// of the LP relaxation (checkmate_lp's, given the time the solver would
// have had), with the LP's bound.
// The result carries the solver's proven bound and gap; `optimal` means
// optimal among staged schedules only, so the bound is reported as
// staged_lower_bound_cost and never as a bound on other algorithms
// (exact_search tells what the staged class gives away), except where the
// start costs the base cost: it is then optimal among all schedules and
// the answer without a solver (BaseCostAnswer). The schedule is
// extracted stage by stage from R and S and simulated like every other.
#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/staged_milp.h"
#include "model/registry.h"

namespace remat {
namespace {

struct CheckmateMilpOptions {
  StagedMilpOptions milp;
  MilpSolver solver;
  CheckmateOptions checkmate;
};

const Options<CheckmateMilpOptions> kOptions(
    NestedOptions(&CheckmateMilpOptions::milp, StagedMilpOptionFields()),
    MilpSolverOption(&CheckmateMilpOptions::solver),
    NestedOptions(&CheckmateMilpOptions::checkmate,
                  CheckmateOptionFields("checkmate_milp",
                                        kExactStagedWarmStart, kMilpLimits)));

class CheckmateMilp : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const CheckmateMilpOptions options = kOptions.Read(request.params);
    if (auto refused =
            RefuseCheckmateRequest(graph, request, options.checkmate)) {
      return std::move(*refused);
    }
    // The staged class, and so the MILP's optimum, depends on the stage
    // order (BestStagedStart).
    StagedStart start = BestStagedStart(graph, request, options.checkmate);
    if (auto optimal = BaseCostAnswer(graph, start)) return std::move(*optimal);
    const ClassAnswer answer(graph, request, start,
                             MilpSolverName(options.solver));
    return answer.Answer(SolveStagedMilp(graph, request, options.checkmate,
                                         options.milp,
                                         {.name = "staged schedules"},
                                         std::move(start), options.solver));
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "checkmate_milp",
    .description = "Checkmate's staged MILP solved by COIN-OR CBC then "
                   "HiGHS (or either alone), warm-started from the best "
                   "heuristic (optimal among staged schedules)",
    .citation = "Jain et al., Checkmate: Breaking the Memory Wall with "
                "Optimal Tensor Rematerialization, MLSys 2020",
    .exact = true,
    .uses_budget = true,
    // CBC 2.10 crashed in CglPreProcess::postProcess and keeps static state.
    .isolate = true,
    .refuse =
        [](const Graph& graph, const SolveRequest& request) {
          return RefuseCheckmateRequest(
              graph, request, kOptions.Read(request.params).checkmate);
        },
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<CheckmateMilp>(); },
});

}  // namespace
}  // namespace remat
