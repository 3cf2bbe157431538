// The sweep: its budget grid, its output shape, and output that does not
// depend on the thread count.
#include "harness/sweep.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>

#include "model/errors.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/schedule.h"
#include "model/simulator.h"
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
    output.staged_lower_bound_cost = BaseCost(graph) / 2;
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

// Counts its preparations; solves with NoRemat. A sweep must prepare once
// per graph and algorithm run, however many budgets and threads.
std::atomic<int> preparations{0};

struct Marker {};

class CountingPreparations : public PreparedAlgorithm<Marker> {
 private:
  std::shared_ptr<const Marker> PrepareGraph(const Graph&,
                                             const SolveRequest&) override {
    ++preparations;
    return std::make_shared<const Marker>();
  }
  AlgorithmOutput RunPrepared(const Graph& graph, const SolveRequest&,
                              const Marker* marker) override {
    if (!marker) return AlgorithmOutput::NoSchedule(Status::kError, "none");
    return AlgorithmOutput::Found(InsertFrees(graph, NoRematOrder(graph)));
  }
};

const bool kCountingRegistered = RegisterAlgorithm({
    .name = "test_counting_preparations",
    .description = "test only",
    .citation = "test",
    .params = {{.name = "k",
                .type = ParamSpec::Type::kInt,
                .default_value = "0",
                .description = "distinguishes runs"}},
    .create = [] { return std::make_unique<CountingPreparations>(); },
});

TEST(Sweep, PreparesOncePerGraphAndAlgorithmRun) {
  SweepConfig config;
  config.graph_specs = {"chain:n=8", "chain:n=12",
                        "tests/fixtures/diamond.json"};
  config.graph_specs.back() =
      testing::SourceDir() + "/" + config.graph_specs.back();
  config.algorithm_specs = {"test_counting_preparations",
                            "test_counting_preparations:k=1"};
  config.budgets_per_graph = 6;
  config.threads = 2;
  preparations = 0;
  nlohmann::json results = RunSweep(config);
  EXPECT_EQ(preparations, 3 * 2);
  for (const auto& run : results["runs"]) {
    for (const auto& point : run["points"]) {
      EXPECT_NE(point["status"], "error") << point.dump();
    }
  }
}

TEST(Sweep, SchedulesDirKeepsEveryPointsScheduleBesideTheResults) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      fmt::format("remat_sweep_test_{}", getpid());
  std::filesystem::remove_all(dir);
  SweepConfig config = SmallSweep();
  config.algorithm_specs = {"noremat", "revolve", "checkpoint_last"};
  config.schedules_dir = (dir / "schedules").string();
  config.results_dir = dir.string();
  nlohmann::json results = RunSweep(config);
  std::map<std::string, Graph> graphs;
  for (size_t i = 0; i < results["graphs"].size(); ++i) {
    const auto& g = results["graphs"][i];
    graphs.emplace(g["name"], LoadGraph(g["spec"]));
  }
  int kept = 0;
  for (const auto& run : results["runs"]) {
    for (const auto& point : run["points"]) {
      if (point["cost"].is_null()) {
        EXPECT_FALSE(point.contains("schedule_file")) << point.dump();
        continue;
      }
      ASSERT_TRUE(point.contains("schedule_file")) << point.dump();
      const std::string file =
          (dir / point["schedule_file"].get<std::string>()).string();
      const Graph& graph = graphs.at(run["graph"]);
      const SimulationResult sim =
          Simulate(graph, ReadScheduleFile(file, graph.num_nodes()));
      EXPECT_EQ(sim.peak_bytes, point["peak_bytes"]) << file;
      EXPECT_EQ(sim.cost, point["cost"]) << file;
      ++kept;
    }
  }
  EXPECT_GT(kept, 0);
  std::filesystem::remove_all(dir);
}

TEST(Sweep, ContextNamesTheMachineAndLibraries) {
  const nlohmann::json context = RunSweep(SmallSweep())["context"];
  EXPECT_GE(context["cpu_count"].get<int>(), 1);
  EXPECT_FALSE(context["cpu_model"].get<std::string>().empty());
  EXPECT_TRUE(context.contains("load_average"));
  for (const char* library : {"cbc", "nlohmann_json", "fmt"}) {
    EXPECT_NE(context["libraries"][library], "") << library;
  }
  EXPECT_NE(context["libraries"]["cbc"], "unknown");
}

TEST(Corpus, TheDefaultCorpusLoads) {
  std::vector<std::string> specs =
      ReadCorpus(testing::SourceDir() + "/graphs/corpus/default.json");
  EXPECT_FALSE(specs.empty());
}

// Found by fuzzing: std::filesystem::exists threw on a path longer than the
// system allows. Such an entry is missing: skipped when optional, else kept
// for the reader to refuse.
TEST(Corpus, APathTooLongForTheSystemIsMissing) {
  const std::string name(300, 'x');  // NAME_MAX is 255
  const std::string manifest =
      (std::filesystem::temp_directory_path() /
       fmt::format("remat_long_names_{}.json", getpid()))
          .string();
  std::ofstream(manifest) << fmt::format(
      R"({{"format": "rematbench-corpus", "graphs": [
           {{"path": "{0}", "optional": true}}, {{"path": "{0}"}}]}})",
      name);
  const std::vector<std::string> specs = ReadCorpus(manifest);
  std::filesystem::remove(manifest);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(std::filesystem::path(specs[0]).filename(), name);
}

}  // namespace
}  // namespace remat
