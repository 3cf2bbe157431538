// The `remat` command line end to end: outputs, exit statuses (0 success,
// 1 negative answer, 2 bad input), and no partial files on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "model/file_io.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"

namespace remat {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::Outcome;

TEST_F(Cli, SolveNoRematOnAChainReportsTheHandComputedPeak) {
  Outcome run = Remat("solve --algorithm noremat --graph chain:n=16 --json");
  ASSERT_EQ(run.status, 0) << run.err;
  auto result = nlohmann::json::parse(run.out);
  EXPECT_EQ(result["status"], "feasible");
  EXPECT_EQ(result["valid"], true);
  EXPECT_EQ(result["peak_bytes"], 18);
  EXPECT_EQ(result["cost"], 33);
  EXPECT_EQ(result["overhead"], 1.0);
}

TEST_F(Cli, SolveBelowThePeakIsANegativeAnswer) {
  Outcome run = Remat("solve -a noremat -g chain:n=16 --budget 17 --json");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(nlohmann::json::parse(run.out)["status"], "infeasible");
}

TEST_F(Cli, SolveWritesTheScheduleThatValidateAccepts) {
  std::string schedule = (dir_ / "s.txt").string();
  ASSERT_EQ(Remat("solve -a checkpoint_last -g chain:n=8 --schedule-out " +
                  schedule).status,
            0);
  Outcome run = Remat("validate --graph chain:n=8 --schedule " + schedule +
                  " --budget 3 --json");
  ASSERT_EQ(run.status, 0) << run.err;
  auto result = nlohmann::json::parse(run.out);
  EXPECT_EQ(result["valid"], true);
  EXPECT_EQ(result["peak_bytes"], 3);
  // Over budget: valid but a negative answer.
  EXPECT_EQ(Remat("validate -g chain:n=8 -s " + schedule + " -b 2").status, 1);
}

TEST_F(Cli, ValidateRejectsAComputeBeforeItsInputNamingTheEvent) {
  // f2 (id 1) reads f1 (id 0), which is not live yet.
  std::string schedule = Write("bad.txt", "c 1\nc 0\n");
  Outcome run = Remat("validate --graph chain:n=4 --schedule " + schedule +
                  " --json");
  EXPECT_EQ(run.status, 1);
  auto result = nlohmann::json::parse(run.out);
  EXPECT_EQ(result["valid"], false);
  EXPECT_EQ(result["error"]["event"], 0);
  EXPECT_NE(result["error"]["reason"].get<std::string>().find(
                "input 0 ('f1') is not live"),
            std::string::npos);
}

TEST_F(Cli, ValidateTimesTransfersAndRefusesMisusedOnesNamingTheLine) {
  // chain:n=4 (1-byte values, cost 1): f1 offloaded after its forward read
  // and prefetched before its backward read (node 5); over a link of one
  // byte per cost unit each copy takes 1 and hides under compute.
  const std::string good = Write(
      "good.txt",
      "c 0\nc 1\no 0\nc 2\nc 3\nc 4\nc 8\nf 3\nf 4\nc 7\nf 2\nf 8\n"
      "p 0\nc 6\nf 1\nf 7\nc 5\nf 0\nf 6\nf 5\n");
  const std::string timing = " --link 1:0 --compute-rate 1 --json";
  Outcome run = Remat("validate -g chain:n=4 -s " + good + timing);
  EXPECT_EQ(run.status, 0) << run.err;
  auto result = nlohmann::json::parse(run.out);
  EXPECT_EQ(result["makespan"], 9.0);
  EXPECT_EQ(result["cost"], 9);
  EXPECT_EQ(result["transfer_bytes"], 2);
  EXPECT_EQ(result["host_peak_bytes"], 1);
  EXPECT_EQ(result["peak_bytes"], 5);  // NoRemat's 6 less f1
  // The prefetch removed: node 5 reads f1 while it is on the host.
  const std::string late = Write(
      "late.txt",
      "c 0\nc 1\no 0\nc 2\nc 3\nc 4\nc 8\nf 3\nf 4\nc 7\nf 2\nf 8\n"
      "c 6\nf 1\nf 7\nc 5\n");
  run = Remat("validate -g chain:n=4 -s " + late + timing);
  EXPECT_EQ(run.status, 1);
  result = nlohmann::json::parse(run.out);
  EXPECT_EQ(result["error"]["line"], 16);
  EXPECT_EQ(result["error"]["reason"],
            "compute 5: input 0 ('f1') is offloaded and not prefetched");
  // Bad timing options: exit 2, one line.
  for (const char* option :
       {"--link pcie9", "--link 0", "--compute-rate -1", "--host-budget x"}) {
    run = Remat("validate -g chain:n=4 -s " + good + " " + option);
    EXPECT_EQ(run.status, 2) << option;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1)
        << option << ": " << run.err;
  }
}

