// The simulator against hand-computed answers on tiny inline graphs.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <random>

#include "model/errors.h"
#include "model/graph_source.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::GraphFromNodes;
using E = Event;

// a(4) -> b(2, workspace 3), a -> c(2), {b, c} -> d(1); d is the target.
Graph Diamond() {
  return GraphFromNodes(R"([
    {"id": 0, "mem": 4, "cost": 10, "inputs": []},
    {"id": 1, "mem": 2, "cost": 5, "workspace": 3, "inputs": [0]},
    {"id": 2, "mem": 2, "cost": 5, "inputs": [0]},
    {"id": 3, "mem": 1, "cost": 1, "inputs": [1, 2]}])");
}

TEST(Simulator, PeakCountsLiveValuesTheNewValueAndItsWorkspace) {
  Graph g = Diamond();
  Schedule s = {E::Compute(0), E::Compute(1), E::Compute(2), E::Free(0),
                E::Compute(3), E::Free(1),    E::Free(2),    E::Free(3)};
  SimulationResult r = Simulate(g, s, {.record_timeline = true});
  ASSERT_TRUE(r.valid) << r.error;
  // compute b: a(4) live + b(2) + workspace 3 = 9; compute c: 4+2+2 = 8.
  EXPECT_EQ(r.peak_bytes, 9);
  EXPECT_EQ(r.cost, 21);
  EXPECT_EQ(r.base_cost, 21);
  EXPECT_DOUBLE_EQ(r.overhead, 1.0);
  EXPECT_EQ(r.length, 4);
  EXPECT_EQ(r.memory_at_event,
            (std::vector<int64_t>{4, 9, 8, 4, 5, 3, 1, 0}));
}

TEST(Simulator, RecomputationAddsCostAndCanLowerThePeak) {
  Graph g = Diamond();
  // Free a after b and recompute it for c: the cost grows by a's 10, the
  // peak stays b's 9 (a live, b and its workspace).
  Schedule s = {E::Compute(0), E::Compute(1), E::Free(0), E::Compute(0),
                E::Compute(2), E::Free(0),    E::Compute(3)};
  SimulationResult r = Simulate(g, s);
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.cost, 31);
  EXPECT_EQ(r.length, 5);
  EXPECT_DOUBLE_EQ(r.overhead, 31.0 / 21.0);
  EXPECT_EQ(r.peak_bytes, 9);
}

