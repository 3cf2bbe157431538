// The schedule generator of TwRemat (algorithms/twremat.cc), exposed for
// tests and benchmarks that want it without the knob search.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/twremat/separator_hierarchy.h"
#include "model/algorithm.h"
#include "model/graph.h"
#include "model/schedule.h"

namespace remat {

struct TwRematOptions {
  // Recursion stops at this hierarchy depth and computes the rest directly
  // (0: NoRemat); -1: no limit.
  int32_t max_depth = -1;
  // The authors' memory-limit heuristic: a call computes its part directly
  // when that fits this many bytes (with what is live already); 0: off.
  int64_t memory_limit = 0;
  // The whole schedule (computes and frees) may hold at most this many events.
  int64_t max_events = 100'000'000;
};

struct TwRematSchedule {
  // kFeasible with a schedule, or kTooLarge / kTimeout without one.
  Status status = Status::kFeasible;
  Schedule schedule;
  std::string message;
};

// The recursion from the root with the targets, then the post-pass.
TwRematSchedule GenerateTwRemat(const Graph& graph,
                                const SeparatorHierarchy& hierarchy,
                                const TwRematOptions& options,
                                const Deadline& deadline = Deadline::Never());

}  // namespace remat
