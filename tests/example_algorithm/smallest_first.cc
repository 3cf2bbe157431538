// smallest_first — the worked example of docs/adding_an_algorithm.md, which
// shows this file whole. It is built only into tests/example_algorithm_test,
// so the shipped `remat` does not list it.
// No rematerialization: each needed node once, in a topological order that
// picks, among the nodes whose inputs are all computed, the one with the
// smallest output (prefer=small) or the largest (prefer=large), ties to the
// smaller id. Small outputs first let a branch that starts cheap finish and
// free its values before a large value is made and waits for its consumers.
#include <queue>
#include <vector>

#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

enum class Prefer { kSmall, kLarge };

struct SmallestFirstOptions {
  Prefer prefer;
};

const Options<SmallestFirstOptions> kOptions(ChoiceOption(
    &SmallestFirstOptions::prefer, "prefer", Prefer::kSmall,
    {{"small", Prefer::kSmall}, {"large", Prefer::kLarge}},
    "which ready node is computed first: small (smallest output) or large"));

class SmallestFirst : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const SmallestFirstOptions options = kOptions.Read(request.params);
    const std::vector<uint8_t> needed = NeededNodes(graph);
    // std::priority_queue keeps on top the node that no other comes after.
    auto comes_after = [&](NodeId a, NodeId b) {
      if (graph.mem(a) != graph.mem(b)) {
        return (graph.mem(a) > graph.mem(b)) ==
               (options.prefer == Prefer::kSmall);
      }
      return a > b;
    };
    std::priority_queue<NodeId, std::vector<NodeId>, decltype(comes_after)>
        ready(comes_after);
    std::vector<size_t> inputs_left(graph.num_nodes());
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      inputs_left[v] = graph.inputs(v).size();
      if (needed[v] && inputs_left[v] == 0) ready.push(v);
    }
    std::vector<NodeId> computes;
    while (!ready.empty()) {
      if (request.deadline.Expired()) {
        return AlgorithmOutput::NoSchedule(Status::kTimeout, "deadline");
      }
      const NodeId v = ready.top();
      ready.pop();
      computes.push_back(v);
      // consumers(v) names c once per edge, as inputs(c) names v, so the
      // count reaches zero exactly when c's last input is computed.
      for (NodeId c : graph.consumers(v)) {
        if (needed[c] && --inputs_left[c] == 0) ready.push(c);
      }
    }
    // Frees come from the shared liveness pass: each value right after
    // its last reader.
    return AlgorithmOutput::Found(InsertFrees(graph, computes));
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "smallest_first",
    .description = "Each needed node once, the smallest ready output first",
    .citation = "example (docs/adding_an_algorithm.md)",
    .exact = false,
    .uses_budget = false,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<SmallestFirst>(); },
});

}  // namespace
}  // namespace remat
