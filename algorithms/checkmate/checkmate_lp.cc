// checkmate_lp — the LP relaxation with deterministic threshold rounding
// of Jain et al., "Checkmate: Breaking the Memory Wall with Optimal Tensor
// Rematerialization", MLSys 2020 (section 5, "approximation").
//
// The staged model of algorithms/checkmate_model.h with its integrality
// dropped is solved by Clp, first at the budget (its value bounds every
// staged schedule: staged_lower_bound_cost) and then at a fraction of it
// (`lp_fraction`, 0.9 as in the paper) to leave room for rounding. The
// paper's two-phase deterministic rounding: the keep decisions S of both
// solutions rounded at several thresholds, and for each the cheapest R
// consistent with S rebuilt; where a solution's own R and S form a valid
// point of the model (an integral solution), that too. Then its randomized
// rounding: `random_roundings` samples of S, each entry kept with its LP
// value as probability (seeded, so results repeat). Every rounding is
// extracted and offered to the candidate pool (candidate_pool.h): the
// cheapest within the budget is kept (or, when none fits, the one with the
// lowest peak, reported infeasible). The LP and its roundings are
// lp_rounding.h's, which the staged MILP shares.
#include <fmt/format.h>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/lp_rounding.h"
#include "model/registry.h"

namespace remat {
namespace {

struct CheckmateLpOptions {
  double lp_fraction;
  int64_t random_roundings;
  int64_t seed;
  CheckmateOptions checkmate;
};

constexpr LpRoundingOptions kRoundingDefaults;
const Options<CheckmateLpOptions> kOptions(
    DoubleOption(&CheckmateLpOptions::lp_fraction, "lp_fraction",
                 kRoundingDefaults.lp_fraction,
                 "budget fraction the rounded LP is solved at"),
    IntOption(&CheckmateLpOptions::random_roundings, "random_roundings",
              kRoundingDefaults.random_roundings,
              "randomized roundings (each S kept with its LP probability) "
              "tried besides the thresholds"),
    IntOption(&CheckmateLpOptions::seed, "seed", kRoundingDefaults.seed,
              "seed of the randomized roundings"),
    NestedOptions(&CheckmateLpOptions::checkmate,
                  CheckmateOptionFields("checkmate_lp", kStagedHeuristics,
                                        kLpLimits)));

class CheckmateLp : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const CheckmateLpOptions options = kOptions.Read(request.params);
    const int64_t budget = request.budget_bytes;
    if (auto refused =
            RefuseCheckmateRequest(graph, request, options.checkmate)) {
      return std::move(*refused);
    }
    const CheckmateModel model =
        options.checkmate.stage_order == StageOrder::kGraph
            ? CheckmateModel(graph, budget)
            : BestStagedStart(graph, request, options.checkmate).model;
    RoundedLp rounded = RoundRelaxation(
        graph, model, budget, request.deadline,
        {.lp_fraction = options.lp_fraction,
         .random_roundings = options.random_roundings,
         .seed = options.seed});
    if (rounded.infeasible) {
      return AlgorithmOutput::NoSchedule(
          Status::kInfeasible,
          "the LP relaxation is infeasible: no staged schedule fits the "
          "budget (other schedules may)");
    }
    if (!rounded.rounded) {
      return AlgorithmOutput::NoSchedule(
          Status::kTimeout, "Clp did not solve the LP relaxation in time");
    }
    AlgorithmOutput out =
        rounded.best ? AlgorithmOutput::Found(std::move(rounded.best->schedule))
                     : AlgorithmOutput::NoSchedule(
                           Status::kTimeout, "deadline before any rounding");
    out.message = fmt::format(
        "{}; best of {} roundings{}",
        rounded.lp_solved
            ? fmt::format("LP value {:.1f} at the budget", rounded.lp_value)
            : fmt::format("LP stopped at its share of the time limit "
                          "({:.1f} s), its last iterate rounded",
                          rounded.lp_seconds),
        rounded.offered, rounded.fits ? "" : " (none fits the budget)");
    if (rounded.lp_solved) {
      out.staged_lower_bound_cost = StagedBoundOf(model, rounded.lp_value);
    }
    out.extra["warm_start"] = WarmStartText(options.checkmate.warm_start);
    return out;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "checkmate_lp",
    .description = "Checkmate's LP relaxation with threshold rounding of the "
                   "keep decisions",
    .citation = "Jain et al., Checkmate: Breaking the Memory Wall with "
                "Optimal Tensor Rematerialization, MLSys 2020",
    .exact = false,
    .uses_budget = true,
    // Clp's presolve (ClpSimplex::tightenPrimalBounds) ignores its time
    // limit: on resnet:depth=152 with max_nodes=2000 and --timeout 20 it
    // ran past 100 s at 3.4 GB. In a child process the watchdog answers
    // at the limit plus its grace, and the parent kills it after that.
    .isolate = true,
    .refuse =
        [](const Graph& graph, const SolveRequest& request) {
          return RefuseCheckmateRequest(
              graph, request, kOptions.Read(request.params).checkmate);
        },
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<CheckmateLp>(); },
});

}  // namespace
}  // namespace remat
