// GraphBuilder: what it accepts, what it refuses, and the derived structure.
#include <gtest/gtest.h>

#include "model/errors.h"
#include "model/graph.h"

namespace remat {
namespace {

NodeSpec Node(NodeId id, std::vector<NodeId> inputs, int64_t mem = 1) {
  NodeSpec n;
  n.id = id;
  n.mem = mem;
  n.cost = 1;
  n.inputs = std::move(inputs);
  return n;
}

std::string BuildError(std::vector<NodeSpec> nodes) {
  GraphBuilder b("test.json");
  for (auto& n : nodes) b.add_node(std::move(n));
  try {
    std::move(b).Build();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(GraphBuilder, BuildsBothAdjacencyDirectionsAndDefaultTargets) {
  GraphBuilder b("g");
  b.add_node(Node(2, {0, 1}));  // any order in the input
  b.add_node(Node(0, {}));
  b.add_node(Node(1, {0}));
  Graph g = std::move(b).Build();
  ASSERT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.num_edges(), 3);
  EXPECT_EQ(std::vector<NodeId>(g.inputs(2).begin(), g.inputs(2).end()),
            (std::vector<NodeId>{0, 1}));
  EXPECT_EQ(std::vector<NodeId>(g.consumers(0).begin(), g.consumers(0).end()),
            (std::vector<NodeId>{1, 2}));
  EXPECT_FALSE(g.is_target(0));
  EXPECT_TRUE(g.is_target(2));
  EXPECT_EQ(g.node_name(1), "n1");
  EXPECT_EQ(std::vector<NodeId>(g.topological_order().begin(),
                                g.topological_order().end()),
            (std::vector<NodeId>{0, 1, 2}));
}

TEST(GraphBuilder, TopologicalOrderTakesSmallestReadyIdFirst) {
  // 3 and 1 are both ready after 0; 1 comes first, then 2 (ready after 1)
  // before 3 because 2 < 3.
  GraphBuilder b("g");
  b.add_node(Node(0, {}));
  b.add_node(Node(1, {0}));
  b.add_node(Node(2, {1}));
  b.add_node(Node(3, {0}));
  Graph g = std::move(b).Build();
  EXPECT_EQ(std::vector<NodeId>(g.topological_order().begin(),
                                g.topological_order().end()),
            (std::vector<NodeId>{0, 1, 2, 3}));
  EXPECT_EQ(g.topo_rank(3), 3);
}

TEST(GraphBuilder, ExplicitTargetsOverrideTheDefault) {
  GraphBuilder b("g");
  NodeSpec a = Node(0, {});
  a.target = true;
  NodeSpec c = Node(1, {0});
  c.target = false;
  b.add_node(a);
  b.add_node(c);
  Graph g = std::move(b).Build();
  EXPECT_TRUE(g.is_target(0));
  EXPECT_FALSE(g.is_target(1));
  EXPECT_EQ(g.targets().size(), 1u);
}

TEST(GraphBuilder, RefusesACycleNamingANodeOnIt) {
  std::string error =
      BuildError({Node(0, {}), Node(1, {0, 3}), Node(2, {1}), Node(3, {2})});
  EXPECT_NE(error.find("test.json: node "), std::string::npos) << error;
  EXPECT_NE(error.find("cycle"), std::string::npos) << error;
  // The node named is on the cycle 1 -> 2 -> 3 -> 1, not node 0.
  EXPECT_EQ(error.find("node 0"), std::string::npos) << error;
}

TEST(GraphBuilder, RefusesSelfLoops) {
  EXPECT_NE(BuildError({Node(0, {0})}).find("node 0: reads itself"),
            std::string::npos);
}

TEST(GraphBuilder, RefusesDuplicateAndOutOfRangeIds) {
  EXPECT_NE(BuildError({Node(0, {}), Node(0, {})}).find("node 0: duplicate id"),
            std::string::npos);
  EXPECT_NE(BuildError({Node(0, {}), Node(5, {})}).find("node 5: id out of range"),
            std::string::npos);
}

TEST(GraphBuilder, RefusesUnknownAndRepeatedInputs) {
  EXPECT_NE(BuildError({Node(0, {}), Node(1, {7})})
                .find("node 1: input 7 is not a node id"),
            std::string::npos);
  EXPECT_NE(BuildError({Node(0, {}), Node(1, {0, 0})})
                .find("node 1: input 0 is listed twice"),
            std::string::npos);
}

TEST(GraphBuilder, RefusesNegativeSizes) {
  EXPECT_NE(BuildError({Node(0, {}, -1)}).find("node 0: mem is negative"),
            std::string::npos);
  NodeSpec cost = Node(0, {});
  cost.cost = -3;
  EXPECT_NE(BuildError({cost}).find("cost is negative"), std::string::npos);
  NodeSpec workspace = Node(0, {});
  workspace.workspace = -3;
  EXPECT_NE(BuildError({workspace}).find("workspace is negative"),
            std::string::npos);
}

TEST(GraphBuilder, RefusesTotalsThatOverflowInt64) {
  const int64_t big = std::numeric_limits<int64_t>::max() / 2 + 1;
  EXPECT_NE(BuildError({Node(0, {}, big), Node(1, {0}, big)})
                .find("node 1: total memory of the graph overflows int64"),
            std::string::npos);
}

TEST(GraphBuilder, RefusesGradOfUnknownNode) {
  NodeSpec n = Node(0, {});
  n.grad_of = 9;
  EXPECT_NE(BuildError({n}).find("grad_of names unknown node 9"),
            std::string::npos);
}

}  // namespace
}  // namespace remat
