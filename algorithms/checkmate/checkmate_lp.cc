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
// lowest peak, reported infeasible).
#include <fmt/format.h>

#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/common/candidate_pool.h"
#include "model/registry.h"

namespace remat {
namespace {

struct CheckmateLpOptions {
  double lp_fraction;
  int64_t random_roundings;
  int64_t seed;
  CheckmateOptions checkmate;
};

const Options<CheckmateLpOptions> kOptions(
    DoubleOption(&CheckmateLpOptions::lp_fraction, "lp_fraction", 0.9,
                 "budget fraction the rounded LP is solved at"),
    IntOption(&CheckmateLpOptions::random_roundings, "random_roundings", 32,
              "randomized roundings (each S kept with its LP probability) "
              "tried besides the thresholds"),
    IntOption(&CheckmateLpOptions::seed, "seed", 0,
              "seed of the randomized roundings"),
    NestedOptions(&CheckmateLpOptions::checkmate,
                  CheckmateOptionFields("checkmate_lp", kStagedHeuristics,
                                        kLpLimits)));

// Of the time left after the warm start: when the LP at the budget stops,
// and when the LP at lp_fraction of it stops. The rest is the roundings',
// so that some always remain: about 20-50 ms each on ResNet-18 and the
// U-Nets of the default corpus, so 5% of 10 s holds the 24 threshold
// roundings of the tighter LP, made first, the ones that fit most often.
// Solving the tighter LP first instead answered as often, but its LP at the
// budget, from the tighter one's basis, took up to 6 s more, and the LPs'
// other optimal vertices changed the answers at budgets where time was
// ample (docs/algorithms.md, "checkmate_lp").
constexpr double kLpShare = 0.8;
constexpr double kResolveShare = 0.95;

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
    // The LPs stop at their shares of the time left (kLpShare,
    // kResolveShare), so that roundings always remain to answer with:
    // without the shares the LPs could take all of the sweep's 10 s, on
    // ResNet-18 and the U-Nets of the default corpus under load, and the
    // answer was nothing (docs/algorithms.md, "checkmate_lp").
    // A deadline already passed (the warm start used it, under load or at
    // a short time limit) is a share of none, not of no limit
    // (Deadline::In reads 0 or less as never), and Clp reads a limit of 0
    // or less as none: the LP ran to its end, seconds past the limit, and
    // the isolated process was stopped with no answer.
    const double left = request.deadline.SecondsLeft();
    auto share = [&](double fraction) {
      return left >= 1e9 ? Deadline::Never()
                         : Deadline::In(std::max(fraction * left, 1e-9));
    };
    auto clp_seconds = [](const Deadline& deadline) {
      return std::clamp(deadline.SecondsLeft(), 1e-3, 1e9);
    };
    const Deadline lp_deadline = share(kLpShare);
    const Deadline resolve_deadline = share(kResolveShare);
    OsiClpSolverInterface lp;
    lp.messageHandler()->setLogLevel(0);
    lp.getModelPtr()->setMaximumWallSeconds(clp_seconds(lp_deadline));
    LoadRelaxation(model, lp);
    lp.initialSolve();
    if (lp.isProvenPrimalInfeasible()) {
      return AlgorithmOutput::NoSchedule(
          Status::kInfeasible,
          "the LP relaxation is infeasible: no staged schedule fits the "
          "budget (other schedules may)");
    }
    // Stopped at its share of the time, the LP's last iterate is still
    // rounded: every rounding is a valid schedule (RebuildR, Extract) and
    // the pool keeps it only if it fits; but its value bounds nothing.
    // Clp's status 3: stopped on its iteration or time limit (OsiClp's
    // isIterationLimitReached is false when it was the time).
    const bool lp_solved = lp.isProvenOptimal();
    if (!lp_solved && lp.getModelPtr()->status() != 3) {
      return AlgorithmOutput::NoSchedule(
          Status::kTimeout, "Clp did not solve the LP relaxation in time");
    }
    const double scale = static_cast<double>(model.cost_scale());
    const double lp_value = lp.getObjValue() * scale;
    std::vector<std::vector<double>> solutions = {std::vector<double>(
        lp.getColSolution(), lp.getColSolution() + model.num_cols())};

    if (lp_solved && !resolve_deadline.Expired()) {
      const double tight = model.ScaledBudget(
          static_cast<int64_t>(std::floor(options.lp_fraction * budget)));
      for (int row : model.budget_rows()) lp.setRowUpper(row, tight);
      lp.getModelPtr()->setMaximumWallSeconds(clp_seconds(resolve_deadline));
      lp.resolve();
      if (lp.isProvenOptimal()) {
        solutions.insert(
            solutions.begin(),
            std::vector<double>(lp.getColSolution(),
                                lp.getColSolution() + model.num_cols()));
      }
    }

    // A rounding need not be a valid schedule; the pool skips those.
    CandidatePool pool(graph, budget);
    // Also restaged (CheckmateModel::Staged): a rounded S keeps values
    // into stages that do not read them, which the restaged schedule
    // drops (skip_connections.json at its NoRemat peak: 20 bytes rounded,
    // 18 restaged).
    auto consider = [&](Schedule schedule) {
      std::optional<Schedule> restaged = model.Staged(schedule);
      pool.Offer(std::move(schedule));
      if (restaged) pool.Offer(std::move(*restaged));
    };
    // Two-phase deterministic rounding: S at each threshold, then the
    // cheapest R for it; and the solution's own R and S where they agree
    // (an integral LP solution is then extracted as it is).
    for (const std::vector<double>& x : solutions) {
      for (double threshold :
           {0.0, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99}) {
        // One rounding at least, past the deadline too (Clp can overrun its
        // limit; the watchdog's grace covers the few milliseconds).
        if (request.deadline.Expired() && !pool.empty()) break;
        const auto s = model.RoundS(x, threshold);
        consider(model.Extract(model.RebuildR(s), s));
      }
      Schedule own = model.Extract(model.RoundR(x, 0.5), model.RoundS(x, 0.5));
      if (model.PointOf(own)) consider(std::move(own));
    }
    // Randomized rounding of the solution at the reduced budget (else at
    // the budget), with a fixed seed so that results repeat.
    std::mt19937_64 rng(static_cast<uint64_t>(options.seed));
    const int64_t samples = options.random_roundings;
    for (int64_t i = 0; i < samples && !request.deadline.Expired(); ++i) {
      const auto s = model.SampleS(solutions.front(), rng);
      consider(model.Extract(model.RebuildR(s), s));
    }
    const bool fits = pool.fits();
    AlgorithmOutput out =
        pool.empty() ? AlgorithmOutput::NoSchedule(
                           Status::kTimeout, "deadline before any rounding")
                     : AlgorithmOutput::Found(pool.TakeBest().schedule);
    out.message = fmt::format(
        "{}; best of {} roundings{}",
        lp_solved ? fmt::format("LP value {:.1f} at the budget", lp_value)
                  : fmt::format("LP stopped at its share of the time limit "
                                "({:.1f} s), its last iterate rounded",
                                std::max(kLpShare * left, 0.0)),
        pool.offered(), fits ? "" : " (none fits the budget)");
    if (lp_solved) {
      out.staged_lower_bound_cost =
          static_cast<int64_t>(std::ceil(lp_value / scale - 1e-6)) *
          model.cost_scale();
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
