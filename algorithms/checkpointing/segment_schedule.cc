// The segment schedule shared by Chen et al.'s methods and revolve: the
// forward pass keeping only checkpoints, then each segment recomputed and
// differentiated from its checkpoint, last segment first (segment_schedule.h).
#include "algorithms/checkpointing/segment_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "model/liveness.h"

namespace remat {

SegmentChain::SegmentChain(const Graph& graph, const CheckpointGraph& fwd,
                           std::vector<NodeId> checkpoints)
    : graph_(graph), fwd_(fwd), checkpoints_(std::move(checkpoints)) {
  const int32_t n = graph.num_nodes();
  const int32_t last = num_steps();
  segment_.assign(n, 0);
  std::vector<uint8_t> is_checkpoint(n, 0);
  for (NodeId x : checkpoints_) is_checkpoint[x] = 1;
  int32_t current = 1;
  for (NodeId v : fwd.forward) {
    segment_[v] = current;
    if (is_checkpoint[v]) ++current;
  }
  const auto& is_forward = fwd.split.is_forward;
  std::vector<int32_t> stage(n, 0);
  for (NodeId v : graph.topological_order()) {
    if (!fwd.needed[v]) continue;
    if (is_forward[v]) {
      if (graph.is_target(v)) stage[v] = segment_[v];
      continue;
    }
    int32_t rule = 0;
    const NodeId f = graph.grad_of(v);
    if (f != kNoNode && segment_[f] > 0) {
      rule = segment_[f];
      if (is_checkpoint[f]) {
        bool reads_only_later = true;
        for (NodeId u : graph.inputs(v)) {
          if (is_forward[u] && u != f && segment_[u] <= segment_[f]) {
            reads_only_later = false;
          }
        }
        if (reads_only_later) ++rule;
      }
    } else {
      for (NodeId u : graph.inputs(v)) {
        if (is_forward[u]) rule = std::max(rule, segment_[u]);
      }
      if (rule == 0) rule = last;
    }
    // Stages run from last to first, so a node's non-forward inputs must
    // sit in its stage or a later one.
    for (NodeId u : graph.inputs(v)) {
      if (!is_forward[u]) rule = std::min(rule, stage[u]);
    }
    stage[v] = rule;
  }
  stage_offsets_.assign(last + 2, 0);
  for (NodeId v = 0; v < n; ++v) {
    if (stage[v] > 0) ++stage_offsets_[stage[v] + 1];
  }
  for (int32_t j = 0; j <= last; ++j) {
    stage_offsets_[j + 1] += stage_offsets_[j];
  }
  stage_nodes_.resize(stage_offsets_[last + 1]);
  std::vector<int64_t> fill(stage_offsets_.begin(), stage_offsets_.end() - 1);
  for (NodeId v : graph.topological_order()) {
    if (stage[v] > 0) stage_nodes_[fill[stage[v]]++] = v;
  }
}

BuildLimits LimitsOf(const SolveRequest& request, int64_t max_computes) {
  return {.max_computes = max_computes, .deadline = request.deadline};
}

ScheduleBuilder::ScheduleBuilder(const SegmentChain& chain, BuildLimits limits)
    : chain_(chain), graph_(chain.graph()), limits_(limits) {
  const int32_t n = graph_.num_nodes();
  at_hand_.assign(n, 0);
  held_.assign(n, 0);
  mark_.assign(n, 0);
}

void ScheduleBuilder::Compute(NodeId v) {
  if (num_computes() >= limits_.max_computes) {
    stopped_ = Status::kTooLarge;
    return;
  }
  // Checking the clock every compute would dominate short builds.
  if ((computes_.size() & 4095) == 0 && limits_.deadline.Expired()) {
    stopped_ = Status::kTimeout;
    return;
  }
  computes_.push_back(v);
}

void ScheduleBuilder::Ensure(NodeId v) {
  if (stopped_ || at_hand_[v]) return;
  const int32_t call = ++ensure_calls_;
  cone_.clear();
  stack_.assign(1, v);
  mark_[v] = call;
  while (!stack_.empty()) {
    NodeId u = stack_.back();
    stack_.pop_back();
    cone_.push_back(u);
    for (NodeId w : graph_.inputs(u)) {
      if (!at_hand_[w] && mark_[w] != call) {
        mark_[w] = call;
        stack_.push_back(w);
      }
    }
  }
  std::sort(cone_.begin(), cone_.end(), [&](NodeId a, NodeId b) {
    return graph_.topo_rank(a) < graph_.topo_rank(b);
  });
  for (NodeId u : cone_) {
    Compute(u);
    if (stopped_) return;
    at_hand_[u] = 1;
    working_.push_back(u);
  }
}

void ScheduleBuilder::Release(NodeId v) {
  held_[v] = 0;
  at_hand_[v] = 0;
}

namespace {
constexpr int32_t kNoStage = std::numeric_limits<int32_t>::max();
}  // namespace

void ScheduleBuilder::RecomputeOnce() {
  const auto& is_forward = chain_.forward_graph().split.is_forward;
  const int32_t n = graph_.num_nodes();
  recompute_once_ = true;
  last_read_.assign(n, kNoStage);
  // Stages run from the last to the first, so the last to read a value is
  // the one with the lowest index.
  for (int32_t j = chain_.num_steps(); j >= 1; --j) {
    for (NodeId v : chain_.stage(j)) {
      if (is_forward[v]) {
        last_read_[v] = std::min(last_read_[v], j);
        continue;
      }
      for (NodeId u : graph_.inputs(v)) {
        if (is_forward[u]) last_read_[u] = std::min(last_read_[u], j);
      }
    }
  }
  // Ensure() recomputes a value for a stage that reads something made from
  // it, walking through values that are not at hand; held ones always are.
  last_need_ = last_read_;
  const auto& order = graph_.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId v = *it;
    if (!is_forward[v]) continue;
    for (NodeId w : graph_.consumers(v)) {
      if (is_forward[w] && !held_[w]) {
        last_need_[v] = std::min(last_need_[v], last_need_[w]);
      }
    }
  }
}

