// Removing recomputations within a budget (algorithms/common/
// drop_recomputes.h), on a graph whose figures are derived by hand.
#include "algorithms/common/drop_recomputes.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/graph.h"
#include "model/liveness.h"
#include "model/simulator.h"

namespace remat {
namespace {

// r -> a -> c (size 5, workspace 1) and r -> b; the target t reads c and b.
// Every other size is 1, every cost 1.
constexpr NodeId r = 0, a = 1, c = 2, b = 3, t = 4;
struct Hand {
  Graph graph = Build();
  static Graph Build() {
    GraphBuilder builder("hand");
    builder.add(NodeKind::kForward, 1, 1, {});
    builder.add(NodeKind::kForward, 1, 1, {r});
    builder.add_node({.id = c, .kind = NodeKind::kForward, .mem = 5,
                      .cost = 1, .workspace = 1, .inputs = {a}});
    builder.add(NodeKind::kForward, 1, 1, {r});
    builder.add(NodeKind::kForward, 1, 1, {c, b});
    return std::move(builder).Build();
  }
};

// r, a, c, r, b, t: r is freed after a and brought back for b. Memory at
// each compute: 1, 2, 7 (a, c and c's workspace), 6, 7, 7: peak 7, cost 6.
// Keeping r instead (r, a, c, b, t) makes c's step 8 (r beside it): cost 5.
TEST(DropRecomputes, KeepsAValueWhereTheBudgetAllows) {
  Hand h;
  const std::vector<NodeId> recomputing = {r, a, c, r, b, t};
  EXPECT_EQ(Simulate(h.graph, InsertFrees(h.graph, recomputing)).peak_bytes,
            7);
  const DroppedRecomputes at8 =
      DropRecomputes(h.graph, recomputing, 8, Deadline::Never());
  EXPECT_EQ(at8.computes, (std::vector<NodeId>{r, a, c, b, t}));
  EXPECT_EQ(at8.removed, 1);
  EXPECT_TRUE(at8.finished);
  const SimulationResult sim =
      Simulate(h.graph, InsertFrees(h.graph, at8.computes));
  EXPECT_EQ(sim.peak_bytes, 8);
  EXPECT_EQ(sim.cost, 5);
  const DroppedRecomputes at7 =
      DropRecomputes(h.graph, recomputing, 7, Deadline::Never());
  EXPECT_EQ(at7.computes, recomputing);
  EXPECT_EQ(at7.removed, 0);
}

// The first a is overwritten before anything reads it, and then the first
// r is read by nothing that stays: both go, and nothing else.
TEST(DropRecomputes, UnreadComputesGoWithWhatOnlyTheyRead) {
  Hand h;
  EXPECT_EQ(WithoutUnreadComputes(
                h.graph, {r, a, r, a, c, r, b, t}),
            (std::vector<NodeId>{r, a, c, r, b, t}));
  // A target's last compute stays though nothing reads it.
  EXPECT_EQ(WithoutUnreadComputes(h.graph, {r, a, c, b, t, t}),
            (std::vector<NodeId>{r, a, c, b, t}));
}

// With the deadline already past, the answer is the input less its unread
// computes, and says the pass did not finish.
TEST(DropRecomputes, StopsAtTheDeadline) {
  Hand h;
  const std::vector<NodeId> recomputing = {r, a, c, r, b, t};
  const Deadline past = Deadline::In(1e-9);
  while (!past.Expired()) {
  }
  const DroppedRecomputes out =
      DropRecomputes(h.graph, recomputing, 8, past);
  EXPECT_EQ(out.computes, recomputing);
  EXPECT_FALSE(out.finished);
}

}  // namespace
}  // namespace remat
