#include "harness/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "harness/liveness.h"
#include "harness/memory_model.h"

namespace remat {

namespace {

// Checked accumulation: the builder guarantees that one copy of everything
// fits in int64, but a long schedule can recompute past that.
bool AddChecked(int64_t& sum, int64_t value) {
  return !__builtin_add_overflow(sum, value, &sum);
}

// The times of one value's current instance: on the streams, when it is
// usable on the device, when its last reader so far ends, and when its
// host copy is complete; and the same on unlimited lanes.
struct ValueTimes {
  double ready = 0, last_use = 0, host_ready = 0;
  double lane_ready = 0, lane_last_use = 0, lane_host_ready = 0;
};

// A change of memory at a moment of the timeline. Ties keep schedule
// order: `order` is twice the event's index, plus one for the release of
// a compute's workspace when it ends.
struct MemoryChange {
  double time;
  int64_t order;
  int64_t bytes;
};

struct PeakOverTime {
  int64_t peak = 0;
  int64_t first_over = -1;  // order of the first change above the limit
};

PeakOverTime SweepChanges(std::vector<MemoryChange>& changes, int64_t limit) {
  std::sort(changes.begin(), changes.end(),
            [](const MemoryChange& a, const MemoryChange& b) {
              return a.time != b.time ? a.time < b.time : a.order < b.order;
            });
  PeakOverTime result;
  int64_t now = 0;
  for (const MemoryChange& c : changes) {
    now += c.bytes;
    result.peak = std::max(result.peak, now);
    if (now > limit && result.first_over < 0) result.first_over = c.order;
  }
  return result;
}

// One simulation: the memory model in schedule order, and the timeline.
// Computes run on one stream in schedule order; offloads and prefetches
// each on their own copy stream, in schedule order. A free happens when
// the compute stream reaches it (every compute before it has ended). An
// offload starts once its stream is free and the value is ready, so it
// overlaps the computes that read it before; the device memory is released
// when the copy ends, but not before the compute stream reaches the
// offload. A prefetch starts once its stream is free, the host copy is
// complete and the compute stream reaches it; it takes the memory when it
// starts and the value is usable when it ends.
class Timeline {
 public:
  Timeline(const Graph& graph, const SimulationOptions& options,
           bool has_transfers, SimulationResult& result)
      : graph_(graph),
        timing_(options.timing ? *options.timing : default_timing_),
        record_(options.record_timeline),
        has_transfers_(has_transfers),
        result_(result),
        live_(graph.num_nodes(), 0),
        on_host_(graph.num_nodes(), 0),
        computed_(graph.num_nodes(), 0),
        times_(graph.num_nodes()) {}

  // Applies event `i`; returns why it is illegal, or nothing.
  std::string Apply(int64_t i, Event e) {
    switch (e.op) {
      case Event::Op::kCompute:
        return Compute(i, e.node);
      case Event::Op::kFree:
        return Free(i, e.node);
      case Event::Op::kOffload:
        return Offload(i, e.node);
      case Event::Op::kPrefetch:
        return Prefetch(i, e.node);
    }
    return "unknown event";
  }

  bool computed(NodeId v) const { return computed_[v]; }

  // The figures of the events applied so far that need all of them; for
  // a host budget exceeded, the index of the offload that exceeded it and
  // why.
  std::optional<std::pair<int64_t, std::string>> Finish() {
    result_.makespan = std::max({compute_end_, d2h_end_, h2d_end_});
    result_.parallelism = result_.critical_path > 0
                              ? result_.cost / result_.critical_path
                              : 1.0;
    if (!has_transfers_) return std::nullopt;
    result_.peak_bytes = std::max(
        result_.peak_bytes,
        SweepChanges(device_changes_, std::numeric_limits<int64_t>::max())
            .peak);
    const PeakOverTime host =
        SweepChanges(host_changes_, timing_.host_budget_bytes);
    result_.host_peak_bytes = host.peak;
    if (host.first_over < 0) return std::nullopt;
    return std::pair{host.first_over / 2,
                     fmt::format("host memory reaches {} bytes, over the "
                                 "host budget of {}",
                                 host.peak, timing_.host_budget_bytes)};
  }

 private:
  std::string Name(NodeId v) const { return graph_.node_name(v); }

  void Record(int64_t bytes) {
    if (record_) result_.memory_at_event.push_back(bytes);
  }

