// A lower bound on the peak of every schedule that only computes and frees
// (recomputes, never offloads), often above MemoryLowerBound: the "last
// computed" argument (docs/model.md, "Lower bounds").
//
// For a set S of values live together at some moment, look at the value x
// of S computed last before it. Every other value of S is live from its own
// last computation on, so while x is computed, S and x's inputs are live,
// and just before it S \ {x} and x's inputs were live together. Hence the
// least peak that brings S live, reach(S), satisfies
//
//   reach(S) >= min over x in S of
//               max(mem(S u inputs(x)) + workspace(x),
//                   reach(S \ {x} u inputs(x))),
//
// and reach(empty set) = 0. A node v is computed only while its inputs are
// live, so every such schedule peaks at reach(inputs(v)) or above, for
// every needed v. MemoryLowerBound stops at the step itself; here the
// recursion goes on, which counts what must stay live beside a large step
// because bringing it back later would take a step as large. On a
// transformer's MLP: while the GELU's backward runs (input, incoming
// gradient, result), the layer norm's output that the first weight's
// gradient reads is live, or it is brought back afterwards through an
// earlier block's GELU beside the held result.
//
// Each level P is decided by a depth-first search over such sets that
// proves reach(inputs(v)) >= P for some v, or gives up: a level is proven
// only by a complete proof, so the bound is valid whatever the limits; the
// limits only make it lower. Values below 1/64 of P are left out of the
// sets (reach grows with S, so this only weakens the bound) so that the sets
// stay few. The proven level is found by bisection between MemoryLowerBound
// and the NoRemat peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/graph.h"

namespace remat {

struct ReachBoundLimits {
  // Sets examined while deciding one level; a level not decided within it
  // counts as not proven.
  int64_t states_per_level = 200'000;
  // Wall-clock seconds for the whole bisection; what is proven by then is
  // the answer.
  double seconds = 10.0;
};

struct ReachBound {
  // No schedule without offloading peaks below this (>= MemoryLowerBound).
  int64_t bytes = 0;
  // The needed node whose inputs the proof of `bytes` is about; kNoNode
  // where `bytes` is MemoryLowerBound, which needs no such proof.
  NodeId witness = kNoNode;
  // The least level tried and not proven (refuted, or beyond the limits);
  // the true least peak may still lie above it. One more than the NoRemat
  // peak when every level tried was proven.
  int64_t unproven_above = 0;
  int64_t states = 0;    // sets examined, all levels together
  bool limited = false;  // some level was given up for the limits
};

ReachBound ReachLowerBound(const Graph& graph,
                           const ReachBoundLimits& limits = {});

}  // namespace remat
