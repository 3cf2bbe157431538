// noremat, checkpoint_last and checkpoint_reuse against hand-computed
// answers, and checkpoint_reuse never behind checkpoint_last at its peak.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::Solve;

TEST(NoRemat, ChainOf16ByHand) {
  // Order f1..f16, loss, g16..g1 (unit sizes): computing g16 with f1..f16
  // and the loss live takes 16 + 1 + 1 = 18; every node once: cost 33.
  Graph g = LoadGraph("chain:n=16");
  SolveResult r = Solve("noremat", g, kUnboundedBudget);
  EXPECT_EQ(r.status, Status::kFeasible);
  EXPECT_EQ(r.peak_bytes, 18);
  EXPECT_EQ(r.cost, 33);
  EXPECT_EQ(r.length, 33);
  EXPECT_EQ(Solve("noremat", g, 18).status, Status::kFeasible);
  EXPECT_EQ(Solve("noremat", g, 17).status, Status::kInfeasible);
}

TEST(NoRemat, DepthFirstOrderShortensLifetimesOnParallelBranches) {
  // Two independent branches a1 (10) -> a2 (1) and b1 (10) -> b2 (1)
  // joined by j. The topological order (smallest id first) computes a1 and
  // b1 before a2: 10 + 10 + 1 = 21 at a2. DFS finishes branch a first, so a1
  // is gone before b1 exists: peak 1 + 10 + 1 = 12 at b2.
  Graph g = testing::GraphFromNodes(R"([
    {"id": 0, "name": "a1", "mem": 10, "cost": 1, "inputs": []},
    {"id": 1, "name": "b1", "mem": 10, "cost": 1, "inputs": []},
    {"id": 2, "name": "a2", "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 3, "name": "b2", "mem": 1, "cost": 1, "inputs": [1]},
    {"id": 4, "name": "j", "mem": 1, "cost": 1, "inputs": [2, 3]}])");
  EXPECT_EQ(Solve("noremat", g, kUnboundedBudget).peak_bytes, 21);
  EXPECT_EQ(Solve("noremat", g, kUnboundedBudget, {"order=dfs"}).peak_bytes,
            12);
}

TEST(CheckpointLast, ChainCostIsQuadraticAndPeakIsTheLowerBound) {
  // The loss stage recomputes f1..fn (n + 1 computes), stage gi recomputes
  // f1..fi (i + 1 computes): cost = n + 1 + n(n+1)/2 + n. Peak: g(i+1),
  // f(j-1) and fj live at once: 3 = the memory lower bound.
  for (int64_t n : {1, 2, 16, 50}) {
    Graph g = LoadGraph("chain:n=" + std::to_string(n));
    SolveResult r = Solve("checkpoint_last", g, 3);
    EXPECT_EQ(r.status, Status::kFeasible) << n;
    EXPECT_EQ(r.cost, n + 1 + n * (n + 1) / 2 + n) << n;
    EXPECT_EQ(r.peak_bytes, 3) << n;
  }
}

TEST(CheckpointLast, RefusesSchedulesAboveItsEventLimit) {
  Graph g = LoadGraph("chain:n=100");
  SolveResult r =
      Solve("checkpoint_last", g, kUnboundedBudget, {"max_events=1000"});
  EXPECT_EQ(r.status, Status::kTooLarge);
  EXPECT_FALSE(r.has_schedule);
}

// A linear layer's backward after a costly input: x0 (1) -> big (4) -> x (1)
// -> h (2) -> loss L (1); gh (2) the gradient of h; gx (3) of x, read with
// the weight gradient gw (0, reads gh and x) by gz (1). Unit costs.
// The memory lower bound is 5 (big with x0, x with big).
Graph LinearLayer() {
  return testing::GraphFromNodes(R"([
    {"id": 0, "name": "x0", "kind": "forward", "mem": 1, "cost": 1,
     "inputs": []},
    {"id": 1, "name": "big", "kind": "forward", "mem": 4, "cost": 1,
     "inputs": [0]},
    {"id": 2, "name": "x", "kind": "forward", "mem": 1, "cost": 1,
     "inputs": [1]},
    {"id": 3, "name": "h", "kind": "forward", "mem": 2, "cost": 1,
     "inputs": [2]},
    {"id": 4, "name": "L", "kind": "loss", "mem": 1, "cost": 1,
     "inputs": [3]},
    {"id": 5, "name": "gh", "kind": "backward", "mem": 2, "cost": 1,
     "inputs": [4]},
    {"id": 6, "name": "gx", "kind": "backward", "mem": 3, "cost": 1,
     "inputs": [5]},
    {"id": 7, "name": "gz", "kind": "backward", "mem": 1, "cost": 1,
     "inputs": [6, 8]},
    {"id": 8, "name": "gw", "kind": "backward", "mem": 0, "cost": 1,
     "inputs": [5, 2]}])");
}

