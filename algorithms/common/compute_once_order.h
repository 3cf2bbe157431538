// Orders that compute each needed value once: the search behind
// order_search (docs/algorithms.md, "order_search"), and the least peak of
// such an order, the stage order of the staged methods where no heuristic
// schedule offers one (checkmate_model.h, BestStagedStart).
//
// The state of the search is the set of values computed so far (a lower
// set): it fixes which values are live. The search extends it one ready
// value at a time while that compute fits the budget, depth first, trying
// first the compute that leaves the least memory live. A compute that
// fits and leaves no more memory live than before (it frees at least the
// bytes it keeps) is taken alone: moving it earlier in any order that
// completes from this set lowers or keeps the memory of every compute in
// between, so no completion is lost (the classic exchange argument).
// Sets from which no order completes are remembered by fingerprint
// (fingerprint.h), so the search is complete: when it ends without an
// order, no schedule computing each value once fits. Runs restart as
// reach_search's do (randomized restarts, each run 1.5 times the last's
// sets), after the first with each compute's memory taken as up to
// `jitter` mean values more, at random.
#pragma once

#include <cstdint>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

struct OrderSearchOptions {
  int64_t memory_mib = 64;  // for the dead ends remembered
  int64_t restart_states = 10000;
  double jitter = 1;
  int64_t seed = 0;
};

struct OrderSearchResult {
  // kNone: the search was exhaustive; kGaveUp: memory or time ran out.
  enum class Found { kOrder, kNone, kGaveUp };
  Found found = Found::kGaveUp;
  std::vector<NodeId> order;  // the needed nodes, with kOrder
  int64_t states = 0;         // sets searched
  int64_t restarts = 0;
};

// An order of the needed nodes, each computed once and freed after its
// last reader, that peaks within `budget` bytes.
OrderSearchResult SearchComputeOnceOrder(const Graph& graph, int64_t budget,
                                         const OrderSearchOptions& options,
                                         const Deadline& deadline);

struct LeastPeakOrder {
  std::vector<NodeId> order;
  int64_t peak_bytes = 0;
  // No order computing each value once peaks lower (every search below
  // was exhaustive).
  bool least = false;
};

// The compute-once order with the least peak the search finds before
// `deadline`: a bisection over budgets from MemoryLowerBound to below the
// NoRemat peak, each search given an equal share of the time left for the
// searches still to come. NoRemat's order where none peaks lower.
LeastPeakOrder FindLeastPeakOrder(const Graph& graph,
                                  const OrderSearchOptions& options,
                                  const Deadline& deadline);

}  // namespace remat