void ScheduleBuilder::DropUnneeded(int32_t j) {
  // Stages j-1..1 are still to run. A value is kept if one of them reads it,
  // or if a value made from it is not at hand and may have to be recomputed
  // for one of them. A consumer at hand needs nothing: kept, it stays;
  // dropped, no later stage needs it (by the same rule, decided first in
  // reverse topological order), so nothing will recompute it.
  const auto& is_forward = chain_.forward_graph().split.is_forward;
  std::erase_if(working_, [&](NodeId v) { return !at_hand_[v] || held_[v]; });
  std::sort(working_.begin(), working_.end(), [&](NodeId a, NodeId b) {
    return graph_.topo_rank(a) > graph_.topo_rank(b);
  });
  size_t kept = 0;
  for (size_t i = 0; i < working_.size(); ++i) {
    const NodeId v = working_[i];
    bool keep = last_read_[v] < j;
    for (NodeId w : graph_.consumers(v)) {
      if (keep) break;
      keep = is_forward[w] && !held_[w] && !at_hand_[w] && last_need_[w] < j;
    }
    if (keep) std::swap(working_[kept++], working_[i]);
  }
  for (size_t i = kept; i < working_.size(); ++i) at_hand_[working_[i]] = 0;
  working_.resize(kept);
}

void ScheduleBuilder::RunStage(int32_t j) {
  const auto& is_forward = chain_.forward_graph().split.is_forward;
  for (NodeId v : chain_.stage(j)) {
    if (stopped_) return;
    if (is_forward[v]) {
      Ensure(v);
      continue;
    }
    for (NodeId u : graph_.inputs(v)) {
      if (is_forward[u]) Ensure(u);
    }
    Compute(v);
  }
  if (recompute_once_) {
    DropUnneeded(j);
  } else {
    DropUnheld();
  }
}

void ScheduleBuilder::DropUnheld(int32_t keep_segment) {
  // Held values leave the list too (Release() drops them), so that stages
  // never rescan the checkpoints: K stages x K checkpoints is quadratic.
  size_t kept = 0;
  for (NodeId v : working_) {
    if (!at_hand_[v] || held_[v]) continue;
    if (chain_.segment_of(v) == keep_segment) {
      working_[kept++] = v;
    } else {
      at_hand_[v] = 0;
    }
  }
  working_.resize(kept);
}

BuildResult ScheduleBuilder::Finish() const {
  if (!stopped_) return {.schedule = InsertFrees(graph_, computes_)};
  if (*stopped_ == Status::kTooLarge) {
    return {.status = Status::kTooLarge,
            .message = fmt::format("schedule would exceed max_computes={}",
                                   limits_.max_computes)};
  }
  return {.status = Status::kTimeout,
          .message = "deadline reached while building the schedule"};
}

BuildResult ChenSchedule(const SegmentChain& chain, BuildLimits limits,
                         bool recompute_once) {
  ScheduleBuilder builder(chain, limits);
  for (NodeId x : chain.checkpoints()) builder.Hold(x);
  if (recompute_once) builder.RecomputeOnce();
  for (NodeId v : chain.forward_graph().forward) builder.Ensure(v);
  // The last segment's backward follows at once: nothing to recompute.
  builder.DropUnheld(chain.num_steps());
  for (int32_t j = chain.num_steps(); j >= 1; --j) builder.RunStage(j);
  return builder.Finish();
}

BuildResult NestedSchedule(const SegmentChain& chain, int64_t slots,
                           const SplitRule& split, BuildLimits limits) {
  ScheduleBuilder builder(chain, limits);
  // Reverse steps first+1..last with x_first held (x_0 is free) and
  // `slots` slots counting x_first's; or, with `release` set, unpin it.
  struct Task {
    int32_t first, last;
    int64_t slots;
    NodeId release = kNoNode;
  };
  // An explicit stack: with many slots the nesting is as deep as the chain.
  std::vector<Task> tasks = {{0, chain.num_steps(), slots}};
  while (!tasks.empty() && !builder.stopped()) {
    const Task task = tasks.back();
    tasks.pop_back();
    if (task.release != kNoNode) {
      builder.Release(task.release);
      continue;
    }
    const int32_t length = task.last - task.first;
    if (length == 1) {
      builder.RunStage(task.last);
      continue;
    }
    const int32_t advance = split(length, task.slots);
    if (advance == 0) {
      for (int32_t j = task.last; j > task.first; --j) builder.RunStage(j);
      continue;
    }
    const int32_t mid = task.first + advance;
    const NodeId x = chain.checkpoint(mid);
    builder.Ensure(x);
    builder.Hold(x);
    builder.DropUnheld();
    tasks.push_back({task.first, mid, task.slots});
    tasks.push_back({0, 0, 0, x});
    tasks.push_back({mid, task.last, task.slots - 1});
  }
  return builder.Finish();
}

}  // namespace remat
