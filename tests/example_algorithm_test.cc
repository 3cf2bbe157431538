// The example algorithm of docs/adding_an_algorithm.md: the doc shows
// tests/example_algorithm/smallest_first.cc to the letter, the algorithm
// solves a tiny graph as derived by hand and runs every fixture graph as the
// conformance suite would, and it stays out of the shipped `remat`'s
// registry.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "model/file_io.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::Solve;
using testing::SourceDir;

TEST(ExampleAlgorithm, DocShowsTheFileVerbatim) {
  const std::string doc =
      ReadFile(SourceDir() + "/docs/adding_an_algorithm.md");
  const std::string file =
      ReadFile(SourceDir() + "/tests/example_algorithm/smallest_first.cc");
  EXPECT_NE(doc.find("```cpp\n" + file + "```\n"), std::string::npos)
      << "docs/adding_an_algorithm.md no longer shows "
         "tests/example_algorithm/smallest_first.cc as it is";
}

TEST(ExampleAlgorithm, SmallOutputsFirstByHand) {
  // Branch a: a1 (10) -> a2 (1); branch b: b1 (5) -> b2 (1); j reads a2 and
  // b2; unit costs. prefer=small: b1, b2 (6; b1 freed), a1 (1 + 10 = 11),
  // a2 (12), j: peak 12. prefer=large: a1, then b1 (10 + 5 = 15) before a2
  // (same size as b2, smaller id), a2 (16): peak 16. Each node once: cost 5.
  Graph g = testing::GraphFromNodes(R"([
    {"id": 0, "name": "a1", "mem": 10, "cost": 1, "inputs": []},
    {"id": 1, "name": "b1", "mem": 5, "cost": 1, "inputs": []},
    {"id": 2, "name": "a2", "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 3, "name": "b2", "mem": 1, "cost": 1, "inputs": [1]},
    {"id": 4, "name": "j", "mem": 1, "cost": 1, "inputs": [2, 3]}])");
  const SolveResult small = Solve("smallest_first", g, kUnboundedBudget);
  EXPECT_EQ(small.status, Status::kFeasible);
  EXPECT_EQ(small.peak_bytes, 12);
  EXPECT_EQ(small.cost, 5);
  EXPECT_EQ(
      Solve("smallest_first", g, kUnboundedBudget, {"prefer=large"}).peak_bytes,
      16);
  EXPECT_EQ(Solve("smallest_first", g, 12).status, Status::kFeasible);
  EXPECT_EQ(Solve("smallest_first", g, 11).status, Status::kInfeasible);
}

TEST(ExampleAlgorithm, EveryFixtureGraphOnceEachNode) {
  for (const std::string& spec : testing::FixtureGraphSpecs()) {
    const Graph g = LoadGraph(spec);
    for (const char* prefer : {"prefer=small", "prefer=large"}) {
      const SolveResult r =
          Solve("smallest_first", g, kUnboundedBudget, {prefer});
      EXPECT_EQ(r.status, Status::kFeasible) << spec << " " << prefer;
      EXPECT_EQ(r.cost, BaseCost(g)) << spec << " " << prefer;
    }
  }
}

TEST(ExampleAlgorithm, NotInTheShippedRegistry) {
  const std::string command = std::string(REMAT_BINARY) + " list";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"),
                                             pclose);
  ASSERT_NE(pipe, nullptr);
  std::string listing;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe.get())) {
    listing.append(buffer, n);
  }
  ASSERT_NE(listing.find("noremat"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("smallest_first"), std::string::npos) << listing;
}

}  // namespace
}  // namespace remat
