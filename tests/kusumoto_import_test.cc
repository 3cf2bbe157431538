// The Kusumoto et al. cg_*.txt importer on tests/importers/cg_tiny.txt: a
// convolution, a ReLU, an Add reading the convolution output again (so its
// gradient has two producers) and a softmax cross-entropy, with the records
// out of topological order. Expected figures are worked out by hand in the
// comments.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/simulator.h"
#include "tests/importer_support.h"

namespace remat {
namespace {

using testing::ImporterFile;
using testing::ReadText;
using testing::Refused;
using testing::Replace;

std::vector<NodeId> Inputs(const Graph& g, NodeId v) {
  std::vector<NodeId> inputs(g.inputs(v).begin(), g.inputs(v).end());
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

TEST(KusumotoImport, ReadsTinyGraphByTheBindingMapping) {
  Graph g = LoadGraph(ImporterFile("cg_tiny.txt"));
  EXPECT_EQ(g.name(), "cg_tiny");
  EXPECT_EQ(g.provenance()["format"], "kusumoto");
  ASSERT_EQ(g.num_nodes(), 8);
  // Forward records in file order: ReLU (t4), Conv (t3), loss (t6), Add (t5).
  EXPECT_EQ(g.node_name(0), "ReLU_4");
  EXPECT_EQ(g.op(1), "Convolution2DFunction");
  EXPECT_EQ(g.kind(0), NodeKind::kForward);
  EXPECT_EQ(g.kind(2), NodeKind::kLoss);
  EXPECT_EQ(Inputs(g, 0), (std::vector<NodeId>{1}));
  EXPECT_EQ(Inputs(g, 1), (std::vector<NodeId>{}));   // image and W are static
  EXPECT_EQ(Inputs(g, 2), (std::vector<NodeId>{3}));  // labels are static
  EXPECT_EQ(Inputs(g, 3), (std::vector<NodeId>{0, 1}));
  EXPECT_EQ(g.mem(1), 40);
  EXPECT_EQ(g.mem(2), 4);
  // Authors' costs: 10 for Conv*, 1 otherwise; backward twice that.
  EXPECT_EQ(g.cost(0), 1);
  EXPECT_EQ(g.cost(1), 10);
  EXPECT_EQ(g.cost(5), 20);
  EXPECT_EQ(g.cost(7), 2);
  for (NodeId b = 4; b < 8; ++b) {
    EXPECT_EQ(g.kind(b), NodeKind::kBackward);
    EXPECT_EQ(g.grad_of(b), b - 4);
  }
  // ReLU backward: the gradient of t4 (from Add's backward) and its output.
  EXPECT_EQ(Inputs(g, 4), (std::vector<NodeId>{0, 7}));
  EXPECT_EQ(g.mem(4), 40);
  // Conv backward: both contributions to t3's gradient; it retains only
  // the image and W, which are not nodes; its gradients are all static.
  EXPECT_EQ(Inputs(g, 5), (std::vector<NodeId>{4, 7}));
  EXPECT_EQ(g.mem(5), 0);
  // Loss backward: the seed is free; it retains t5.
  EXPECT_EQ(Inputs(g, 6), (std::vector<NodeId>{3}));
  EXPECT_EQ(g.mem(6), 40);
  // Add backward retains nothing although its tags list both inputs.
  EXPECT_EQ(Inputs(g, 7), (std::vector<NodeId>{6}));
  EXPECT_EQ(g.mem(7), 80);
  // 2 x W (20) + image (100) + labels (8).
  EXPECT_EQ(g.static_bytes(), 148);
  EXPECT_EQ(g.num_edges(), 10);
  std::vector<NodeId> targets(g.targets().begin(), g.targets().end());
  EXPECT_EQ(targets, (std::vector<NodeId>{2, 5}));
  EXPECT_EQ(BaseCost(g), 39);  // 13 forward + 26 backward
  // ReLU backward: 40 + Add backward 80 + ReLU 40.
  EXPECT_EQ(MemoryLowerBound(g), 160);
  // Forward first; the peak is computing ReLU backward (Add backward and
  // the ReLU output live), as high as computing Add backward.
  EXPECT_EQ(NoRematPeak(g), 160);
}

TEST(KusumotoImport, RefusesMalformedFiles) {
  const std::string good = ReadText(ImporterFile("cg_tiny.txt"));
  // Truncated after the tensor table and one line.
  std::string truncated = good.substr(0, good.find("1 1\n") + 4);
  EXPECT_TRUE(
      Refused("cg_truncated.txt", truncated, 11, "unexpected end of file"));
  EXPECT_TRUE(Refused("cg_empty.txt", "3 2\n", 2, "unexpected end of file"));
  EXPECT_TRUE(
      Refused("cg_number.txt", Replace(good, "3 40 _", "3 4O _"), 5,
              "tensor bytes must be a non-negative integer (got '4O')"));
  EXPECT_TRUE(Refused("cg_negative.txt", Replace(good, "3 40 _", "3 -40 _"), 5,
                      "non-negative"));
  EXPECT_TRUE(Refused("cg_overflow.txt",
                      Replace(good, "3 40 _", "3 99999999999999999999 _"), 5,
                      "overflows int64"));
  EXPECT_TRUE(Refused("cg_unknown.txt", Replace(good, "1 1\n3 _", "1 1\n9 _"),
                      11, "unknown tensor 9"));
  EXPECT_TRUE(Refused("cg_tag.txt", Replace(good, "4 output", "4 outptu"), 39,
                      "unknown tag 'outptu'"));
  // The convolution reads the Add's output, which reads the convolution.
  EXPECT_TRUE(Refused("cg_cycle.txt", Replace(good, "2 1\n0 _", "2 1\n5 _"), 0,
                      "cycle"));
  EXPECT_TRUE(Refused("cg_pair.txt",
                      Replace(good, "4 output\n3\nReLU", "4 output\n3\nTanh"),
                      36, "does not match forward record #0"));
  EXPECT_TRUE(Refused("cg_retain.txt",
                      Replace(good, "\"_output_indexes_to_retain\": [0]",
                              "\"_output_indexes_to_retain\": [1]"),
                      14, "not an index below 1"));
  EXPECT_TRUE(Refused("cg_json.txt",
                      Replace(good, "{\"_input_indexes_to_retain\": null",
                              "{\"_input_indexes_to_retain\": nul"),
                      14, "not a one-line JSON object"));
  EXPECT_TRUE(Refused("cg_trailing.txt", good + "forward\n", 70,
                      "unexpected text after the last record"));
  EXPECT_TRUE(Refused(
      "cg_unpaired.txt",
      Replace(good, "7 8\n", "7 7\n").substr(0, good.rfind("backward\n")), 0,
      "4 forward records but 3 backward records"));
}

}  // namespace
}  // namespace remat