  std::string Compute(int64_t i, NodeId v) {
    if (live_[v]) {
      return fmt::format("compute {}: '{}' is already live", v, Name(v));
    }
    double start = compute_end_;
    double lane_start = lane_gate_;
    for (NodeId u : graph_.inputs(v)) {
      if (!live_[u]) {
        return fmt::format("compute {}: input {} ('{}') is {}", v, u,
                           Name(u),
                           on_host_[u] ? "offloaded and not prefetched"
                                       : "not live");
      }
      start = std::max(start, times_[u].ready);
      lane_start = std::max(lane_start, times_[u].lane_ready);
    }
    const int64_t now = memory_model::MemoryAtCompute(graph_, memory_, v);
    result_.peak_bytes = std::max(result_.peak_bytes, now);
    Record(now);
    const int64_t resident = memory_model::ResidentBytes(graph_, v);
    memory_ += resident;
    live_[v] = 1;
    computed_[v] = 1;
    ++result_.length;
    if (!AddChecked(result_.cost, graph_.cost(v))) {
      return "total cost overflows int64";
    }
    const double end = start + static_cast<double>(graph_.cost(v));
    const double lane_end = lane_start + static_cast<double>(graph_.cost(v));
    result_.stall += start - compute_end_;
    compute_end_ = end;
    for (NodeId u : graph_.inputs(v)) {
      ValueTimes& t = times_[u];
      t.last_use = std::max(t.last_use, end);
      t.lane_last_use = std::max(t.lane_last_use, lane_end);
    }
    ValueTimes& t = times_[v];
    t.ready = t.last_use = end;
    t.lane_ready = t.lane_last_use = lane_end;
    result_.critical_path = std::max(result_.critical_path, lane_end);
    if (has_transfers_) {
      const int64_t transient = memory_model::TransientBytes(graph_, v);
      device_changes_.push_back({start, 2 * i, resident + transient});
      device_changes_.push_back({end, 2 * i + 1, -transient});
    }
    return {};
  }

  std::string Free(int64_t i, NodeId v) {
    const int64_t bytes = memory_model::ResidentBytes(graph_, v);
    if (live_[v]) {
      if (times_[v].ready > compute_end_) {
        return fmt::format(
            "free {}: '{}' is mid-copy (its prefetch ends at {}, the free "
            "comes at {})",
            v, Name(v), times_[v].ready, compute_end_);
      }
      live_[v] = 0;
      memory_ -= bytes;
      lane_gate_ = std::max(lane_gate_, times_[v].lane_last_use);
      if (has_transfers_) device_changes_.push_back({compute_end_, 2 * i, -bytes});
    } else if (on_host_[v]) {
      // Without a device copy, a free drops the host copy.
      if (times_[v].host_ready > compute_end_) {
        return fmt::format(
            "free {}: '{}' is mid-copy (its offload ends at {}, the free "
            "comes at {})",
            v, Name(v), times_[v].host_ready, compute_end_);
      }
      on_host_[v] = 0;
      host_changes_.push_back({compute_end_, 2 * i, -bytes});
    } else {
      return fmt::format("free {}: '{}' is not live", v, Name(v));
    }
    Record(memory_);
    return {};
  }

  std::string Offload(int64_t i, NodeId v) {
    if (!live_[v]) {
      return fmt::format("offload {}: '{}' is not live on the device", v,
                         Name(v));
    }
    if (on_host_[v]) {
      return fmt::format("offload {}: '{}' already has a copy on the host", v,
                         Name(v));
    }
    const int64_t bytes = memory_model::ResidentBytes(graph_, v);
    const double duration = timing_.TransferTime(graph_, bytes);
    ValueTimes& t = times_[v];
    const double start = std::max(d2h_end_, t.ready);
    d2h_end_ = start + duration;
    t.host_ready = d2h_end_;
    t.lane_host_ready = t.lane_ready + duration;
    // Like a free, an offload hands its memory to later computes only once
    // its readers have ended; nothing waits for the copy itself.
    lane_gate_ = std::max(lane_gate_, t.lane_last_use);
    result_.critical_path = std::max(result_.critical_path, t.lane_host_ready);
    live_[v] = 0;
    on_host_[v] = 1;
    memory_ -= bytes;
    Record(memory_);
    device_changes_.push_back(
        {std::max(d2h_end_, compute_end_), 2 * i, -bytes});
    host_changes_.push_back({start, 2 * i, bytes});
    return AddChecked(result_.transfer_bytes, bytes)
               ? std::string()
               : "transferred bytes overflow int64";
  }

  std::string Prefetch(int64_t i, NodeId v) {
    if (live_[v]) {
      return fmt::format("prefetch {}: '{}' is already live", v, Name(v));
    }
    if (!on_host_[v]) {
      return fmt::format("prefetch {}: '{}' is not on the host", v, Name(v));
    }
    const int64_t bytes = memory_model::ResidentBytes(graph_, v);
    const double duration = timing_.TransferTime(graph_, bytes);
    ValueTimes& t = times_[v];
    const double start = std::max({h2d_end_, compute_end_, t.host_ready});
    h2d_end_ = start + duration;
    t.ready = t.last_use = h2d_end_;
    t.lane_ready = t.lane_last_use =
        std::max(lane_gate_, t.lane_host_ready) + duration;
    result_.critical_path = std::max(result_.critical_path, t.lane_ready);
    live_[v] = 1;
    on_host_[v] = 0;
    memory_ += bytes;
    Record(memory_);
    device_changes_.push_back({start, 2 * i, bytes});
    host_changes_.push_back({h2d_end_, 2 * i, -bytes});
    return AddChecked(result_.transfer_bytes, bytes)
               ? std::string()
               : "transferred bytes overflow int64";
  }

