// Moccasin's retention-interval model as a constraint program on Gecode,
// the `solver=gecode` of the moccasin algorithm (moccasin.cc says which
// solver is the default and why).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "harness/algorithm.h"
#include "harness/graph.h"

namespace remat {

// Position (t, k) of the interval model: stage by stage, node by node
// (k <= t, stage indices).
inline int64_t IntervalPosition(int64_t t, int64_t k) {
  return t * (t + 1) / 2 + k;
}

// Each value's retention intervals [start, end] of positions, by stage
// index: a solution of the interval model.
using RetentionIntervals =
    std::vector<std::vector<std::pair<int64_t, int64_t>>>;

// The schedule of `intervals`: position by position, the compute of each
// interval starting there, then the free of each ending there. Not through
// the MILP's R and S (CheckmateModel::Extract), which frees a value only
// after a compute that reads it: an interval can end at a position whose
// reader is not computed there (held by another interval), and the memory
// the model counts from that position on is the free's. Throws
// std::runtime_error for an interval off the grid.
Schedule ScheduleOfIntervals(const CheckmateModel& model,
                             const RetentionIntervals& intervals);

struct CpAnswer {
  AlgorithmOutput output;
  // The search ended on exact sizes: `output` is optimal in the class, or
  // proves that none of the class fits.
  bool settled = false;
};

// Searches the staged schedules in `start`'s order that compute each value
// at most `computes` times for one cheaper than start.incumbent until
// `deadline`, and makes the cheapest found start.incumbent.
// `threads`: Gecode's search threads.
CpAnswer SolveMoccasinCp(const Graph& graph, const SolveRequest& request,
                         int computes, int threads, StagedStart& start,
                         const Deadline& deadline);

}  // namespace remat
