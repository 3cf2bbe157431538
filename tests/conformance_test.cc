// The conformance suite: every registered algorithm on every fixture graph
// at several budgets. Whatever an algorithm answers must be consistent with
// the simulator — so a new algorithm is covered without new test code.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/runner.h"
#include "harness/sweep.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, EveryAnswerAgreesWithTheSimulator) {
  const AlgorithmInfo& algorithm = FindAlgorithm(GetParam());
  const Params params = Params::Parse({}, algorithm.params, algorithm.name);
  for (const std::string& spec : testing::FixtureGraphSpecs()) {
    Graph graph = LoadGraph(spec);
    const int64_t base_cost = BaseCost(graph);
    const int64_t lower_bound = MemoryLowerBound(graph);
    for (int64_t budget :
         BudgetGrid(lower_bound, NoRematPeak(graph), /*count=*/4)) {
      SCOPED_TRACE(
          fmt::format("{} on {} at budget {}", algorithm.name, spec, budget));
      Attempt attempt = RunAlgorithm(graph, algorithm, params, budget,
                                     /*timeout_seconds=*/20);
      SolveResult result = Judge(attempt, budget);
      ASSERT_NE(result.status, Status::kError) << result.message;
      if (!attempt.output.schedule) continue;
      // The harness's own verdict, re-derived here from the simulator.
      SimulationResult sim = Simulate(graph, *attempt.output.schedule,
                                      {.critical_path = true});
      ASSERT_TRUE(sim.valid) << sim.error;
      EXPECT_GE(sim.cost, base_cost);
      EXPECT_GE(sim.peak_bytes, lower_bound);
      EXPECT_EQ(result.peak_bytes, sim.peak_bytes);
      EXPECT_EQ(result.cost, sim.cost);
      // The timeline: the compute stream runs every compute, and on
      // unlimited lanes a schedule takes at least the graph's longest path
      // and at most its makespan; without transfers time is cost.
      EXPECT_GE(sim.makespan, static_cast<double>(sim.cost));
      if (sim.transfer_bytes == 0) {
        EXPECT_EQ(sim.makespan, static_cast<double>(sim.cost));
      }
      EXPECT_GE(sim.critical_path,
                static_cast<double>(LongestPathCost(graph)));
      EXPECT_LE(sim.critical_path, sim.makespan);
      if (result.status == Status::kFeasible) {
        EXPECT_LE(sim.peak_bytes, budget);
      }
      if (result.status == Status::kInfeasible) {
        EXPECT_GT(sim.peak_bytes, budget);
      }
      // No method may look broken where doing nothing fits.
      if (budget == NoRematPeak(graph) &&
          result.status != Status::kUnsupported) {
        EXPECT_EQ(result.status, Status::kFeasible) << result.message;
      }
      if (result.lower_bound_cost) {
        EXPECT_LE(*result.lower_bound_cost, sim.cost);
        EXPECT_GE(*result.lower_bound_cost, base_cost);
      }
    }
  }
}

std::vector<std::string> AlgorithmNames() {
  std::vector<std::string> names;
  for (const AlgorithmInfo* info : AllAlgorithms()) names.push_back(info->name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, Conformance,
                         ::testing::ValuesIn(AlgorithmNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace remat