  static inline const TimingModel default_timing_{};
  const Graph& graph_;
  const TimingModel& timing_;
  const bool record_;
  const bool has_transfers_;
  SimulationResult& result_;
  std::vector<uint8_t> live_, on_host_, computed_;
  std::vector<ValueTimes> times_;
  int64_t memory_ = 0;  // device memory in schedule order
  double compute_end_ = 0, d2h_end_ = 0, h2d_end_ = 0;
  double lane_gate_ = 0;  // when the memory freed so far is free on lanes
  std::vector<MemoryChange> device_changes_, host_changes_;  // transfers only
};

}  // namespace

SimulationResult Simulate(const Graph& graph, std::span<const Event> schedule,
                          SimulationOptions options) {
  SimulationResult result;
  const int32_t n = graph.num_nodes();
  if (options.record_timeline) result.memory_at_event.reserve(schedule.size());
  const bool has_transfers =
      std::any_of(schedule.begin(), schedule.end(),
                  [](const Event& e) { return e.is_transfer(); });
  Timeline timeline(graph, options, has_transfers, result);

  auto fail = [&](int64_t index, std::string why) {
    result.error_index = index;
    result.error = std::move(why);
    return result;
  };

  for (size_t i = 0; i < schedule.size(); ++i) {
    const NodeId v = schedule[i].node;
    std::string why = v < 0 || v >= n
                          ? fmt::format("node {} is not in the graph", v)
                          : timeline.Apply(i, schedule[i]);
    if (!why.empty()) {
      timeline.Finish();  // the legal prefix's figures
      return fail(i, std::move(why));
    }
  }

  result.base_cost = BaseCost(graph);
  result.overhead = result.base_cost == 0
                        ? 1.0
                        : static_cast<double>(result.cost) / result.base_cost;
  if (auto over = timeline.Finish()) {
    return fail(over->first, std::move(over->second));
  }
  for (NodeId t : graph.targets()) {
    if (!timeline.computed(t)) {
      return fail(static_cast<int64_t>(schedule.size()),
                  fmt::format("target {} ('{}') is never computed", t,
                              graph.node_name(t)));
    }
  }
  result.valid = true;
  return result;
}

nlohmann::json TimelineFigures(const SimulationResult& sim) {
  nlohmann::json figures = {{"makespan", sim.makespan},
                            {"critical_path", sim.critical_path},
                            {"parallelism", sim.parallelism}};
  if (sim.transfer_bytes > 0) {
    figures["transfer_bytes"] = sim.transfer_bytes;
    figures["host_peak_bytes"] = sim.host_peak_bytes;
    figures["stall"] = sim.stall;
  }
  return figures;
}

std::vector<uint8_t> NeededNodes(const Graph& graph) {
  std::vector<uint8_t> needed(graph.num_nodes(), 0);
  std::vector<NodeId> stack(graph.targets().begin(), graph.targets().end());
  for (NodeId t : stack) needed[t] = 1;
  while (!stack.empty()) {
    NodeId v = stack.back();
    stack.pop_back();
    for (NodeId u : graph.inputs(v)) {
      if (!needed[u]) {
        needed[u] = 1;
        stack.push_back(u);
      }
    }
  }
  return needed;
}

int64_t BaseCost(const Graph& graph) {
  std::vector<uint8_t> needed = NeededNodes(graph);
  int64_t total = 0;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    if (needed[v]) total += graph.cost(v);
  }
  return total;
}

int64_t MemoryLowerBound(const Graph& graph) {
  std::vector<uint8_t> needed = NeededNodes(graph);
  int64_t bound = 0;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    if (!needed[v]) continue;
    bound = std::max(bound, memory_model::LeastMemoryToCompute(graph, v));
  }
  return bound;
}

int64_t LongestPathCost(const Graph& graph) {
  std::vector<uint8_t> needed = NeededNodes(graph);
  std::vector<int64_t> finish(graph.num_nodes(), 0);
  int64_t longest = 0;
  for (NodeId v : graph.topological_order()) {
    if (!needed[v]) continue;
    int64_t start = 0;
    for (NodeId u : graph.inputs(v)) start = std::max(start, finish[u]);
    finish[v] = start + graph.cost(v);
    longest = std::max(longest, finish[v]);
  }
  return longest;
}

std::vector<NodeId> NoRematOrder(const Graph& graph) {
  std::vector<uint8_t> needed = NeededNodes(graph);
  std::vector<NodeId> order;
  for (NodeId v : graph.topological_order()) {
    if (needed[v]) order.push_back(v);
  }
  return order;
}

int64_t NoRematPeak(const Graph& graph) {
  return Simulate(graph, InsertFrees(graph, NoRematOrder(graph))).peak_bytes;
}

}  // namespace remat
