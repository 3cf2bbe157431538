// Fewer computes within the same budget: a pass over a compute sequence
// that removes recomputations while the schedule it makes
// (InsertFrees, model/liveness.h) stays within the budget.
//
// Removing a later compute of v lets v's instance before it serve the reads
// after it: InsertFrees then keeps that instance live until them, which can
// only raise the memory in between. The computes that nobody reads any more
// (the inputs brought back only for the removed compute, and theirs) go
// with it, so one removal can save a whole recomputed branch. Each round
// ranks the recomputations by the cost their removal saves, tries them
// largest saving first, keeps each removal whose schedule still peaks
// within the budget, and the pass repeats until a round removes nothing or
// the deadline comes. Each removal uses up memory slack that later ones may
// need, so the order decides where the pass ends: the largest savings
// first spend it where it pays most. For algorithms that choose memory
// first and leave the cost alone (reach_search).
#pragma once

#include <cstdint>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

struct DroppedRecomputes {
  std::vector<NodeId> computes;
  int64_t removed = 0;     // computes removed, with those nobody read
  bool finished = false;   // a round removed nothing; false: the deadline
};

// `computes` must make a valid schedule within `budget_bytes`; the answer
// does too, at a cost no higher.
DroppedRecomputes DropRecomputes(const Graph& graph,
                                 std::vector<NodeId> computes,
                                 int64_t budget_bytes,
                                 const Deadline& deadline);

// `computes` without the computes whose instance nobody reads before the
// node's next compute, unless it is a target's last: what InsertFrees would
// free unread, with the computes that only they read.
std::vector<NodeId> WithoutUnreadComputes(const Graph& graph,
                                          const std::vector<NodeId>& computes);

}  // namespace remat
