// The Checkmate node-link importer on two hand-written files:
// tests/importers/tiny_train.json (conv, relu, Loss, relu_backward,
// conv_backward) and random_layered_tiny.json (four nodes, two parameter
// sizes). Expected figures are worked out by hand in the comments.
#include <gtest/gtest.h>

#include "model/simulator.h"
#include "tests/importer_support.h"

namespace remat {
namespace {

using testing::ImporterFile;
using testing::ReadText;
using testing::Refused;
using testing::Replace;

TEST(CheckmateImport, ReadsKerasTrainingGraph) {
  Graph g = LoadGraph(ImporterFile("tiny_train.json"));
  EXPECT_EQ(g.name(), "tiny_train");
  EXPECT_EQ(g.provenance()["format"], "checkmate");
  EXPECT_EQ(g.provenance()["name"], "tiny (hand-written)_train");
  ASSERT_EQ(g.num_nodes(), 5);
  EXPECT_EQ(g.num_edges(), 6);
  EXPECT_EQ(g.kind(0), NodeKind::kForward);
  EXPECT_EQ(g.kind(1), NodeKind::kForward);
  EXPECT_EQ(g.kind(2), NodeKind::kLoss);  // backward, but no _backward suffix
  EXPECT_EQ(g.kind(3), NodeKind::kBackward);
  EXPECT_EQ(g.grad_of(3), 1);
  EXPECT_EQ(g.grad_of(4), 0);
  EXPECT_EQ(g.grad_of(2), kNoNode);
  EXPECT_EQ(g.mem(2), 4);
  EXPECT_EQ(g.cost(4), 7);
  EXPECT_EQ(g.static_bytes(), 0);
  EXPECT_EQ(BaseCost(g), 18);
  // conv_backward: 10 + relu_backward 10 + conv 10.
  EXPECT_EQ(MemoryLowerBound(g), 30);
  // relu_backward with conv, relu and Loss live: 10 + 10 + 4 + 10.
  EXPECT_EQ(NoRematPeak(g), 34);
}

TEST(CheckmateImport, ReadsRandomLayeredGraph) {
  Graph g = LoadGraph(ImporterFile("random_layered_tiny.json"));
  EXPECT_EQ(g.provenance()["format"], "checkmate-layered");
  ASSERT_EQ(g.num_nodes(), 4);
  EXPECT_EQ(g.num_edges(), 5);
  for (NodeId v = 0; v < 4; ++v) EXPECT_EQ(g.kind(v), NodeKind::kForward);
  EXPECT_EQ(g.static_bytes(), 12);  // param_cost 5 + 7
  EXPECT_EQ(g.mem(2), 4);
  EXPECT_EQ(g.cost(2), 6);
  ASSERT_EQ(g.targets().size(), 1u);
  EXPECT_EQ(g.targets()[0], 1);
  EXPECT_EQ(BaseCost(g), 8);
  // Node 3: 1 + its inputs 0 (3) and 2 (4).
  EXPECT_EQ(MemoryLowerBound(g), 8);
  EXPECT_EQ(NoRematPeak(g), 8);
}

TEST(CheckmateImport, RefusesMalformedKerasGraphs) {
  const std::string good = ReadText(ImporterFile("tiny_train.json"));
  // Cut in the middle of the fourth node, on line 6.
  EXPECT_TRUE(Refused("truncated.json", good.substr(0, good.size() / 2), 6,
                      "not valid JSON"));
  EXPECT_TRUE(Refused("negative.json",
                      Replace(good, "\"cost_ram\": 10, \"id\": 1",
                              "\"cost_ram\": -10, \"id\": 1"),
                      0,
                      "nodes[1]: 'cost_ram' must be a non-negative integer"));
  EXPECT_TRUE(Refused(
      "fraction.json", Replace(good, "\"cost_cpu\": 1,", "\"cost_cpu\": 1.5,"),
      0, "nodes[1]: 'cost_cpu' must be a non-negative integer"));
  EXPECT_TRUE(Refused(
      "overflow.json",
      Replace(good, "\"cost_cpu\": 1,", "\"cost_cpu\": 9223372036854775808,"),
      0, "int64"));
  EXPECT_TRUE(Refused("missing.json", Replace(good, "\"cost_ram\": 4, ", ""), 0,
                      "nodes[2]: missing 'cost_ram'"));
  EXPECT_TRUE(Refused("unknown.json",
                      Replace(good, "{\"source\": 3, \"target\": 4}",
                              "{\"source\": 3, \"target\": 9}"),
                      0, "links[4]: unknown node 9"));
  EXPECT_TRUE(Refused("cycle.json",
                      Replace(good, "{\"source\": 0, \"target\": 4}",
                              "{\"source\": 0, \"target\": 4}, "
                              "{\"source\": 4, \"target\": 0}"),
                      0, "cycle"));
  EXPECT_TRUE(Refused("orphan.json",
                      Replace(good, "relu_backward", "gelu_backward"), 0,
                      "no node named 'gelu'"));
  EXPECT_TRUE(Refused("no_links.json", Replace(good, "\"links\"", "\"edges\""),
                      0, "needs arrays 'nodes' and 'links'"));
}

TEST(CheckmateImport, RefusesMalformedLayeredGraphs) {
  const std::string good = ReadText(ImporterFile("random_layered_tiny.json"));
  EXPECT_TRUE(Refused("layered_truncated.json", good.substr(0, good.size() - 3),
                      13, "not valid JSON"));
  EXPECT_TRUE(
      Refused("layered_number.json",
              Replace(good, "\"param_cost\": 5", "\"param_cost\": \"5\""), 0,
              "nodes[2]: 'param_cost' must be a non-negative"));
  EXPECT_TRUE(
      Refused("layered_unknown.json",
              Replace(good, "{\"0\": 3, \"1\": 1}", "{\"0\": 3, \"1\": 4}"), 0,
              "links[4]: unknown node 4"));
  EXPECT_TRUE(
      Refused("layered_cycle.json",
              Replace(good, "{\"0\": 2, \"1\": 3}", "{\"0\": 3, \"1\": 0}"), 0,
              "cycle"));
  EXPECT_TRUE(Refused("layered_duplicate.json",
                      Replace(good, "\"name\": 3}", "\"name\": 2}"), 0,
                      "nodes[3]: id 2 is used twice"));
}

}  // namespace
}  // namespace remat