TEST_F(Cli, BadInputIsOneLineAndExitStatus2) {
  std::string truncated = Write("truncated.json",
                                "{\"format\": \"rematbench-graph\",\n\"nod");
  std::string bad_schedule = Write("bad_schedule.txt", "c 0\nhello\n");
  struct Case {
    std::string args, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"graph info " + truncated, "truncated.json:2: not valid JSON"},
           {"graph info nowhere.json", "nowhere.json"},
           {"graph info chain:n=0", "must be >= 1"},
           {"graph info chain:n=4,size=2", "unknown parameter 'size'"},
           {"solve -a nothing -g chain:n=4", "unknown algorithm 'nothing'"},
           {"solve -a noremat -g chain:n=4 -p order=up", "expected one of"},
           // Typed options: a boolean and a number (model/options.h).
           {"solve -a vdnn -g chain:n=4 -p wait=yes",
            "vdnn: parameter wait=yes: expected one of true, false"},
           {"solve -a rotor -g chain:n=4 -p slots=many",
            "rotor: parameter slots=many: expected an integer"},
           {"solve -a noremat -g chain:n=4 -b lots", "not a byte count"},
           {"validate -g chain:n=4 -s " + bad_schedule,
            "bad_schedule.txt:2: expected 'c <id>', 'f <id>', 'o <id>', 'p <id>' or 'w <id>'"},
           {"frobnicate", "unknown subcommand 'frobnicate'"},
       }) {
    Outcome run = Remat(c.args);
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.err;
    EXPECT_NE(run.err.find(c.expected), std::string::npos)
        << c.args << "\n" << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1)
        << c.args << "\n" << run.err;
  }
}

TEST_F(Cli, ConvertWritesJsonThatReadsBackAndDot) {
  std::string json = (dir_ / "chain.json").string();
  std::string dot = (dir_ / "chain.dot").string();
  ASSERT_EQ(Remat("graph convert chain:n=5 --to json -o " + json).status, 0);
  ASSERT_EQ(Remat("graph convert " + json + " --to dot -o " + dot).status, 0);
  EXPECT_NE(ReadFile(dot).find("digraph"), std::string::npos);
  Outcome info = Remat("graph info " + json + " --json");
  ASSERT_EQ(info.status, 0) << info.err;
  auto result = nlohmann::json::parse(info.out);
  EXPECT_EQ(result["nodes"], 11);
  EXPECT_EQ(result["noremat_peak_bytes"], 7);
  EXPECT_EQ(result["lower_bound_bytes"], 3);
}

// tests/reach_bound_test.cc's hand graph: the reach bound is 5, one above
// the memory lower bound.
TEST_F(Cli, InfoSearchesForTheReachBoundOnRequest) {
  const std::string json = Write("hand.json", R"({"format": "rematbench-graph",
    "version": 1, "name": "hand", "nodes": [
    {"id": 0, "mem": 2, "cost": 1, "inputs": []},
    {"id": 1, "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 2, "mem": 2, "cost": 1, "inputs": [1]},
    {"id": 3, "mem": 2, "cost": 1, "inputs": [2]},
    {"id": 4, "name": "v", "mem": 1, "cost": 1, "inputs": [1, 3]}]})");
  Outcome plain = Remat("graph info " + json + " --json");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("reach_lower_bound"));
  Outcome info = Remat("graph info " + json + " --reach-bound 5 --json");
  ASSERT_EQ(info.status, 0) << info.err;
  const auto result = nlohmann::json::parse(info.out);
  EXPECT_EQ(result["lower_bound_bytes"], 4);
  EXPECT_EQ(result["reach_lower_bound"]["bytes"], 5);
  EXPECT_EQ(result["reach_lower_bound"]["witness"], "v");
  EXPECT_EQ(result["reach_lower_bound"]["limited"], false);
  EXPECT_EQ(Remat("graph info " + json + " --reach-bound 0").status, 2);
}

TEST_F(Cli, ConvertToStdoutOrADeviceWritesInPlace) {
  Outcome run = Remat("graph convert chain:n=2 --to dot -o -");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out.rfind("digraph", 0), 0u) << run.out;
  // Renaming over /dev/stdout would replace the device with a file.
  Outcome device = Remat("graph convert chain:n=2 --to dot -o /dev/stdout");
  ASSERT_EQ(device.status, 0) << device.err;
  EXPECT_NE(device.out.find("digraph"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink("/dev/stdout") ||
              !fs::is_regular_file("/dev/stdout"));
}

TEST_F(Cli, FailedCommandsLeaveNoOutputFileBehind) {
  std::string out = (dir_ / "out.json").string();
  EXPECT_EQ(Remat("graph convert chain:n=5 --to nonsense -o " + out).status, 2);
  EXPECT_EQ(Remat("sweep --graphs chain:n=4,missing.json --algorithms "
                  "noremat --out " + out).status,
            2);
  EXPECT_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos)
        << entry.path();
  }
}

TEST_F(Cli, SweepWritesAResultsFile) {
  std::string out = (dir_ / "results.json").string();
  Outcome run = Remat("sweep --graphs chain:n=8,chain:n=4,mem=2 --algorithms all "
                  "--budgets 3 --threads 2 --out " + out + " --json");
  ASSERT_EQ(run.status, 0) << run.err;
  auto results = nlohmann::json::parse(ReadFile(out));
  EXPECT_EQ(results["format"], "rematbench-results");
  EXPECT_EQ(results["graphs"].size(), 2u);
  EXPECT_EQ(results["graphs"][0]["name"], "chain:n=4,mem=2");
  EXPECT_NE(results["context"]["command_line"].get<std::string>().find(
                "sweep --graphs"),
            std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(run.out)["out"], out);
}

TEST_F(Cli, HelpAndListSucceed) {
  EXPECT_EQ(Remat("--help").status, 0);
  EXPECT_EQ(Remat("sweep --help").status, 0);
  Outcome list = Remat("list --json");
  ASSERT_EQ(list.status, 0);
  auto algorithms = nlohmann::json::parse(list.out)["algorithms"];
  EXPECT_GE(algorithms.size(), 2u);
}

}  // namespace
}  // namespace remat
