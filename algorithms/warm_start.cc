#include "algorithms/warm_start.h"

#include <algorithm>

#include "harness/registry.h"
#include "harness/runner.h"

namespace remat {

std::optional<Incumbent> BestHeuristicSchedule(
    const Graph& graph, int64_t budget_bytes, const Deadline& deadline,
    const std::vector<std::string>& names, double seconds_each,
    const std::function<bool(const Schedule&)>& accept) {
  std::vector<const AlgorithmInfo*> candidates;
  if (names.empty()) {
    for (const AlgorithmInfo* info : AllAlgorithms()) {
      if (!info->exact) candidates.push_back(info);
    }
  } else {
    for (const std::string& name : names) {
      candidates.push_back(&FindAlgorithm(name));
    }
  }
  std::optional<Incumbent> best;
  for (const AlgorithmInfo* info : candidates) {
    const double seconds = std::min(seconds_each, deadline.SecondsLeft());
    // RunAlgorithm reads a non-positive timeout as "none".
    if (seconds < 1e-3) break;
    const Attempt attempt =
        RunAlgorithm(graph, *info, Params::Parse({}, info->params, info->name),
                     budget_bytes, seconds);
    if (!attempt.simulation || !attempt.simulation->valid ||
        attempt.simulation->peak_bytes > budget_bytes ||
        (accept && !accept(*attempt.output.schedule))) {
      continue;
    }
    if (!best || attempt.simulation->cost < best->cost) {
      best = Incumbent{*attempt.output.schedule, attempt.simulation->cost,
                       info->name};
    }
  }
  return best;
}

}  // namespace remat
