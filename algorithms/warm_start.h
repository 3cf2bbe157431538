// The cheapest schedule other registered algorithms find within a budget:
// the incumbent that the exact methods start from (exact_search prunes with
// its cost, checkmate_milp hands it to CBC as a MIP start).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/algorithm.h"
#include "harness/graph.h"
#include "harness/schedule.h"

namespace remat {

struct Incumbent {
  Schedule schedule;
  int64_t cost = 0;  // as simulated
  std::string algorithm;
};

// Runs each named algorithm (every registered heuristic when `names` is
// empty) with its default parameters, each for at most `seconds_each` and
// never past `deadline`, passes each valid schedule through `transform`
// (if given; nullopt drops it) and returns the cheapest result that is
// valid and whose simulated peak fits `budget_bytes`. Ties go to the
// earlier name, so the answer is deterministic.
std::optional<Incumbent> BestHeuristicSchedule(
    const Graph& graph, int64_t budget_bytes, const Deadline& deadline,
    const std::vector<std::string>& names, double seconds_each,
    const std::function<std::optional<Schedule>(const Schedule&)>& transform =
        {});

}  // namespace remat
