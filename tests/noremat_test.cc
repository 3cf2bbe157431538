// noremat and checkpoint_last against hand-computed answers.
#include <gtest/gtest.h>

#include "harness/graph_source.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "tests/test_support.h"

namespace remat {
namespace {

SolveResult Solve(const std::string& algorithm, const Graph& graph,
                  int64_t budget, std::vector<std::string> params = {}) {
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  Attempt attempt = RunAlgorithm(
      graph, info, Params::Parse(params, info.params, algorithm), budget, 0);
  return Judge(attempt, budget);
}

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

}  // namespace
}  // namespace remat