TEST(CheckpointLast, LinearLayerHoldsTheInputGradientWhileRecomputing) {
  // Stages L, gh, gx, gw, gz (topological). gw recomputes x0, big, x while
  // gh and gx are held: 2 + 3 + 1 + 4 = 10 at big. Cost: 9 nodes + 3.
  SolveResult r = Solve("checkpoint_last", LinearLayer(), kUnboundedBudget);
  EXPECT_EQ(r.peak_bytes, 10);
  EXPECT_EQ(r.cost, 12);
}

TEST(CheckpointReuse, KeepsTheLayerInputAndRunsTheWeightGradientFirst) {
  // Memory first: after gh, gw adds 0 and gx adds 3, so gw runs first. x,
  // last read by h (step 3), can be kept through L and gh (3 each) within
  // the budget 5: 3 + 1 = 4. Nothing is recomputed (cost 9, every node
  // once); the peak is the lower bound, 5, at big and x and at gx (gh 2 +
  // gx 3). Plain training (noremat) needs 6, checkpoint_last 10.
  Graph g = LinearLayer();
  for (int64_t budget : {int64_t{5}, int64_t{7}, kUnboundedBudget}) {
    SolveResult r = Solve("checkpoint_reuse", g, budget);
    EXPECT_EQ(r.status, Status::kFeasible) << budget;
    EXPECT_EQ(r.peak_bytes, 5) << budget;
    EXPECT_EQ(r.cost, 9) << budget;
  }
  EXPECT_EQ(Solve("noremat", g, kUnboundedBudget).peak_bytes, 6);
  EXPECT_EQ(Solve("checkpoint_reuse", g, 4).status, Status::kInfeasible);
}

TEST(CheckpointReuse, InTopologicalOrderTheInputGradientBlocksTheKeep) {
  // Stages as checkpoint_last's. At gw, keeping x from step 3 would hold it
  // through gx's step (gh 2 + gx 3 = 5): 6 > 5, so x is recomputed, and so
  // are big and x0 (their spans hold 5 too): checkpoint_last's schedule,
  // peak 10. With a budget of 6 the keep fits: peak 6 (gh + gx + x at gx),
  // cost 9.
  Graph g = LinearLayer();
  SolveResult tight = Solve("checkpoint_reuse", g, 5, {"order=topo"});
  EXPECT_EQ(tight.status, Status::kInfeasible);
  EXPECT_EQ(tight.peak_bytes, 10);
  EXPECT_EQ(tight.cost, 12);
  SolveResult roomy = Solve("checkpoint_reuse", g, 6, {"order=topo"});
  EXPECT_EQ(roomy.status, Status::kFeasible);
  EXPECT_EQ(roomy.peak_bytes, 6);
  EXPECT_EQ(roomy.cost, 9);
}

TEST(CheckpointReuse, ChainKeepsEveryValueWithoutABudget) {
  // Unbounded, every forward value is kept: each node computed once, the
  // cost of plain training (chain:n=16: 33).
  SolveResult r =
      Solve("checkpoint_reuse", LoadGraph("chain:n=16"), kUnboundedBudget);
  EXPECT_EQ(r.status, Status::kFeasible);
  EXPECT_EQ(r.cost, 33);
}

TEST(CheckpointReuse, FitsWhereCheckpointLastFitsAndCostsNoMore) {
  // Its last candidate is checkpoint_last's schedule, so at
  // checkpoint_last's peak it always fits, at no more cost.
  std::vector<std::string> specs = testing::FixtureGraphSpecs();
  for (const char* torch :
       {"resnet50_b2_i64_aten", "unet_l4_c16_b2_i64_aten",
        "transformer_l2_d64_h4_s16_b2_aten", "pspnet_resnet50_b2_i64_aten"}) {
    specs.push_back(std::string(REMAT_SOURCE_DIR) + "/graphs/corpus/torch/" +
                    torch + ".json");
  }
  for (const std::string& spec : specs) {
    Graph g = LoadGraph(spec);
    SolveResult last = Solve("checkpoint_last", g, kUnboundedBudget);
    SolveResult reuse = Solve("checkpoint_reuse", g, last.peak_bytes);
    EXPECT_EQ(reuse.status, Status::kFeasible) << spec;
    EXPECT_LE(reuse.cost, last.cost) << spec;
  }
}

}  // namespace
}  // namespace remat
