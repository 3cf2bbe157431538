// Moccasin's retention-interval model as a constraint program on Gecode,
// the `solver=gecode` of the moccasin algorithm (moccasin.cc says which
// solver is the default and why).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "model/algorithm.h"
#include "model/graph.h"
#include "model/schedule.h"

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

// The retention intervals of `schedule` in `model`'s positions: each
// compute of a value starts one, at its position in the stage the schedule
// has reached, and it ends at its last read (or its start if nothing reads
// it), the latest position the model can end it at without holding it over
// a compute the schedule does not: the intervals of the schedule with each
// free moved to right after the last read, a value left live at the end
// included (InsertFrees of its computes). nullopt when the schedule is not
// in the class: a first compute out of the stage order, a stage that
// computes a node twice or out of order, or a transfer.
std::optional<RetentionIntervals> IntervalsOf(const CheckmateModel& model,
                                              std::span<const Event> schedule);

// Whether the interval model (its cumulative memory constraint among the
// rest) admits exactly `intervals` within `budget_bytes`: what the solver
// would accept as a solution. Throws std::invalid_argument where the model
// would round the graph's sizes.
bool IntervalModelAdmits(const Graph& graph, const CheckmateModel& model,
                         const RetentionIntervals& intervals,
                         int64_t budget_bytes);

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
