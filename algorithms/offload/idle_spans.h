// Where a schedule could move values to host memory: the stretches in which
// a live value is not read. Shared by vdnn and swap_remat, so that both
// place offloads and prefetches the same way and differ only in which
// values they move.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/graph.h"
#include "model/options.h"
#include "model/schedule.h"

namespace remat {

// A value instance left unread from event `after` (the compute that made
// it or last read it) to event `before` (the compute that reads it next),
// with `idle_cost` units of compute between them.
struct IdleSpan {
  NodeId value;
  int64_t after, before;
  int64_t idle_cost;
};

// The longest idle span of each value instance in `schedule` (a valid
// schedule of computes and frees) whose value passes `eligible`, for
// spans with compute between their ends; in schedule order of `after`.
std::vector<IdleSpan> LongestIdleSpans(
    const Graph& graph, std::span<const Event> schedule,
    const std::function<bool(NodeId)>& eligible);

// `schedule` with each span's value offloaded right after its `after`
// event and prefetched just before the compute `lookahead` computes ahead
// of `before` (never before the offload): the copy back overlaps those
// computes. With `wait`, the compute stream waits for each offload right
// after issuing it, so that its memory is free for the next compute
// (vDNN's synchronization); without, compute runs on while the copy holds
// the memory.
Schedule WithOffloads(std::span<const Event> schedule,
                      std::span<const IdleSpan> spans, int64_t lookahead,
                      bool wait);

// The `lookahead` option of the algorithms that call WithOffloads.
template <typename T>
OptionField<T> LookaheadOption(int64_t T::*member) {
  return IntOption(member, "lookahead", 1,
                   "computes ahead of its reader a prefetch is issued");
}

}  // namespace remat
