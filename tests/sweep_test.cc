// The sweep: its budget grid, its output shape, and output that does not
// depend on the thread count.
#include <gtest/gtest.h>

#include "harness/errors.h"
#include "harness/liveness.h"
#include "harness/registry.h"
#include "harness/simulator.h"
#include "harness/sweep.h"
#include "tests/test_support.h"

namespace remat {
namespace {

TEST(BudgetGrid, EvenlySpacedRoundedUpBothEndsIncluded) {
  EXPECT_EQ(BudgetGrid(3, 18, 4), (std::vector<int64_t>{3, 8, 13, 18}));
  // 10/3 = 3.33 -> 4, 6.67 -> 7.
  EXPECT_EQ(BudgetGrid(0, 10, 4), (std::vector<int64_t>{0, 4, 7, 10}));
  // Fewer distinct bytes than points: no repeats.
  EXPECT_EQ(BudgetGrid(5, 7, 16), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(BudgetGrid(9, 9, 16), (std::vector<int64_t>{9}));
  EXPECT_EQ(BudgetGrid(3, 18, 1), (std::vector<int64_t>{18}));
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(BudgetGrid(0, big, 3), (std::vector<int64_t>{0, big / 2, big}));
}

// Drops what legitimately differs between two runs: timings and context.
nlohmann::json Stable(nlohmann::json results) {
  results.erase("context");
  for (auto& run : results["runs"]) {
    for (auto& point : run["points"]) point.erase("solve_seconds");
  }
  return results;
}

SweepConfig SmallSweep() {
  SweepConfig config;
  config.graph_specs = testing::FixtureGraphSpecs();
  config.algorithm_specs = {"noremat", "noremat:order=dfs", "checkpoint_last"};
  config.budgets_per_graph = 5;
  return config;
}

TEST(Sweep, OutputIsTheSameWhateverTheThreadCount) {
  SweepConfig config = SmallSweep();
  config.threads = 1;
  nlohmann::json one = RunSweep(config);
  config.threads = 2;
  nlohmann::json two = RunSweep(config);
  EXPECT_EQ(Stable(one).dump(), Stable(two).dump());
}

TEST(Sweep, WritesEveryRunSortedWithAPointPerBudget) {
  nlohmann::json results = RunSweep(SmallSweep());
  EXPECT_EQ(results["format"], "rematbench-results");
  EXPECT_EQ(results["version"], 1);
  const size_t graphs = testing::FixtureGraphSpecs().size();
  ASSERT_EQ(results["graphs"].size(), graphs);
  ASSERT_EQ(results["runs"].size(), graphs * 3);
  std::vector<std::tuple<std::string, std::string, std::string>> keys;
  for (const auto& run : results["runs"]) {
    std::string params;
    for (const auto& [name, value] : run["params"].items()) {
      params += name + "=" + value.get<std::string>() + ",";
    }
    keys.emplace_back(run["graph"], run["algorithm"], params);
    int64_t previous = -1;
    for (const auto& point : run["points"]) {
      EXPECT_GT(point["budget_bytes"].get<int64_t>(), previous);
      previous = point["budget_bytes"];
      for (const char* field : {"status", "peak_bytes", "cost", "overhead",
                                "length", "solve_seconds", "message"}) {
        EXPECT_TRUE(point.contains(field)) << field;
      }
    }
  }
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  // noremat fits exactly from the NoRemat peak on: the last point.
  for (const auto& run : results["runs"]) {
    if (run["algorithm"] != "noremat" || !run["params"].empty()) continue;
    EXPECT_EQ(run["points"].back()["status"], "feasible") << run["graph"];
  }
}

TEST(Sweep, RefusesUnknownAlgorithmsAndParametersBeforeRunning) {
  SweepConfig config = SmallSweep();
  config.algorithm_specs = {"noremat:order=sideways"};
  EXPECT_THROW(RunSweep(config), InputError);
  config.algorithm_specs = {"no_such_algorithm"};
  EXPECT_THROW(RunSweep(config), InputError);
  config.algorithm_specs = {"noremat"};
  config.graph_specs = {"no_such_file.json"};
  EXPECT_THROW(RunSweep(config), InputError);
}

// A stand-in exact method for the gap bookkeeping: the NoRemat schedule
// costs exactly the base cost, which bounds every schedule, so wherever it
// fits it is a proven optimum.
class ProvenNoRemat : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph, const SolveRequest&) override {
    AlgorithmOutput output = AlgorithmOutput::Found(
        InsertFrees(graph, NoRematOrder(graph)), "proven by the base cost");
    output.lower_bound_cost = BaseCost(graph);
    output.optimal = true;
    output.extra["staged_lower_bound_cost"] = BaseCost(graph) / 2;
    return output;
  }
};

const bool kProvenRegistered = RegisterAlgorithm({
    .name = "test_proven_noremat",
    .description = "test only",
    .citation = "test",
    .exact = true,
    .create = [] { return std::make_unique<ProvenNoRemat>(); },
});

TEST(Sweep, PointsGetGapsAgainstProvenOptimaAndStagedBounds) {
  SweepConfig config;
  config.graph_specs = {"chain:n=4"};  // base cost 9, NoRemat peak 6
  config.algorithm_specs = {"test_proven_noremat", "checkpoint_last"};
  config.budgets_per_graph = 4;  // 3, 4, 5, 6
  nlohmann::json results = RunSweep(config);
  const auto& last = results["runs"][0];  // checkpoint_last sorts first
  ASSERT_EQ(last["algorithm"], "checkpoint_last");
  // checkpoint_last on chain:n=4 costs 4 + 1 + 10 + 4 = 19.
  for (const auto& point : last["points"]) {
    ASSERT_EQ(point["cost"], 19);
    // A staged bound holds at its budget whether or not its own schedule
    // fits; a global optimum exists only where the stand-in fits (6).
    EXPECT_DOUBLE_EQ(point["staged_gap"].get<double>(), 19.0 / 4 - 1);
    if (point["budget_bytes"] == 6) {
      EXPECT_DOUBLE_EQ(point["gap"].get<double>(), 19.0 / 9 - 1);
    } else {
      EXPECT_FALSE(point.contains("gap")) << point.dump();
    }
  }
}

TEST(Corpus, TheDefaultCorpusLoads) {
  std::vector<std::string> specs =
      ReadCorpus(testing::SourceDir() + "/graphs/corpus/default.json");
  EXPECT_FALSE(specs.empty());
}

}  // namespace
}  // namespace remat
