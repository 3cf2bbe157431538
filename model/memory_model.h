// The accounting rules of the memory model (docs/model.md), in one
// place: what a compute needs, what it takes, and what a free releases,
// and the ledger that applies them to a schedule's events.
//
// The simulator, the liveness pass and every algorithm that estimates
// memory (exact_search, the Checkmate model, the lower-set DP's sets,
// TwRemat's memory-limit heuristic, chen_greedy's segments) read sizes only
// through these functions, so that a change of the model (offloading,
// in-place operations, aliasing) is made here once and every estimate
// follows the simulator.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/graph.h"

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

// The device memory of a schedule walked in order, event by event: the
// one ledger of compute, free, offload and prefetch that the simulator,
// the algorithms that run a schedule as they make it (dtr, TwRemat's
// recursion), the searches that hold a live set (exact_search) and the
// liveness walks that estimate a peak (rotor's stages) keep, so that none
// of them adds or subtracts bytes of its own. The peak is taken at the
// computes (MemoryAtCompute); between them memory only falls or grows by
// a prefetch that the next compute counts. When a transfer's memory
// changes hands on the timeline is the simulator's (model/simulator.cc).
class Ledger {
 public:
  explicit Ledger(const Graph& graph) : graph_(&graph) {}

  // Memory while v is computed with the values now live: the figure a
  // budget bounds. Changes nothing.
  int64_t AtCompute(NodeId v) const {
    return MemoryAtCompute(*graph_, live_, v);
  }
  // Computes v: AtCompute(v), which the peak takes in; v's value is live
  // after it.
  int64_t Compute(NodeId v) {
    const int64_t at = AtCompute(v);
    peak_ = std::max(peak_, at);
    live_ += ResidentBytes(*graph_, v);
    return at;
  }
  // v's value leaves the device memory: freed, or its copy offloaded to
  // the host.
  void Free(NodeId v) { live_ -= ResidentBytes(*graph_, v); }
  void Offload(NodeId v) { Free(v); }
  // v's value comes back from the host, or is on the device before the
  // walk starts (a value an earlier part of the schedule made).
  void Prefetch(NodeId v) { live_ += ResidentBytes(*graph_, v); }
  void Resident(NodeId v) { Prefetch(v); }

  int64_t live() const { return live_; }  // bytes of the live values
  int64_t peak() const { return peak_; }  // the most at any compute so far

 private:
  const Graph* graph_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
};

}  // namespace remat::memory_model
