// Splits a training graph into its forward values and backward nodes by
// node kind and `grad_of`, refusing graphs where that split is not a cut
// (a forward value that reads a gradient).
#include "algorithms/common/forward_backward.h"

#include <fmt/format.h>

namespace remat {

std::optional<ForwardBackward> SplitForwardBackward(const Graph& graph,
                                                    std::string& why) {
  ForwardBackward split;
  const int32_t n = graph.num_nodes();
  split.is_forward.assign(n, 0);
  split.backward_of.assign(n, {});
  for (NodeId v : graph.topological_order()) {
    NodeKind kind = graph.kind(v);
    if (kind == NodeKind::kForward || kind == NodeKind::kLoss) {
      split.is_forward[v] = 1;
      split.forward.push_back(v);
    }
  }
  for (NodeId v : graph.topological_order()) {
    if (graph.kind(v) != NodeKind::kBackward) continue;
    NodeId f = graph.grad_of(v);
    if (f == kNoNode) {
      why = fmt::format("backward node {} ('{}') has no grad_of", v,
                        graph.node_name(v));
      return std::nullopt;
    }
    if (!split.is_forward[f]) {
      why = fmt::format(
          "backward node {} ('{}'): grad_of {} is not a forward "
          "value",
          v, graph.node_name(v), f);
      return std::nullopt;
    }
    split.backward_of[f].push_back(v);
    split.backward.push_back(v);
  }
  if (split.backward.empty()) {
    why = "no backward nodes: not a training graph (needs kinds and grad_of)";
    return std::nullopt;
  }
  return split;
}

}  // namespace remat
