// The offloading algorithms (vdnn, swap_remat) and the placement of
// offloads they share, against hand-worked answers and the hybrid's goal.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>

#include "algorithms/offload/idle_spans.h"
#include "harness/runner.h"
#include "harness/sweep.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::GraphFromNodes;
using E = Event;

// a -> b -> c -> d, and d also reads a: a is unread while c is computed.
Graph Skip4() {
  return GraphFromNodes(R"([
    {"id": 0, "mem": 4, "cost": 2, "inputs": []},
    {"id": 1, "mem": 4, "cost": 2, "inputs": [0]},
    {"id": 2, "mem": 4, "cost": 2, "inputs": [1]},
    {"id": 3, "mem": 4, "cost": 2, "inputs": [0, 2]}])");
}

TEST(IdleSpans, TheLongestUnreadStretchOfEachInstance) {
  Graph g = Skip4();
  const Schedule plain = InsertFrees(g, NoRematOrder(g));
  // c0 c1 c2 f1 c3 ...: a is read by b (event 1) and next by d (event 4).
  const std::vector<IdleSpan> spans =
      LongestIdleSpans(g, plain, [](NodeId) { return true; });
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].value, 0);
  EXPECT_EQ(spans[0].after, 1);
  EXPECT_EQ(spans[0].before, 4);
  EXPECT_EQ(spans[0].idle_cost, 2);
  EXPECT_TRUE(
      LongestIdleSpans(g, plain, [](NodeId v) { return v != 0; }).empty());
  // Offloaded after b, waited for, prefetched right before d (lookahead
  // 0) or one compute earlier, before c (lookahead 1).
  EXPECT_EQ(WithOffloads(plain, spans, 0, true),
            (Schedule{E::Compute(0), E::Compute(1), E::Offload(0), E::Wait(0),
                      E::Compute(2), E::Free(1), E::Prefetch(0), E::Compute(3),
                      E::Free(0), E::Free(2), E::Free(3)}));
  EXPECT_EQ(WithOffloads(plain, spans, 1, false),
            (Schedule{E::Compute(0), E::Compute(1), E::Offload(0),
                      E::Prefetch(0), E::Compute(2), E::Free(1), E::Compute(3),
                      E::Free(0), E::Free(2), E::Free(3)}));
}

Attempt Solve(const Graph& g, const std::string& algorithm,
              std::vector<std::string> params, int64_t budget,
              const TimingModel& timing) {
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  return RunAlgorithm(g, info, Params::Parse(params, info.params, algorithm),
                      budget, 60, nullptr, nullptr, &timing);
}

TEST(Vdnn, OffloadsOnlyConvolutionInputsUnderPolicyConv) {
  // x -> conv -> relu -> loss, with a backward reading x and relu's input.
  Graph g = GraphFromNodes(R"([
    {"id": 0, "mem": 8, "cost": 1, "inputs": [], "name": "x"},
    {"id": 1, "mem": 8, "cost": 9, "inputs": [0], "op": "conv2d"},
    {"id": 2, "mem": 8, "cost": 1, "inputs": [1], "op": "relu"},
    {"id": 3, "mem": 1, "cost": 1, "inputs": [2], "kind": "loss"},
    {"id": 4, "mem": 8, "cost": 2, "inputs": [3, 1], "kind": "backward"},
    {"id": 5, "mem": 8, "cost": 9, "inputs": [4, 0], "kind": "backward"}])");
  const TimingModel timing;
  auto transfers_of = [&](const char* policy) {
    const Attempt a = Solve(g, "vdnn", {policy}, kUnboundedBudget, timing);
    std::vector<NodeId> moved;
    for (const Event& e : *a.output.schedule) {
      if (e.op == Event::Op::kOffload) moved.push_back(e.node);
    }
    EXPECT_TRUE(a.simulation->valid) << a.simulation->error;
    return moved;
  };
  EXPECT_EQ(transfers_of("policy=conv"), (std::vector<NodeId>{0}));
  EXPECT_EQ(transfers_of("policy=all"), (std::vector<NodeId>{0, 1}));
}

TEST(Vdnn, DynamicPolicyOffloadsOnlyWhenTheBudgetAsks) {
  Graph g = LoadGraph("resnet:depth=18,batch=2,image=32");
  const TimingModel timing;
  const Attempt roomy =
      Solve(g, "vdnn", {}, NoRematPeak(g), timing);
  EXPECT_EQ(roomy.output.message, "policy none");
  EXPECT_EQ(roomy.simulation->transfer_bytes, 0);
  const Attempt tight = Solve(g, "vdnn", {}, MemoryLowerBound(g), timing);
  EXPECT_EQ(tight.output.message, "policy all");
  EXPECT_GT(tight.simulation->transfer_bytes, 0);
}

// The hybrid's goal, on graphs small enough for a unit test (the default
// corpus at three links is scripts/reproduce.py offload2016): swap_remat's
// makespan is no worse than vdnn's or any of its remat algorithms' at
// every budget where those fit.
TEST(SwapRemat, NeverSlowerThanRematOnlyOrVdnn) {
  for (const char* spec :
       {"resnet:depth=18,batch=2,image=32",
        "transformer:layers=1,d_model=32,heads=2,seq=16,batch=2",
        "chain:n=12,mem=4096,cost=1000000"}) {
    Graph g = LoadGraph(spec);
    const AlgorithmInfo& swap = FindAlgorithm("swap_remat");
    const Params params = Params::Parse({}, swap.params, "swap_remat");
    std::vector<std::string> rivals = params.List("remat");
    rivals.push_back("vdnn");
    for (const char* link : {"pcie3", "nvlink-c2c"}) {
      TimingModel timing;
      timing.link = ParseLink(link);
      for (int64_t budget :
           BudgetGrid(MemoryLowerBound(g), NoRematPeak(g), 4)) {
        SCOPED_TRACE(fmt::format("{} over {} at {}", spec, link, budget));
        const Attempt ours = Solve(g, "swap_remat", {}, budget, timing);
        const bool ours_fit = ours.simulation && ours.simulation->valid &&
                              ours.simulation->peak_bytes <= budget;
        for (const std::string& rival : rivals) {
          const Attempt theirs = Solve(g, rival, {}, budget, timing);
          if (!theirs.simulation || !theirs.simulation->valid ||
              theirs.simulation->peak_bytes > budget) {
            continue;
          }
          ASSERT_TRUE(ours_fit) << rival << " fits";
          EXPECT_LE(ours.simulation->makespan, theirs.simulation->makespan)
              << rival;
        }
      }
    }
  }
}

}  // namespace
}  // namespace remat
