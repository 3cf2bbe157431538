// Runs the warm-start algorithms through the runner, so that their schedules
// are judged by the simulator like every other, and offers each to the
// candidate pool (warm_start.h).
#include "algorithms/common/warm_start.h"

#include <algorithm>

#include "algorithms/common/candidate_pool.h"
#include "harness/registry.h"
#include "harness/runner.h"

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

std::optional<Incumbent> BestWarmStart(
    const Graph& graph, int64_t budget_bytes, const Deadline& deadline,
    const Params& params, double seconds_each,
    const std::function<std::optional<Schedule>(const Schedule&)>& transform) {
  CandidatePool pool(graph, budget_bytes);
  for (const std::string& name : params.List("warm_start")) {
    const AlgorithmInfo& info = FindAlgorithm(name);
    const double seconds = std::min(seconds_each, deadline.SecondsLeft());
    // RunAlgorithm reads a non-positive timeout as "none".
    if (seconds < 1e-3) break;
    const Attempt attempt =
        RunAlgorithm(graph, info, Params::Parse({}, info.params, info.name),
                     budget_bytes, seconds);
    if (!attempt.simulation || !attempt.simulation->valid) continue;
    if (!transform) {
      pool.Offer(*attempt.output.schedule, *attempt.simulation, info.name);
    } else if (std::optional<Schedule> transformed =
                   transform(*attempt.output.schedule)) {
      pool.Offer(std::move(*transformed), info.name);
    }
  }
  if (!pool.fits()) return std::nullopt;
  CandidatePool::Candidate best = pool.TakeBest();
  return Incumbent{std::move(best.schedule), best.simulation.cost,
                   best.note.get<std::string>()};
}

}  // namespace remat
