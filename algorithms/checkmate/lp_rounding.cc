// Checkmate's LP relaxation and its roundings (lp_rounding.h).
#include "algorithms/checkmate/lp_rounding.h"

#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace remat {
namespace {

// Of the time left: when the LP at the budget stops, and when the LP at
// lp_fraction of it stops. The rest is the roundings', so that some always
// remain: about 20-50 ms each on ResNet-18 and the U-Nets of the default
// corpus, so 5% of 10 s holds the 24 threshold roundings of the tighter
// LP, made first, the ones that fit most often. Without the shares the LPs
// could take all of the sweep's 10 s on those graphs under load, and the
// answer was nothing. Solving the tighter LP first instead answered as
// often, but its LP at the budget, from the tighter one's basis, took up
// to 6 s more, and the LPs' other optimal vertices changed the answers at
// budgets where time was ample (docs/algorithms.md, "checkmate_lp").
constexpr double kLpShare = 0.8;
constexpr double kResolveShare = 0.95;

}  // namespace

int64_t StagedBoundOf(const CheckmateModel& model, double lp_value) {
  const double scale = static_cast<double>(model.cost_scale());
  return static_cast<int64_t>(std::ceil(lp_value / scale - 1e-6)) *
         model.cost_scale();
}

RoundedLp RoundRelaxation(const Graph& graph, const CheckmateModel& model,
                          int64_t budget_bytes, const Deadline& deadline,
                          const LpRoundingOptions& options) {
  // A deadline already passed (a warm start used it, under load or at a
  // short time limit) is a share of none, not of no limit (Deadline::In
  // reads 0 or less as never), and Clp reads a limit of 0 or less as
  // none: the LP ran to its end, seconds past the limit.
  const double left = deadline.SecondsLeft();
  auto share = [&](double fraction) {
    return left >= 1e9 ? Deadline::Never()
                       : Deadline::In(std::max(fraction * left, 1e-9));
  };
  auto clp_seconds = [](const Deadline& d) {
    return std::clamp(d.SecondsLeft(), 1e-3, 1e9);
  };
  const Deadline lp_deadline = share(kLpShare);
  const Deadline resolve_deadline = share(kResolveShare);
  RoundedLp out;
  out.lp_seconds = std::max(kLpShare * left, 0.0);
  OsiClpSolverInterface lp;
  lp.messageHandler()->setLogLevel(0);
  lp.getModelPtr()->setMaximumWallSeconds(clp_seconds(lp_deadline));
  LoadRelaxation(model, lp);
  lp.initialSolve();
  if (lp.isProvenPrimalInfeasible()) {
    out.infeasible = true;
    return out;
  }
  // Stopped at its share of the time, the LP's last iterate is still
  // rounded: every rounding is a valid schedule (RebuildR, Extract) and
  // the pool keeps it only if it fits; but its value bounds nothing.
  // Clp's status 3: stopped on its iteration or time limit (OsiClp's
  // isIterationLimitReached is false when it was the time).
  out.lp_solved = lp.isProvenOptimal();
  if (!out.lp_solved && lp.getModelPtr()->status() != 3) return out;
  out.rounded = true;
  out.lp_value = lp.getObjValue() * static_cast<double>(model.cost_scale());
  std::vector<std::vector<double>> solutions = {std::vector<double>(
      lp.getColSolution(), lp.getColSolution() + model.num_cols())};

  if (out.lp_solved && !resolve_deadline.Expired()) {
    const double tight = model.ScaledBudget(
        static_cast<int64_t>(std::floor(options.lp_fraction * budget_bytes)));
    for (int row : model.budget_rows()) lp.setRowUpper(row, tight);
    lp.getModelPtr()->setMaximumWallSeconds(clp_seconds(resolve_deadline));
    lp.resolve();
    if (lp.isProvenOptimal()) {
      solutions.insert(solutions.begin(),
                       std::vector<double>(
                           lp.getColSolution(),
                           lp.getColSolution() + model.num_cols()));
    }
  }

  // A rounding need not be a valid schedule; the pool skips those.
  CandidatePool pool(graph, budget_bytes);
  // Also restaged (CheckmateModel::Staged): a rounded S keeps values into
  // stages that do not read them, which the restaged schedule drops
  // (skip_connections.json at its NoRemat peak: 20 bytes rounded, 18
  // restaged).
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
      if (deadline.Expired() && !pool.empty()) break;
      const auto s = model.RoundS(x, threshold);
      consider(model.Extract(model.RebuildR(s), s));
    }
    Schedule own = model.Extract(model.RoundR(x, 0.5), model.RoundS(x, 0.5));
    if (model.PointOf(own)) consider(std::move(own));
  }
  // Randomized rounding of the solution at the reduced budget (else at the
  // budget), with a fixed seed so that results repeat.
  std::mt19937_64 rng(static_cast<uint64_t>(options.seed));
  for (int64_t i = 0; i < options.random_roundings && !deadline.Expired();
       ++i) {
    const auto s = model.SampleS(solutions.front(), rng);
    consider(model.Extract(model.RebuildR(s), s));
  }
  out.offered = pool.offered();
  out.fits = pool.fits();
  if (!pool.empty()) out.best = pool.TakeBest();
  return out;
}

}  // namespace remat
