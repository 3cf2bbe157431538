#include "algorithms/warm_start.h"

#include <algorithm>

#include "harness/registry.h"
#include "harness/runner.h"
#include "harness/simulator.h"

namespace remat {

std::optional<Incumbent> BestHeuristicSchedule(
    const Graph& graph, int64_t budget_bytes, const Deadline& deadline,
    const std::vector<std::string>& names, double seconds_each,
    const std::function<std::optional<Schedule>(const Schedule&)>& transform) {
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
    if (!attempt.simulation || !attempt.simulation->valid) continue;
    std::optional<Schedule> schedule = *attempt.output.schedule;
    SimulationResult sim = *attempt.simulation;
    if (transform) {
      schedule = transform(*schedule);
      if (!schedule) continue;
      sim = Simulate(graph, *schedule);
    }
    if (!sim.valid || sim.peak_bytes > budget_bytes) continue;
    if (!best || sim.cost < best->cost) {
      best = Incumbent{std::move(*schedule), sim.cost, info->name};
    }
  }
  return best;
}

}  // namespace remat
