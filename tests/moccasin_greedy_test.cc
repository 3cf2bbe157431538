// moccasin's greedy walk (algorithms/checkmate/moccasin_greedy.h): its
// schedules are in Moccasin's class and within the budget, it recomputes
// nothing where nothing needs to be, it finds nothing where the class has
// nothing (chain:n=4 at 3 units, which needs 4 computes of a value), and it
// is never cheaper than the class's optimum that moccasin proves.
#include "algorithms/checkmate/moccasin_greedy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "algorithms/checkmate/moccasin_cp.h"
#include "model/graph_source.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

int64_t BaseCostOf(const Graph& g) {
  int64_t cost = 0;
  for (NodeId v : NoRematOrder(g)) cost += g.cost(v);
  return cost;
}

// The walk's answer, checked to be a schedule of the class: valid, within
// the budget, at most `computes` intervals per value, admitted by the
// interval model.
std::optional<Incumbent> CheckedWalk(const Graph& g, int64_t budget,
                                     int computes,
                                     int max_walks = kMaxRepairWalks) {
  const CheckmateModel model(g, budget, NoRematOrder(g), computes);
  std::optional<Incumbent> walked = GreedyIntervalStart(
      g, model, budget, computes, Deadline::Never(), max_walks);
  if (!walked) return walked;
  const SimulationResult sim = Simulate(g, walked->schedule);
  EXPECT_TRUE(sim.valid) << sim.error;
  EXPECT_LE(sim.peak_bytes, budget);
  EXPECT_EQ(sim.cost, walked->cost);
  const std::optional<RetentionIntervals> intervals =
      IntervalsOf(model, walked->schedule);
  EXPECT_TRUE(intervals.has_value());
  if (intervals) {
    for (const auto& value : *intervals) {
      EXPECT_GE(value.size(), 1u);
      EXPECT_LE(value.size(), static_cast<size_t>(computes));
    }
    EXPECT_TRUE(IntervalModelAdmits(g, model, *intervals, budget));
  }
  return walked;
}

TEST(MoccasinGreedy, RecomputesNothingAtTheNoRematPeak) {
  for (const std::string spec :
       {"chain:n=8", "random_layered:n=20", "random_layered:n=40,seed=3"}) {
    const Graph g = LoadGraph(spec);
    const std::optional<Incumbent> walked = CheckedWalk(g, NoRematPeak(g), 2);
    ASSERT_TRUE(walked.has_value()) << spec;
    EXPECT_EQ(walked->cost, BaseCostOf(g)) << spec;
  }
}

// chain:n=4 at 3 units: every schedule computes some value 4 times, so the
// class of two computes has none (moccasin_test.cc proves it), nor of
// three; with four the walk finds one.
TEST(MoccasinGreedy, FindsNothingWhereTheClassIsEmpty) {
  const Graph g = LoadGraph("chain:n=4");
  EXPECT_FALSE(CheckedWalk(g, 3, 2).has_value());
  EXPECT_FALSE(CheckedWalk(g, 3, 3).has_value());
  EXPECT_TRUE(CheckedWalk(g, 3, 4).has_value());
}

// Below the NoRemat peak the walk recomputes, stays in the class, and is
// never cheaper than moccasin's proven optimum (its class's); on a chain of
// 8 at 5 units it finds a schedule (two computes suffice there).
TEST(MoccasinGreedy, NeverBelowTheClassOptimum) {
  const Graph chain = LoadGraph("chain:n=8");
  const std::optional<Incumbent> at5 = CheckedWalk(chain, 5, 2);
  ASSERT_TRUE(at5.has_value());
  EXPECT_GT(at5->cost, BaseCostOf(chain));
  int found = 0;
  for (const std::string spec : {"chain:n=8", "random_layered:n=20"}) {
    const Graph g = LoadGraph(spec);
    const int64_t lb = MemoryLowerBound(g), peak = NoRematPeak(g);
    for (int64_t budget = lb; budget <= peak;
         budget += std::max<int64_t>(1, (peak - lb) / 5)) {
      const std::optional<Incumbent> walked = CheckedWalk(g, budget, 2);
      if (!walked) continue;
      ++found;
      const SolveResult exact = testing::Solve(
          "moccasin", g, budget, {"solver=highs", "stage_order=graph"});
      ASSERT_EQ(exact.status, Status::kFeasible) << exact.message;
      ASSERT_TRUE(exact.optimal) << spec << " " << budget;
      EXPECT_GE(walked->cost, exact.cost) << spec << " " << budget;
    }
  }
  EXPECT_GE(found, 4);
}

// Where each rule's first walk meets a compute it cannot fit, walking
// again with what the failure taught finds a schedule of the class
// (Checkmate's 250-node random graph at 90% of its NoRemat peak is such a
// case); found by running both on random_layered graphs of 20 to 60
// nodes.
TEST(MoccasinGreedy, WalksAgainWhereTheFirstWalksFail) {
  for (const auto& [spec, budget] :
       {std::pair<std::string, int64_t>{"random_layered:n=20,seed=7", 21618},
        {"random_layered:n=30,seed=4", 26834},
        {"random_layered:n=60,seed=1", 39452}}) {
    const Graph g = LoadGraph(spec);
    EXPECT_FALSE(CheckedWalk(g, budget, 2, 1).has_value()) << spec;
    EXPECT_TRUE(CheckedWalk(g, budget, 2).has_value()) << spec;
  }
}

// The stages without the MILP (moccasin on CP-SAT builds them so)
// are the stages with it: the same structure, sizes, scales and staged
// schedules (here dtr's, in the order of its first computes), and the
// MILP's readers refuse.
TEST(MoccasinGreedy, StagesWithoutTheMilpAreTheSame) {
  const Graph g = LoadGraph("random_layered:n=30,seed=2");
  const int64_t budget = NoRematPeak(g);
  const AlgorithmInfo& info = FindAlgorithm("dtr");
  const int64_t below = (MemoryLowerBound(g) + budget) / 2;
  const Attempt dtr =
      RunAlgorithm(g, info, Params::Parse({}, info.params, "dtr"), below, 60);
  ASSERT_TRUE(dtr.output.schedule.has_value()) << dtr.output.message;
  const Schedule& schedule = *dtr.output.schedule;
  const std::optional<std::vector<NodeId>> order =
      FirstComputeOrder(g, schedule);
  ASSERT_TRUE(order.has_value());
  const CheckmateModel full(g, budget, *order, 2);
  const CheckmateModel bare(g, budget, *order, 2, false);
  EXPECT_TRUE(full.has_milp());
  EXPECT_FALSE(bare.has_milp());
  EXPECT_GT(full.num_cols(), 0);
  EXPECT_EQ(bare.num_cols(), 0);
  EXPECT_EQ(bare.order(), full.order());
  EXPECT_EQ(bare.inputs(), full.inputs());
  EXPECT_EQ(bare.consumers(), full.consumers());
  EXPECT_EQ(bare.mem_bytes(), full.mem_bytes());
  EXPECT_EQ(bare.workspace_bytes(), full.workspace_bytes());
  EXPECT_EQ(bare.cost_scale(), full.cost_scale());
  const std::optional<Schedule> staged = full.Staged(schedule);
  ASSERT_TRUE(staged.has_value());
  EXPECT_EQ(bare.Staged(schedule), staged);
  EXPECT_THROW(bare.PointOf(schedule), std::logic_error);
}

}  // namespace
}  // namespace remat
