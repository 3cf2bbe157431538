// TwRemat's `p remat2` format: reading tests/importers/tiny.remat2, the
// canonical text the writer produces, write/read round trips of the other
// importers' graphs, and malformed files.
#include <gtest/gtest.h>

#include <sstream>

#include "model/simulator.h"
#include "tests/importer_support.h"

namespace remat {
namespace {

using testing::ImporterFile;
using testing::ReadText;
using testing::Refused;
using testing::Replace;
using testing::WriteTemp;

std::string ToRemat2(const Graph& g) {
  std::ostringstream out;
  WriteGraph(out, g, "remat2");
  return out.str();
}

TEST(Remat2, ReadsTinyFile) {
  Graph g = LoadGraph(ImporterFile("tiny.remat2"));
  EXPECT_EQ(g.name(), "tiny");
  EXPECT_EQ(g.provenance()["format"], "remat2");
  EXPECT_EQ(g.provenance()["memlimit"], 100);
  ASSERT_EQ(g.num_nodes(), 4);
  EXPECT_EQ(g.num_edges(), 4);
  EXPECT_EQ(g.mem(1), 8);
  EXPECT_EQ(g.cost(2), 3);
  // No weight: the reference parser's cpu 1, mem 1.
  EXPECT_EQ(g.mem(3), 1);
  EXPECT_EQ(g.cost(3), 1);
  // Only the marked node is a target, though node 3 has no consumer either.
  ASSERT_EQ(g.targets().size(), 1u);
  EXPECT_EQ(g.targets()[0], 2);
  EXPECT_EQ(BaseCost(g), 6);           // nodes 0, 1, 2
  EXPECT_EQ(MemoryLowerBound(g), 14);  // node 2 with its inputs: 2 + 4 + 8
  EXPECT_EQ(NoRematPeak(g), 14);
}

TEST(Remat2, WithoutMarkedTargetsTheSinksAreTargets) {
  Graph g = LoadGraph(
      WriteTemp("untargeted.remat2",
                "p remat2\nnode 1 deps 0 cpu 2 mem 8\n\nnode 0 cpu 1 mem 4\n"
                "node 2 deps 0 cpu 1 mem 1\n"));
  std::vector<NodeId> targets(g.targets().begin(), g.targets().end());
  EXPECT_EQ(targets, (std::vector<NodeId>{1, 2}));
}

TEST(Remat2, WritesCanonicalText) {
  EXPECT_EQ(ToRemat2(LoadGraph(ImporterFile("tiny.remat2"))),
            "p remat2\n"
            "node 0 deps cpu 1 mem 4\n"
            "node 1 deps 0 cpu 2 mem 8\n"
            "node 2 deps 0 1 cpu 3 mem 2 target\n"
            "node 3 deps 1 cpu 1 mem 1\n");
}

// What remat2 keeps (sizes, costs, edges, targets) survives a round trip,
// and with it every figure of the memory model.
TEST(Remat2, RoundTripKeepsTheMemoryModel) {
  for (const char* name : {"cg_tiny.txt", "tiny_train.json",
                           "random_layered_tiny.json", "tiny.remat2"}) {
    SCOPED_TRACE(name);
    Graph g = LoadGraph(ImporterFile(name));
    std::string text = ToRemat2(g);
    Graph back = LoadGraph(WriteTemp("round_trip.remat2", text));
    EXPECT_EQ(ToRemat2(back), text);
    ASSERT_EQ(back.num_nodes(), g.num_nodes());
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      EXPECT_EQ(back.mem(v), g.mem(v));
      EXPECT_EQ(back.cost(v), g.cost(v));
      EXPECT_EQ(back.is_target(v), g.is_target(v));
      EXPECT_TRUE(std::ranges::equal(back.inputs(v), g.inputs(v)));
    }
    EXPECT_EQ(BaseCost(back), BaseCost(g));
    EXPECT_EQ(MemoryLowerBound(back), MemoryLowerBound(g));
    EXPECT_EQ(NoRematPeak(back), NoRematPeak(g));
  }
}

TEST(Remat2, WriterRefusesWorkspace) {
  Graph g = testing::GraphFromNodes(
      R"([{"id": 0, "mem": 1, "cost": 1, "workspace": 5, "inputs": []}])");
  try {
    ToRemat2(g);
    ADD_FAILURE() << "workspace was written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workspace 5"), std::string::npos)
        << e.what();
  }
}

TEST(Remat2, RefusesMalformedFiles) {
  const std::string good = ReadText(ImporterFile("tiny.remat2"));
  EXPECT_TRUE(Refused("truncated.remat2",
                      good.substr(0, good.find("mem 8")) + "mem", 4,
                      "line ends where the mem size was expected"));
  EXPECT_TRUE(Refused("header_only.remat2", "p remat2\n", 1, "no nodes"));
  EXPECT_TRUE(Refused("number.remat2", Replace(good, "cpu 2", "cpu 2x"), 4,
                      "cpu must be a non-negative integer (got '2x')"));
  EXPECT_TRUE(Refused("overflow.remat2",
                      Replace(good, "mem 8", "mem 9223372036854775808"), 4,
                      "mem '9223372036854775808' overflows int64"));
  EXPECT_TRUE(Refused("unknown.remat2", Replace(good, "deps 0 1", "deps 0 7"),
                      5, "node 2 depends on unknown node 7"));
  EXPECT_TRUE(Refused("cycle.remat2",
                      Replace(good, "node 0 deps", "node 0 deps 3"), 0,
                      "cycle"));
  EXPECT_TRUE(Refused("duplicate.remat2", Replace(good, "node 3", "node 1"), 6,
                      "node 1 is defined twice (first on line 4)"));
  EXPECT_TRUE(Refused("range.remat2", Replace(good, "node 3", "node 4"), 6,
                      "ids must be 0..3"));
  EXPECT_TRUE(Refused("pointer.remat2",
                      Replace(good, "deps 1", "deps 1 pointer"), 6,
                      "'pointer' nodes are not supported"));
  EXPECT_TRUE(Refused("junk.remat2", Replace(good, "target", "targets"), 5,
                      "unexpected 'targets'"));
  EXPECT_TRUE(Refused("memlimit.remat2", good + "memlimit 5\n", 7,
                      "'memlimit' may only come once, before the nodes"));
  EXPECT_TRUE(Refused("header.remat2", Replace(good, "p remat2", "p remat2 x"),
                      1, "the first line must be 'p remat2'"));
}

}  // namespace
}  // namespace remat
