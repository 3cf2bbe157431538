// The accounting rules of the memory model (docs/model.md), in one
// place: what a compute needs, what it takes, and what a free releases.
//
// The simulator, the liveness pass and every algorithm that estimates
// memory (exact_search, the Checkmate model, the lower-set DP's sets,
// TwRemat's memory-limit heuristic, chen_greedy's segments) read sizes only
// through these functions, so that a change of the model (offloading,
// in-place operations, aliasing) is made here once and every estimate
// follows the simulator.
#pragma once

#include <cstdint>

#include "harness/graph.h"

namespace remat::memory_model {

// Bytes that v's value holds from its compute until its free: what a live
// value adds to memory, and what freeing it releases.
inline int64_t ResidentBytes(const Graph& graph, NodeId v) {
  return graph.mem(v);
}

// Bytes that computing v needs on top of the live values and only while it
// runs (its workspace).
inline int64_t TransientBytes(const Graph& graph, NodeId v) {
  return graph.workspace(v);
}

// Bytes that computing v adds to what is live at that moment.
inline int64_t ComputeBytes(const Graph& graph, NodeId v) {
  return ResidentBytes(graph, v) + TransientBytes(graph, v);
}

// Memory at the moment v is computed while `live_bytes` are resident (its
// inputs among them): the figure a budget bounds.
inline int64_t MemoryAtCompute(const Graph& graph, int64_t live_bytes,
                               NodeId v) {
  return live_bytes + ComputeBytes(graph, v);
}

// The least memory any schedule needs to compute v: v with exactly its
// inputs live. Its maximum over the needed nodes is the memory lower bound.
inline int64_t LeastMemoryToCompute(const Graph& graph, NodeId v) {
  int64_t inputs = 0;
  for (NodeId u : graph.inputs(v)) inputs += ResidentBytes(graph, u);
  return MemoryAtCompute(graph, inputs, v);
}

}  // namespace remat::memory_model