TEST(Simulator, ComputeWithAMissingInputIsIllegal) {
  SimulationResult r =
      Simulate(Diamond(), Schedule{E::Compute(0), E::Free(0), E::Compute(1)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 2);
  EXPECT_NE(r.error.find("input 0 ('n0') is not live"), std::string::npos)
      << r.error;
}

TEST(Simulator, ComputingALiveValueAgainIsIllegal) {
  SimulationResult r =
      Simulate(Diamond(), Schedule{E::Compute(0), E::Compute(0)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 1);
  EXPECT_NE(r.error.find("already live"), std::string::npos) << r.error;
}

TEST(Simulator, FreeingADeadValueIsIllegal) {
  SimulationResult r = Simulate(Diamond(), Schedule{E::Compute(0), E::Free(1)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 1);
  EXPECT_NE(r.error.find("is not live"), std::string::npos) << r.error;
}

TEST(Simulator, UnknownNodesAreIllegal) {
  SimulationResult r = Simulate(Diamond(), Schedule{E::Compute(7)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 0);
}

TEST(Simulator, EveryTargetMustBeComputed) {
  SimulationResult r = Simulate(Diamond(), Schedule{E::Compute(0)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 1);  // the schedule's length: nothing was illegal
  EXPECT_NE(r.error.find("target 3 ('n3') is never computed"),
            std::string::npos);
}

TEST(Simulator, AnInvalidScheduleStillReportsTheGraphsBaseCost) {
  // d before c: the schedule stops at event 2, but computing each needed
  // node once still costs 10 + 5 + 5 + 1.
  SimulationResult r = Simulate(
      Diamond(),
      Schedule{E::Compute(0), E::Compute(1), E::Compute(3), E::Compute(2)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 2);
  EXPECT_EQ(r.base_cost, 21);
}

TEST(Simulator, TargetsMayBeFreedRightAway) {
  Graph g = GraphFromNodes(R"([{"id": 0, "mem": 3, "cost": 1, "inputs": []}])");
  EXPECT_TRUE(Simulate(g, Schedule{E::Compute(0), E::Free(0)}).valid);
}

TEST(Simulator, EmptyScheduleOfAGraphWithoutTargetsIsValid) {
  Graph g = GraphFromNodes(
      R"([{"id": 0, "mem": 3, "cost": 1, "inputs": [], "target": false}])");
  SimulationResult r = Simulate(g, Schedule{});
  EXPECT_TRUE(r.valid);
  EXPECT_EQ(r.base_cost, 0);
  EXPECT_DOUBLE_EQ(r.overhead, 1.0);
}

TEST(Bounds, DiamondByHand) {
  Graph g = Diamond();
  EXPECT_EQ(MemoryLowerBound(g), 9);  // b: 2 + 3 + a's 4
  EXPECT_EQ(BaseCost(g), 21);
  EXPECT_EQ(NoRematPeak(g), 9);
}

TEST(Bounds, NodesNoTargetNeedsAreIgnored) {
  // Node 2 is a sink marked not a target: it adds neither cost nor memory.
  Graph g = GraphFromNodes(R"([
    {"id": 0, "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 2, "mem": 50, "cost": 50, "inputs": [0], "target": false}])");
  EXPECT_EQ(BaseCost(g), 2);
  EXPECT_EQ(MemoryLowerBound(g), 2);
  EXPECT_EQ(NoRematPeak(g), 2);
}

// chain:n=N (unit sizes): the NoRemat order is f1..fn, loss, gn..g1. When gn
// is computed, f1..fn and the loss are live: peak = n + 2. The lower bound
// is a gradient with its two inputs: 3. Base cost = 2n + 1.
TEST(Bounds, ChainByFormula) {
  for (int n : {1, 2, 16, 100}) {
    Graph g = LoadGraph("chain:n=" + std::to_string(n));
    EXPECT_EQ(NoRematPeak(g), n + 2) << n;
    EXPECT_EQ(MemoryLowerBound(g), 3) << n;
    EXPECT_EQ(BaseCost(g), 2 * n + 1) << n;
  }
  Graph scaled = LoadGraph("chain:n=16,mem=1KiB,cost=7");
  EXPECT_EQ(NoRematPeak(scaled), 18 * 1024);
  EXPECT_EQ(BaseCost(scaled), 33 * 7);
}

// Property: sizes and costs near int64's end either make the
// graph refused (naming a node) or give figures that are exact, never a
// wrapped sum: a schedule whose cost passes int64 is invalid, naming the
// compute, with the cost of the events before it.
TEST(Simulator, SumsNeverWrapOnExtremeSizesAndCosts) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> values = {0,
                                       1,
                                       1000,
                                       int64_t{1} << 40,
                                       int64_t{1} << 61,
                                       int64_t{1} << 62,
                                       kMax / 3,
                                       kMax / 2,
                                       kMax - 1,
                                       kMax};
  std::mt19937_64 rng(31);
  const auto draw = [&] { return values[rng() % values.size()]; };
  int built = 0, refused = 0, overflowed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 5);
    GraphBuilder builder("extreme");
    const int64_t static_bytes = trial % 3 == 0 ? draw() : 0;
    builder.set_static_bytes(static_bytes);
    __int128 memory = static_bytes, cost = 0;
    for (NodeId v = 0; v < n; ++v) {
      NodeSpec node;
      node.id = v;
      node.mem = draw();
      node.cost = trial % 4 < 2 ? draw() : static_cast<int64_t>(rng() % 100);
      node.workspace = trial % 2 == 0 ? draw() : 0;
      if (v > 0) node.inputs = {static_cast<NodeId>(rng() % v)};
      memory += node.mem;
      memory += node.workspace;
      cost += node.cost;
      builder.add_node(std::move(node));
    }
    const bool fits = memory <= kMax && cost <= kMax;
    std::optional<Graph> g;
    try {
      g.emplace(std::move(builder).Build());
    } catch (const InputError& e) {
      EXPECT_FALSE(fits) << "refused a graph whose sums fit: " << e.what();
      EXPECT_NE(std::string(e.what()).find("extreme: node "), std::string::npos)
          << e.what();
      ++refused;
      continue;
    }
    ASSERT_TRUE(fits) << "trial " << trial << ": built a graph whose sums "
                      << "overflow int64";
    ++built;
    EXPECT_GE(MemoryLowerBound(*g), 0);
    EXPECT_GE(BaseCost(*g), 0);
    EXPECT_GE(LongestPathCost(*g), 0);
    const int64_t noremat_peak = NoRematPeak(*g);
    EXPECT_GE(noremat_peak, 0);
    EXPECT_LE(noremat_peak, kMax - g->static_bytes());  // total_peak fits

    // Every node in id order, all freed, `rounds` times: recomputation.
    Schedule schedule;
    __int128 schedule_cost = 0;
    const int rounds = 1 + static_cast<int>(rng() % 4);
    for (int round = 0; round < rounds; ++round) {
      for (NodeId v = 0; v < n; ++v) {
        schedule.push_back(Event::Compute(v));
        schedule_cost += g->cost(v);
      }
      for (NodeId v = 0; v < n; ++v) schedule.push_back(Event::Free(v));
    }
    SimulationResult r = Simulate(*g, schedule, {.critical_path = true});
    EXPECT_GE(r.cost, 0) << "trial " << trial;
    EXPECT_GE(r.peak_bytes, 0) << "trial " << trial;
    EXPECT_LE(r.peak_bytes, kMax - g->static_bytes()) << "trial " << trial;
    EXPECT_GE(r.makespan, 0) << "trial " << trial;
    EXPECT_GE(r.critical_path, 0) << "trial " << trial;
    EXPECT_GE(r.parallelism, 0) << "trial " << trial;
    if (schedule_cost <= kMax) {
      EXPECT_TRUE(r.valid) << "trial " << trial << ": " << r.error;
      EXPECT_EQ(r.cost, static_cast<int64_t>(schedule_cost));
    } else {
      ++overflowed;
      EXPECT_FALSE(r.valid) << "trial " << trial;
      EXPECT_NE(r.error.find("takes the total cost past int64"),
                std::string::npos)
          << r.error;
      EXPECT_LE(r.makespan, static_cast<double>(kMax));
    }
  }
  // Each branch is taken often enough to mean something.
  EXPECT_GT(built, 300);
  EXPECT_GT(refused, 300);
  EXPECT_GT(overflowed, 30);
}

}  // namespace
}  // namespace remat
