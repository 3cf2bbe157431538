// The segment schedule shared by Chen et al.'s methods and revolve
// (docs/algorithms.md, "Shared building blocks", "Chen et al. 2016" and
// "revolve").
//
// Checkpoints x_1..x_K (forward values in topological order) cut the needed
// forward values into K + 1 segments: step j computes segment S_j, the
// values after x_(j-1) up to and including x_j (x_0 is the graph's input,
// which costs nothing); S_(K+1) ends with the loss. Each backward (and other
// non-forward) node belongs to one stage; stage j runs when x_(j-1) is at
// hand and recomputes what it reads of S_j. A backward node of a checkpoint
// x_j that reads nothing before x_j (an op whose backward reads its output,
// as on the chain) joins stage j + 1, where x_j is the segment's input:
// that is what makes revolve optimal on chains.
//
// The builder turns checkpoint decisions into a compute sequence: Ensure()
// recomputes a forward value from the values at hand, RunStage() runs a
// stage, Hold() / Release() pin checkpoints. Everything it drops is freed by
// the shared liveness pass (InsertFrees), so no algorithm writes free logic.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/checkpointing/checkpoint_candidates.h"
#include "model/algorithm.h"
#include "model/graph.h"
#include "model/options.h"
#include "model/schedule.h"

namespace remat {

class SegmentChain {
 public:
  // `checkpoints`: needed forward values in topological order.
  SegmentChain(const Graph& graph, const CheckpointGraph& fwd,
               std::vector<NodeId> checkpoints);

  int32_t num_checkpoints() const {
    return static_cast<int32_t>(checkpoints_.size());
  }
  int32_t num_steps() const { return num_checkpoints() + 1; }
  // x_j for j in 1..K.
  NodeId checkpoint(int32_t j) const { return checkpoints_[j - 1]; }
  const std::vector<NodeId>& checkpoints() const { return checkpoints_; }
  // 1..K+1 for needed forward values, 0 for other nodes.
  int32_t segment_of(NodeId v) const { return segment_[v]; }
  // Stage j (1..K+1): its backward and other nodes, and the forward targets
  // of S_j, in topological order.
  std::span<const NodeId> stage(int32_t j) const {
    return {stage_nodes_.data() + stage_offsets_[j],
            stage_nodes_.data() + stage_offsets_[j + 1]};
  }
  const Graph& graph() const { return graph_; }
  const CheckpointGraph& forward_graph() const { return fwd_; }

 private:
  const Graph& graph_;
  const CheckpointGraph& fwd_;
  std::vector<NodeId> checkpoints_;
  std::vector<int32_t> segment_;
  std::vector<int64_t> stage_offsets_;
  std::vector<NodeId> stage_nodes_;
};

// Why a build stopped early, if it did.
struct BuildLimits {
  int64_t max_computes = 0;
  Deadline deadline = Deadline::Never();
};

// The `max_computes` option every segment algorithm offers, and the limits
// of a request with that option.
template <typename T>
OptionField<T> MaxComputesOption(int64_t T::*member) {
  return IntOption(member, "max_computes", 20000000,
                   "refuse (too_large) schedules with more computes than "
                   "this",
                   1);
}
BuildLimits LimitsOf(const SolveRequest& request, int64_t max_computes);

// A built schedule, or why there is none (kTooLarge / kTimeout, message).
struct BuildResult {
  std::optional<Schedule> schedule;
  Status status = Status::kFeasible;
  std::string message;
};

class ScheduleBuilder {
 public:
  ScheduleBuilder(const SegmentChain& chain, BuildLimits limits);

  // Computes forward value v and whatever of its ancestors is not at hand,
  // in topological order; they stay at hand until DropUnheld().
  void Ensure(NodeId v);
  void Hold(NodeId v) { held_[v] = 1; }
  // Unpins v and drops it.
  void Release(NodeId v);
  // Runs stage j, recomputing the forward values it reads, then drops
  // every forward value not held.
  void RunStage(int32_t j);
  // Drops every forward value at hand that is not held, except those of
  // segment `keep_segment`.
  void DropUnheld(int32_t keep_segment = 0);
  // From now on RunStage(j) keeps a value at hand after stage j while a
  // later stage may still need it (it reads the value, or must recompute a
  // value made from it), so that the backward pass recomputes each forward
  // value at most once. Call after the checkpoints are held.
  void RecomputeOnce();

  // Set once the limits stopped the build: kTooLarge or kTimeout. After
  // that every call does nothing.
  std::optional<Status> stopped() const { return stopped_; }
  int64_t num_computes() const {
    return static_cast<int64_t>(computes_.size());
  }
  // The compute sequence with frees inserted by the liveness pass, or why
  // the limits stopped the build.
  BuildResult Finish() const;

 private:
  void Compute(NodeId v);
  // RecomputeOnce()'s drop at the end of stage j.
  void DropUnneeded(int32_t j);

  const SegmentChain& chain_;
  const Graph& graph_;
  BuildLimits limits_;
  std::optional<Status> stopped_;
  std::vector<NodeId> computes_;
  std::vector<uint8_t> at_hand_, held_;
  std::vector<NodeId> working_;  // at hand and not held (or kept by a drop)
  std::vector<int32_t> mark_;    // per node: Ensure() call that saw it
  int32_t ensure_calls_ = 0;
  std::vector<NodeId> stack_, cone_;
  // RecomputeOnce() only, per forward value: the last stage to run (the
  // lowest index) that reads it directly, and the last that reads it or a
  // value computed from it through values not held (kNoStage: none).
  bool recompute_once_ = false;
  std::vector<int32_t> last_read_, last_need_;
};

// Chen et al.'s schedule: one forward pass keeping the checkpoints and the
// last segment, then each stage in reverse, recomputing its segment from
// the checkpoint before it. With `recompute_once` (the speed mode) a value
// recomputed for one stage stays until no later stage needs it: each
// forward value is computed at most twice, as MXNet's mirror recomputes
// each dropped value once, at the price of holding values that a skip
// connection carries across stages.
BuildResult ChenSchedule(const SegmentChain& chain, BuildLimits limits,
                         bool recompute_once = false);

// Nested reversal of the chain of steps (revolve, Chen's recursive
// variant). `split(length, slots)` says how many steps to advance before
// placing the next checkpoint when `length` > 1 steps are to be reversed
// with `slots` checkpoint slots (one of them holding the start); 0 means
// "place none: recompute every step from the start". Starts with `slots`.
using SplitRule = std::function<int32_t(int32_t length, int64_t slots)>;
BuildResult NestedSchedule(const SegmentChain& chain, int64_t slots,
                           const SplitRule& split, BuildLimits limits);

}  // namespace remat
