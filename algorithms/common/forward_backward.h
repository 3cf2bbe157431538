// The forward / backward split of a training graph (docs/algorithms.md,
// "Shared building blocks"), used by the algorithms that reason about the
// forward graph only (Chen et al., revolve, Kusumoto et al.) and derive their
// backward schedule from `grad_of`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/graph.h"

namespace remat {

struct ForwardBackward {
  // Forward values (kind forward or loss) in the graph's topological order.
  std::vector<NodeId> forward;
  // Per node: true for forward values.
  std::vector<uint8_t> is_forward;
  // Per node: the backward nodes whose grad_of is that node (usually one).
  std::vector<std::vector<NodeId>> backward_of;
  // Backward nodes in the graph's topological order.
  std::vector<NodeId> backward;
};

// Returns nullopt and sets `why` when the graph has no backward nodes, a
// backward node lacks grad_of, or grad_of names a node that is not a
// forward value: algorithms then answer status unsupported with `why`.
std::optional<ForwardBackward> SplitForwardBackward(const Graph& graph,
                                                    std::string& why);

}  // namespace remat
