// noremat — the baseline: every needed node computed exactly once.
//
// No rematerialization at all: each node the targets depend on is computed
// once, in a deterministic order, and freed by the shared liveness pass right
// after its last use. Its peak is the right end of every tradeoff curve and
// the reference for "memory saved".
//   order=topo  Kahn's order, smallest ready id first (the graph's own order,
//               the one whose peak every tool reports as the NoRemat peak);
//   order=dfs   depth-first post-order from the targets: each value is
//               produced just before its first consumer needs it, which
//               shortens lifetimes on graphs with parallel branches.
#include <algorithm>

#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

// Post-order of a depth-first search from the targets (in topological
// order), visiting each node's inputs in the order the node lists them.
// Iterative, so that 10^6-node chains do not overflow the stack.
std::vector<NodeId> DepthFirstOrder(const Graph& graph) {
  std::vector<NodeId> targets(graph.targets().begin(), graph.targets().end());
  std::sort(targets.begin(), targets.end(), [&](NodeId a, NodeId b) {
    return graph.topo_rank(a) < graph.topo_rank(b);
  });
  std::vector<uint8_t> visited(graph.num_nodes(), 0);
  std::vector<NodeId> order;
  // Stack of (node, index of the next input to visit).
  std::vector<std::pair<NodeId, size_t>> stack;
  for (NodeId t : targets) {
    if (visited[t]) continue;
    visited[t] = 1;
    stack.push_back({t, 0});
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      auto inputs = graph.inputs(v);
      if (next < inputs.size()) {
        NodeId u = inputs[next++];
        if (!visited[u]) {
          visited[u] = 1;
          stack.push_back({u, 0});
        }
        continue;
      }
      order.push_back(v);
      stack.pop_back();
    }
  }
  return order;
}

enum class Order { kTopo, kDfs };

struct NoRematOptions {
  Order order;
};

const Options<NoRematOptions> kOptions(ChoiceOption(
    &NoRematOptions::order, "order", Order::kTopo,
    {{"topo", Order::kTopo}, {"dfs", Order::kDfs}},
    "compute order: topo (Kahn, smallest id first) or dfs (depth-first from "
    "the targets)"));

class NoRemat : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph, const SolveRequest& request) override {
    const NoRematOptions options = kOptions.Read(request.params);
    std::vector<NodeId> order = options.order == Order::kDfs
                                    ? DepthFirstOrder(graph)
                                    : NoRematOrder(graph);
    return AlgorithmOutput::Found(InsertFrees(graph, order));
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "noremat",
    .description = "No rematerialization: each needed node once, freed after "
                   "its last use",
    .citation = "baseline",
    .exact = false,
    .uses_budget = false,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<NoRemat>(); },
});

}  // namespace
}  // namespace remat
