// The forward cone behind a node: the forward values reachable backwards
// from it through forward values only, the values a stage must have (kept
// or recomputed) before it runs. checkpoint_last recomputes the whole cone
// before each stage; checkpoint_reuse sizes its timeline by it and
// recomputes the part of it that the budget could not keep.
#pragma once

#include <cstdint>
#include <vector>

#include "model/graph.h"

namespace remat {

// Calls visit(u) once for each forward value u behind `start`, nearest first
// (depth first, in the order of each node's inputs); visit returns whether
// the walk goes on behind u. `seen` holds, per node, the stamp of the last
// walk that reached it, so that one vector serves every stage without
// clearing (`stamp` must differ from the previous walks'); `stack` is
// scratch space kept across calls.
template <class Visit>
void WalkForwardCone(const Graph& graph, NodeId start, int32_t stamp,
                     std::vector<int32_t>& seen, std::vector<NodeId>& stack,
                     Visit visit) {
  stack.assign(1, start);
  while (!stack.empty()) {
    const NodeId v = stack.back();
    stack.pop_back();
    for (NodeId u : graph.inputs(v)) {
      if (graph.kind(u) != NodeKind::kForward || seen[u] == stamp) continue;
      seen[u] = stamp;
      if (visit(u)) stack.push_back(u);
    }
  }
}

}  // namespace remat
