#include "harness/simulator.h"

#include <fmt/format.h>

#include <algorithm>

#include "harness/liveness.h"
#include "harness/memory_model.h"

namespace remat {

namespace {

// Checked accumulation: the builder guarantees that one copy of everything
// fits in int64, but a long schedule can recompute past that.
bool AddChecked(int64_t& sum, int64_t value) {
  return !__builtin_add_overflow(sum, value, &sum);
}

}  // namespace

SimulationResult Simulate(const Graph& graph, std::span<const Event> schedule,
                          SimulationOptions options) {
  SimulationResult result;
  const int32_t n = graph.num_nodes();
  std::vector<uint8_t> live(n, 0);
  std::vector<uint8_t> computed(n, 0);
  int64_t memory = 0;
  if (options.record_timeline) result.memory_at_event.reserve(schedule.size());

  auto fail = [&](int64_t index, std::string why) {
    result.error_index = index;
    result.error = std::move(why);
    return result;
  };

  for (size_t i = 0; i < schedule.size(); ++i) {
    const Event e = schedule[i];
    const NodeId v = e.node;
    if (v < 0 || v >= n) {
      return fail(i, fmt::format("node {} is not in the graph", v));
    }
    if (e.op == Event::Op::kFree) {
      if (!live[v]) {
        return fail(
            i, fmt::format("free {}: '{}' is not live", v, graph.node_name(v)));
      }
      live[v] = 0;
      memory -= memory_model::ResidentBytes(graph, v);
      if (options.record_timeline) result.memory_at_event.push_back(memory);
      continue;
    }
    if (live[v]) {
      return fail(i, fmt::format("compute {}: '{}' is already live", v,
                                 graph.node_name(v)));
    }
    for (NodeId u : graph.inputs(v)) {
      if (!live[u]) {
        return fail(i, fmt::format("compute {}: input {} ('{}') is not live", v,
                                   u, graph.node_name(u)));
      }
    }
    const int64_t now = memory_model::MemoryAtCompute(graph, memory, v);
    if (now > result.peak_bytes) result.peak_bytes = now;
    if (options.record_timeline) result.memory_at_event.push_back(now);
    memory += memory_model::ResidentBytes(graph, v);
    live[v] = 1;
    computed[v] = 1;
    ++result.length;
    if (!AddChecked(result.cost, graph.cost(v))) {
      return fail(i, "total cost overflows int64");
    }
  }

  result.base_cost = BaseCost(graph);
  result.overhead = result.base_cost == 0
                        ? 1.0
                        : static_cast<double>(result.cost) / result.base_cost;
  for (NodeId t : graph.targets()) {
    if (!computed[t]) {
      return fail(static_cast<int64_t>(schedule.size()),
                  fmt::format("target {} ('{}') is never computed", t,
                              graph.node_name(t)));
    }
  }
  result.valid = true;
  return result;
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
