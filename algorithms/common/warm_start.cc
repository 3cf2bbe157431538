// Runs the warm-start algorithms through the request's sub-solver, so that
// their schedules are judged by the simulator like every other, and offers
// each to the candidate pool (warm_start.h).
#include "algorithms/common/warm_start.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "algorithms/common/candidate_pool.h"
#include "model/registry.h"

namespace remat {

ParamSpec WarmStartParam(const std::string& owner,
                         const std::string& default_names) {
  return {.name = "warm_start",
          .type = ParamSpec::Type::kList,
          .default_value = default_names,
          .description =
              "algorithms whose cheapest schedule within the "
              "budget is the warm start, '+'-separated, each run "
              "with its defaults (ties: the lower peak, then the "
              "earlier)",
          .check_item = [owner](const std::string& name) -> std::string {
            if (name == owner) return "an algorithm cannot warm-start itself";
            for (const AlgorithmInfo* info : AllAlgorithms()) {
              if (info->name == name) return {};
            }
            return "not a registered algorithm (remat list)";
          }};
}

std::string WarmStartText(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, "+"));
}

std::optional<Incumbent> BestWarmStart(
    const Graph& graph, const SolveRequest& request,
    const std::vector<std::string>& names, double seconds_each,
    const std::function<std::optional<Schedule>(const Schedule&)>& transform,
    const DroppedWarmStart& dropped) {
  CandidatePool pool(graph, request.budget_bytes);
  // The best start so far is what an isolated solve answers if a later
  // warm start overruns the deadline (an isolated one's process start under
  // load): without it, a solve whose dtr start fitted answered nothing.
  // Offered when it changes (each name runs once).
  std::string stood;
  const auto stand_by = [&] {
    if (!request.standby || !pool.fits()) return;
    const std::string best = pool.best().note.get<std::string>();
    if (best == stood) return;
    stood = best;
    AlgorithmOutput standby = AlgorithmOutput::Found(
        pool.best().schedule,
        fmt::format("stopped during the warm start; the best so far: {}",
                    best));
    standby.status = Status::kTimeout;
    request.standby->Offer(std::move(standby));
  };
  for (const std::string& name : names) {
    const double seconds =
        std::min(seconds_each, request.deadline.SecondsLeft());
    // A sub-solve reads a non-positive time as "no limit".
    if (seconds < 1e-3) break;
    const SubSolution solved = SubSolverOf(request).Solve(
        graph, name, {}, request.budget_bytes, seconds);
    if (!solved.simulation || !solved.simulation->valid) continue;
    if (!transform) {
      pool.Offer(*solved.output.schedule, *solved.simulation, name);
      stand_by();
      continue;
    }
    const bool fits = pool.Fits(*solved.simulation);
    const auto fitting = [&] {
      return Incumbent{*solved.output.schedule, solved.simulation->cost, name};
    };
    if (std::optional<Schedule> transformed =
            transform(*solved.output.schedule)) {
      if (!pool.Offer(std::move(*transformed), name) && fits && dropped) {
        dropped(fitting(), true);
      }
    } else if (fits && dropped) {
      dropped(fitting(), false);
    }
    stand_by();
  }
  if (!pool.fits()) return std::nullopt;
  CandidatePool::Candidate best = pool.TakeBest();
  return Incumbent{std::move(best.schedule), best.simulation.cost,
                   best.note.get<std::string>()};
}

}  // namespace remat
