#include "model/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "model/liveness.h"
#include "model/memory_model.h"
#include "model/stop.h"

namespace remat {

namespace {

// Checked accumulation: the builder guarantees that one copy of everything
// fits in int64, but a long schedule can recompute past that. On overflow
// `sum` keeps its value, so that an invalid schedule's figures are those
// of the events before, never a wrapped (negative) sum.
bool AddChecked(int64_t& sum, int64_t value) {
  int64_t result;
  if (__builtin_add_overflow(sum, value, &result)) return false;
  sum = result;
  return true;
}

// A value instance's times on unlimited lanes: when it is usable, and
// when its last reader so far ends. Whole cost units without transfers:
// integer arithmetic keeps the common case fast. They also say what the
// simulator knows of the value, so that a read touches one array: a
// negative `ready` means not live on the device, a negative `last_use`
// never computed.
template <typename Time>
struct LaneTimes {
  Time ready = -1, last_use = -1;
  bool live() const { return ready >= 0; }
};

// With transfers also on the streams (when it is usable and when its last
// reader so far ends) and when its host copy is complete.
struct StreamTimes {
  double ready = 0, last_use = 0, host_ready = 0, lane_host_ready = 0;
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

// Why computing v is illegal (or its cost overflowed). Cold and outside
// the Timeline, so that the hot loop keeps its state in registers.
template <typename Time>
[[gnu::cold, gnu::noinline]] std::string ComputeError(
    const Graph& graph, std::span<const LaneTimes<Time>> lanes,
    std::span<const uint8_t> on_host, NodeId v) {
  if (lanes[v].live()) {
    return fmt::format("compute {}: '{}' is already live", v,
                       graph.node_name(v));
  }
  for (NodeId u : graph.inputs(v)) {
    if (!lanes[u].live()) {
      return fmt::format(
          "compute {}: input {} ('{}') is {}", v, u, graph.node_name(u),
          !on_host.empty() && on_host[u] ? "offloaded and not prefetched"
                                         : "not live");
    }
  }
  return fmt::format("compute {}: '{}' takes the total cost past int64", v,
                     graph.node_name(v));
}

[[gnu::cold, gnu::noinline]] std::string FreeError(const Graph& graph,
                                                   NodeId v) {
  return fmt::format("free {}: '{}' is not live", v, graph.node_name(v));
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
// starts and the value is usable when it ends. A wait holds the compute
// stream until an offload has ended, so that its memory is free for the
// computes after it.
//
// Without transfers (kTransfers false, the common case kept as fast as the
// simulator was before the timeline) every value is ready when the compute
// stream reaches its reader, so time is cost; the lanes are tracked only
// when the critical path is asked for (kLanes). The memory at each event is
// kept only when asked for (kRecord): the loop over events keeps its state
// in registers only with few enough of them.
template <bool kTransfers, bool kLanes, bool kRecord>
class Timeline {
  using Time = std::conditional_t<kTransfers, double, int64_t>;

 public:
  Timeline(const Graph& graph, const SimulationOptions& options,
           SimulationResult& result)
      : graph_(graph),
        timing_(options.timing ? *options.timing : default_timing_),
        result_(result),
        lanes_(graph.num_nodes()),
        ledger_(graph) {
    if constexpr (kTransfers) {
      on_host_.assign(graph.num_nodes(), 0);
      streams_.resize(graph.num_nodes());
    }
  }

  // Applies event `i`; false when it is illegal (the result's error says
  // why).
  bool Apply(int64_t i, Event e) {
    switch (e.op) {
      case Event::Op::kCompute:
        return Compute(i, e.node);
      case Event::Op::kFree:
        return Free(i, e.node);
      case Event::Op::kOffload:
        return Offload(i, e.node);
      case Event::Op::kPrefetch:
        return Prefetch(i, e.node);
      case Event::Op::kWait:
        return Wait(i, e.node);
    }
    return false;
  }

  // Applies the steps of a recomputed run from event `i` on and returns
  // how many events they are (none where event `i` starts no step). A step
  // is a compute whose only input is the previous compute's value, still
  // live, and the free of that input right after it; recomputed runs are
  // most of the events of the schedules that recompute. The loop keeps the
  // memory figures in a local copy of the ledger, in registers, where
  // through the Timeline's members each step would wait for the previous
  // step's stores. On the
  // lanes the free waits only for the compute, which ends after the gate,
  // so the gate becomes the compute's end: the run's lane state is one
  // running time, the sum of its costs. The loop stops before an illegal
  // compute, which Apply then refuses.
  int64_t Steps(std::span<const Event> schedule, int64_t i) {
    static_assert(!kTransfers);
    const int64_t size = static_cast<int64_t>(schedule.size());
    const auto n = static_cast<uint32_t>(graph_.num_nodes());
    NodeId last = last_node_;
    Time end = std::max(lane_gate_, last_end_);
    memory_model::Ledger ledger = ledger_;
    int64_t cost = cost_;
    int64_t j = i;
    for (; j + 1 < size; j += 2) {
      const Event c = schedule[j], f = schedule[j + 1];
      const NodeId v = c.node;
      if (c.op != Event::Op::kCompute || f.op != Event::Op::kFree ||
          f.node != last || static_cast<uint32_t>(v) >= n) {
        break;
      }
      const std::span<const NodeId> inputs = graph_.inputs(v);
      if (inputs.size() != 1 || inputs[0] != last || lanes_[v].live() ||
          !AddChecked(cost, graph_.cost(v))) {
        break;
      }
      Record(j, ledger.Compute(v));
      ledger.Free(last);
      Record(j + 1, ledger.live());
      lanes_[last].ready = -1;
      if constexpr (kLanes) {
        end += static_cast<Time>(graph_.cost(v));
        lanes_[v] = {end, end};
      } else {
        lanes_[v] = {0, 0};  // live, computed
      }
      last = v;
    }
    if (j == i) return 0;
    ledger_ = ledger;
    cost_ = cost;
    length_ += (j - i) / 2;
    if constexpr (kLanes) lane_gate_ = last_end_ = end;
    last_node_ = last;
    return j - i;
  }

  // Why the event that Apply refused is illegal, where Apply did not say
  // (the refusals on the path of every schedule): naming it only after
  // the simulation stopped keeps calls out of the loop over events, so
  // that the compiler keeps the timeline's state in registers.
  [[gnu::cold]] std::string Explain(Event e) const {
    switch (e.op) {
      case Event::Op::kCompute:
        return ComputeError<Time>(graph_, lanes_, on_host_, e.node);
      case Event::Op::kFree:
        return FreeError(graph_, e.node);
      case Event::Op::kOffload:
        return "offload without transfers";
      case Event::Op::kPrefetch:
        return "prefetch without transfers";
      case Event::Op::kWait:
        return "wait without transfers";
    }
    return "unknown event";
  }

  bool computed(NodeId v) const { return lanes_[v].last_use >= 0; }

  // The figures of the events applied so far that need all of them; for
  // a host budget exceeded, the index of the offload that exceeded it and
  // why.
  std::optional<std::pair<int64_t, std::string>> Finish() {
    if constexpr (kRecord) result_.memory_at_event.resize(recorded_);
    result_.peak_bytes = ledger_.peak();
    result_.cost = cost_;
    result_.length = length_;
    result_.critical_path = static_cast<double>(CriticalPath());
    result_.makespan =
        kTransfers ? std::max({compute_end_, d2h_end_, h2d_end_})
                   : static_cast<double>(cost_);
    result_.parallelism =
        result_.critical_path > 0
            ? static_cast<double>(cost_) / result_.critical_path
            : static_cast<double>(kLanes);
    if constexpr (!kTransfers) return std::nullopt;
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
  const std::string& Name(NodeId v) const { return graph_.node_name(v); }

  // The latest end on the lanes. A compute's end stays at most its
  // value's last_use until the value is freed or offloaded, which raises
  // the gate to at least that, so the computes need not keep a running
  // maximum (one more step on their chain of lane times): the gate and
  // the values still live hold it. Transfers' ends are kept as they come.
  Time CriticalPath() const {
    if constexpr (!kLanes) return 0;
    Time latest = std::max(critical_path_, lane_gate_);
    for (const LaneTimes<Time>& t : lanes_) {
      if (t.live()) latest = std::max(latest, t.last_use);
    }
    return latest;
  }

  // The error goes straight to the result: a member string would let the
  // Timeline's address escape and keep its state out of registers.
  bool Fail(std::string why) {
    result_.error = std::move(why);
    return false;
  }

  // memory_at_event has a slot per event (Run sizes it): a store here,
  // where a push_back would put a call in the loop over events.
  void Record(int64_t i, int64_t bytes) {
    if constexpr (kRecord) {
      result_.memory_at_event[i] = bytes;
      recorded_ = i + 1;
    }
  }

  bool OnHost(NodeId v) const {
    if constexpr (kTransfers) return on_host_[v];
    return false;
  }

  bool Compute(int64_t i, NodeId v) {
    bool legal = !lanes_[v].live();
    double start = compute_end_;
    Time lane_start = lane_gate_;
    const std::span<const NodeId> inputs = graph_.inputs(v);
    for (NodeId u : inputs) {
      if constexpr (kLanes && !kTransfers) {
        // The last compute's value, still live, is read from a register:
        // through memory, each compute of a recomputed run would wait for
        // the previous one's store of its time to reach this load.
        if (u == last_node_) {
          lane_start = std::max(lane_start, last_end_);
          continue;
        }
      }
      const Time ready = lanes_[u].ready;
      legal &= ready >= 0;
      if constexpr (kTransfers) start = std::max(start, streams_[u].ready);
      if constexpr (kLanes) lane_start = std::max(lane_start, ready);
    }
    const int64_t cost = graph_.cost(v);
    if (!legal || !AddChecked(cost_, cost)) [[unlikely]] {
      return false;  // Explain says why
    }
    Record(i, ledger_.Compute(v));
    ++length_;
    if constexpr (kLanes) {
      const Time lane_end = lane_start + static_cast<Time>(cost);
      for (NodeId u : inputs) {
        lanes_[u].last_use = std::max(lanes_[u].last_use, lane_end);
      }
      lanes_[v] = {lane_end, lane_end};
      last_end_ = lane_end;
    } else {
      lanes_[v] = {0, 0};  // live, computed
    }
    last_node_ = v;
    if constexpr (kTransfers) {
      const double end = start + static_cast<double>(cost);
      result_.stall += start - compute_end_;
      for (NodeId u : graph_.inputs(v)) {
        streams_[u].last_use = std::max(streams_[u].last_use, end);
      }
      streams_[v].ready = streams_[v].last_use = end;
      const int64_t transient = memory_model::TransientBytes(graph_, v);
      device_changes_.push_back(
          {start, 2 * i, memory_model::ComputeBytes(graph_, v)});
      device_changes_.push_back({end, 2 * i + 1, -transient});
      compute_end_ = end;
    }
    return true;
  }

  bool Free(int64_t i, NodeId v) {
    const int64_t bytes = memory_model::ResidentBytes(graph_, v);
    if (lanes_[v].live()) {
      if constexpr (kTransfers) {
        if (streams_[v].ready > compute_end_) {
          return Fail(fmt::format(
              "free {}: '{}' is mid-copy (its prefetch ends at {}, the free "
              "comes at {})",
              v, Name(v), streams_[v].ready, compute_end_));
        }
        device_changes_.push_back({compute_end_, 2 * i, -bytes});
      }
      ledger_.Free(v);
      if constexpr (kLanes) {
        lane_gate_ = std::max(lane_gate_, lanes_[v].last_use);
      }
      if (v == last_node_) last_node_ = kNoNode;
      lanes_[v].ready = -1;
    } else if (OnHost(v)) {
      // Without a device copy, a free drops the host copy.
      if (streams_[v].host_ready > compute_end_) {
        return Fail(fmt::format(
            "free {}: '{}' is mid-copy (its offload ends at {}, the free "
            "comes at {})",
            v, Name(v), streams_[v].host_ready, compute_end_));
      }
      on_host_[v] = 0;
      host_changes_.push_back({compute_end_, 2 * i, -bytes});
    } else {
      return false;  // Explain says why
    }
    Record(i, ledger_.live());
    return true;
  }

  bool Offload(int64_t i, NodeId v) {
    if constexpr (!kTransfers) {
      return false;  // Explain says why
    } else {
      if (!lanes_[v].live()) {
        return Fail(fmt::format("offload {}: '{}' is not live on the device",
                                v, Name(v)));
      }
      if (on_host_[v]) {
        return Fail(fmt::format(
            "offload {}: '{}' already has a copy on the host", v, Name(v)));
      }
      const int64_t bytes = memory_model::ResidentBytes(graph_, v);
      const double duration = timing_.TransferTime(graph_, bytes);
      StreamTimes& t = streams_[v];
      const double start = std::max(d2h_end_, t.ready);
      d2h_end_ = start + duration;
      t.host_ready = d2h_end_;
      if constexpr (kLanes) {
        t.lane_host_ready = lanes_[v].ready + duration;
        // Like a free, an offload hands its memory to later computes only
        // once its readers have ended; nothing waits for the copy itself.
        lane_gate_ = std::max(lane_gate_, lanes_[v].last_use);
        critical_path_ = std::max(critical_path_, t.lane_host_ready);
      }
      lanes_[v].ready = -1;
      on_host_[v] = 1;
      ledger_.Offload(v);
      Record(i, ledger_.live());
      device_changes_.push_back(
          {std::max(d2h_end_, compute_end_), 2 * i, -bytes});
      host_changes_.push_back({start, 2 * i, bytes});
      return AddChecked(result_.transfer_bytes, bytes) ||
             Fail("transferred bytes overflow int64");
    }
  }

  bool Prefetch(int64_t i, NodeId v) {
    if constexpr (!kTransfers) {
      return false;  // Explain says why
    } else {
      if (lanes_[v].live()) {
        return Fail(
            fmt::format("prefetch {}: '{}' is already live", v, Name(v)));
      }
      if (!on_host_[v]) {
        return Fail(
            fmt::format("prefetch {}: '{}' is not on the host", v, Name(v)));
      }
      const int64_t bytes = memory_model::ResidentBytes(graph_, v);
      const double duration = timing_.TransferTime(graph_, bytes);
      StreamTimes& t = streams_[v];
      const double start = std::max({h2d_end_, compute_end_, t.host_ready});
      h2d_end_ = start + duration;
      t.ready = t.last_use = h2d_end_;
      if constexpr (kLanes) {
        const double lane_ready =
            std::max(lane_gate_, t.lane_host_ready) + duration;
        lanes_[v] = {lane_ready, lane_ready};
        critical_path_ = std::max(critical_path_, lane_ready);
      } else {
        lanes_[v] = {0, 0};
      }
      on_host_[v] = 0;
      ledger_.Prefetch(v);
      Record(i, ledger_.live());
      device_changes_.push_back({start, 2 * i, bytes});
      host_changes_.push_back({h2d_end_, 2 * i, -bytes});
      return AddChecked(result_.transfer_bytes, bytes) ||
             Fail("transferred bytes overflow int64");
    }
  }

  // The compute stream waits for v's offload to end (vDNN's
  // synchronization: the offload's memory is free for the next compute).
  bool Wait(int64_t i, NodeId v) {
    if constexpr (!kTransfers) {
      return false;  // Explain says why
    } else {
      if (!on_host_[v]) {
        return Fail(fmt::format("wait {}: '{}' has no offload to wait for", v,
                                Name(v)));
      }
      const StreamTimes& t = streams_[v];
      if (t.host_ready > compute_end_) {
        result_.stall += t.host_ready - compute_end_;
        compute_end_ = t.host_ready;
      }
      if constexpr (kLanes) lane_gate_ = std::max(lane_gate_, t.lane_host_ready);
      Record(i, ledger_.live());
      return true;
    }
  }

  static inline const TimingModel default_timing_{};
  const Graph& graph_;
  const TimingModel& timing_;
  SimulationResult& result_;
  std::vector<uint8_t> on_host_;  // with transfers only
  std::vector<LaneTimes<Time>> lanes_;
  std::vector<StreamTimes> streams_;  // with transfers only
  memory_model::Ledger ledger_;       // device memory in schedule order
  int64_t cost_ = 0, length_ = 0, recorded_ = 0;
  Time critical_path_ = 0;
  double compute_end_ = 0, d2h_end_ = 0, h2d_end_ = 0;
  Time lane_gate_ = 0;  // when the memory freed so far is free on lanes
  // The last compute's value while it is live (kNoNode after its free),
  // and its end on the lanes.
  NodeId last_node_ = kNoNode;
  Time last_end_ = 0;
  std::vector<MemoryChange> device_changes_, host_changes_;  // transfers only
};

// Runs `schedule` through a Timeline; see Simulate.
template <bool kTransfers, bool kLanes, bool kRecord>
SimulationResult Run(const Graph& graph, std::span<const Event> schedule,
                     const SimulationOptions& options) {
  SimulationResult result;
  // The graph's, whatever the schedule: reported for invalid ones too.
  result.base_cost = BaseCost(graph);
  const int32_t n = graph.num_nodes();
  if constexpr (kRecord) result.memory_at_event.resize(schedule.size());
  Timeline<kTransfers, kLanes, kRecord> timeline(graph, options, result);

  auto fail = [&](int64_t index, std::string why) {
    result.error_index = index;
    result.error = std::move(why);
    return result;
  };

  // A stop (model/stop.h) is looked for every kStopPoll events.
  constexpr size_t kStopPoll = size_t{1} << 16;
  size_t next_poll = kStopPoll;
  for (size_t i = 0; i < schedule.size(); ++i) {
    if (i >= next_poll) {
      next_poll = i + kStopPoll;
      if (StopRequested()) {
        timeline.Finish();
        return fail(i, "stopped (interrupted)");
      }
    }
    const NodeId v = schedule[i].node;
    if (v < 0 || v >= n) {
      timeline.Finish();  // the legal prefix's figures
      return fail(i, fmt::format("node {} is not in the graph", v));
    }
    if constexpr (!kTransfers) {
      if (const int64_t steps = timeline.Steps(schedule, i)) {
        i += steps - 1;
        continue;
      }
    }
    if (!timeline.Apply(i, schedule[i])) {
      // The first transfer: simulate again with the streams (no prefix
      // scan, so that schedules without transfers pay nothing for them).
      if constexpr (!kTransfers) {
        if (schedule[i].is_transfer()) {
          return Run<true, kLanes, kRecord>(graph, schedule, options);
        }
      }
      timeline.Finish();
      result.error_index = i;
      if (result.error.empty()) result.error = timeline.Explain(schedule[i]);
      return result;
    }
  }

  auto over_host_budget = timeline.Finish();
  result.overhead = result.base_cost == 0
                        ? 1.0
                        : static_cast<double>(result.cost) / result.base_cost;
  if (over_host_budget) {
    return fail(over_host_budget->first, std::move(over_host_budget->second));
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

}  // namespace

SimulationResult Simulate(const Graph& graph, std::span<const Event> schedule,
                          SimulationOptions options) {
  if (options.record_timeline) {
    return options.critical_path
               ? Run<false, true, true>(graph, schedule, options)
               : Run<false, false, true>(graph, schedule, options);
  }
  return options.critical_path
             ? Run<false, true, false>(graph, schedule, options)
             : Run<false, false, false>(graph, schedule, options);
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

std::vector<int64_t> BudgetGrid(int64_t lower_bound, int64_t noremat_peak,
                                int count) {
  std::vector<int64_t> grid;
  if (noremat_peak <= lower_bound || count <= 1) {
    return {std::max(lower_bound, noremat_peak)};
  }
  const __int128 span = noremat_peak - lower_bound;
  for (int i = 0; i < count; ++i) {
    __int128 step = (span * i + (count - 2)) / (count - 1);  // rounded up
    int64_t budget = lower_bound + static_cast<int64_t>(step);
    if (grid.empty() || grid.back() != budget) grid.push_back(budget);
  }
  return grid;
}

}  // namespace remat
