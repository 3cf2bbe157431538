// The native JSON format v1: round trips, defaults, and every kind of
// malformed input refused with one line naming the file and the node/line.
#include <gtest/gtest.h>

#include <sstream>

#include "model/errors.h"
#include "model/graph_json.h"
#include "model/graph_source.h"
#include "model/json_text.h"
#include "tests/test_support.h"

namespace remat {
namespace {

std::string Header() {
  return "{\"format\": \"rematbench-graph\", \"version\": 1, \"nodes\": ";
}

// The error message for `text`, or "" if it parses.
std::string ErrorOf(const std::string& text) {
  try {
    ParseGraphJson(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void ExpectError(const std::string& text, const std::string& expected) {
  std::string error = ErrorOf(text);
  EXPECT_EQ(error.rfind("bad.json", 0), 0u) << "does not name the file: "
                                            << error;
  EXPECT_NE(error.find(expected), std::string::npos)
      << "expected '" << expected << "' in: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
}

TEST(GraphJson, ReadsAllFieldsAndDefaults) {
  Graph g = ParseGraphJson(
      R"({"format": "rematbench-graph", "version": 1, "name": "x",
          "static_bytes": 12, "units": {"memory": "bytes", "cost": "flop"},
          "provenance": {"generator": "hand"}, "future_field": [1, 2],
          "nodes": [
            {"id": 1, "name": "g", "kind": "backward", "op": "relu",
             "mem": 2, "cost": 3, "workspace": 4, "grad_of": 0,
             "target": true, "inputs": [0], "unknown": "ignored"},
            {"id": 0, "mem": 5, "cost": 6, "inputs": []}]})",
      "x.json");
  EXPECT_EQ(g.name(), "x");
  EXPECT_EQ(g.static_bytes(), 12);
  EXPECT_EQ(g.cost_unit(), "flop");
  EXPECT_EQ(g.provenance()["generator"], "hand");
  EXPECT_EQ(g.node_name(0), "n0");
  EXPECT_EQ(g.kind(0), NodeKind::kForward);
  EXPECT_EQ(g.grad_of(0), kNoNode);
  EXPECT_EQ(g.workspace(0), 0);
  EXPECT_EQ(g.kind(1), NodeKind::kBackward);
  EXPECT_EQ(g.op(1), "relu");
  EXPECT_EQ(g.mem(1), 2);
  EXPECT_EQ(g.cost(1), 3);
  EXPECT_EQ(g.workspace(1), 4);
  EXPECT_EQ(g.grad_of(1), 0);
  EXPECT_TRUE(g.is_target(1));
}

TEST(GraphJson, RoundTripsEveryFixture) {
  for (const std::string& spec : testing::FixtureGraphSpecs()) {
    Graph g = LoadGraph(spec);
    std::ostringstream first;
    WriteGraphJson(first, g);
    Graph again = ParseGraphJson(first.str(), spec);
    std::ostringstream second;
    WriteGraphJson(second, again);
    EXPECT_EQ(first.str(), second.str()) << spec;
    ASSERT_EQ(again.num_nodes(), g.num_nodes());
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      EXPECT_EQ(again.is_target(v), g.is_target(v)) << spec << " node " << v;
      EXPECT_EQ(again.node_name(v), g.node_name(v));
    }
  }
}

TEST(GraphJson, RefusesTextThatIsNotJson) {
  ExpectError("{\"format\": \"rematbench-graph\",\n \"nodes\": [\n{\"id\": 0,",
              "bad.json:3: not valid JSON");
  ExpectError("hello", "bad.json:1: not valid JSON");
  ExpectError("", "not valid JSON");
}

TEST(GraphJson, RefusesOtherDocuments) {
  ExpectError("[1, 2]", "not a rematbench graph");
  ExpectError(R"({"format": "something-else", "version": 1, "nodes": []})",
              "not a rematbench graph");
  ExpectError(R"({"format": "rematbench-graph", "version": 2, "nodes": []})",
              "unsupported graph format version 2");
  ExpectError(R"({"format": "rematbench-graph", "version": 1})",
              "\"nodes\" must be an array");
}

TEST(GraphJson, RefusesMissingRequiredFields) {
  ExpectError(Header() + R"([{"mem": 1, "cost": 1, "inputs": []}]})",
              "nodes[0]: missing 'id'");
  ExpectError(Header() + R"([{"id": 0, "cost": 1, "inputs": []}]})",
              "node 0: missing 'mem'");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "inputs": []}]})",
              "node 0: missing 'cost'");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1}]})",
              "node 0: missing 'inputs'");
}

TEST(GraphJson, RefusesNonIntegerAndOverflowingNumbers) {
  ExpectError(Header() + R"([{"id": 0, "mem": 1.5, "cost": 1, "inputs": []}]})",
              "node 0: 'mem' must be an integer");
  ExpectError(Header() + R"([{"id": 0, "mem": "4", "cost": 1, "inputs": []}]})",
              "node 0: 'mem' must be an integer");
  ExpectError(Header() +
                  R"([{"id": 0, "mem": 9223372036854775808, "cost": 1,
                       "inputs": []}]})",
              "node 0: 'mem' overflows int64");
  ExpectError(Header() +
                  R"([{"id": 0, "mem": 1, "cost": 1e30, "inputs": []}]})",
              "node 0: 'cost' must be an integer in int64 range");
  ExpectError(Header() + R"([{"id": 0, "mem": -1, "cost": 1, "inputs": []}]})",
              "node 0: mem is negative");
}

TEST(GraphJson, RefusesBadIdsAndEdges) {
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": []},
                             {"id": 0, "mem": 1, "cost": 1, "inputs": []}]})",
              "node 0: duplicate id");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": [4]}]})",
              "node 0: input 4 is not a node id");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": [1]},
                             {"id": 1, "mem": 1, "cost": 1, "inputs": [0]}]})",
              "lies on a cycle");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": []},
                             {"id": 1, "mem": 1, "cost": 1, "inputs": [0, 0]}]})",
              "node 1: input 0 is listed twice");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": 0}]})",
              "node 0: 'inputs' must be an array");
}

TEST(GraphJson, RefusesBadOptionalFields) {
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": [],
                              "kind": "sideways"}]})",
              "node 0: 'kind' must be forward, backward, loss or other");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": [],
                              "target": 1}]})",
              "node 0: 'target' must be true or false");
  ExpectError(Header() + R"([{"id": 0, "mem": 1, "cost": 1, "inputs": [],
                              "grad_of": 3}]})",
              "node 0: grad_of names unknown node 3");
  ExpectError(R"({"format": "rematbench-graph", "version": 1,
                  "static_bytes": -5, "nodes": []})",
              "static_bytes is negative");
}

TEST(GraphJson, BoundsNestingWhereverItIs) {
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_EQ(FindExcessNesting(R"({"a": "[[[[\"[[[", "b": [[1]]})", 3),
            std::string_view::npos);
  EXPECT_EQ(FindExcessNesting(R"({"a": "]]]\\", "b": [[[1]]]})", 3), 22u);
  EXPECT_EQ(FindExcessNesting(std::string(kMaxJsonDepth, '[')),
            std::string_view::npos);
  EXPECT_EQ(FindExcessNesting(std::string(kMaxJsonDepth + 1, '[')),
            static_cast<size_t>(kMaxJsonDepth));
  // Every field of a node, the document's own fields and unknown ones.
  const std::string deep =
      std::string(100000, '[') + "1" + std::string(100000, ']');
  ExpectError(Header() + "[{\"id\": 0, \"mem\": " + deep +
                  ", \"cost\": 1, \"inputs\": []}]}",
              "bad.json:1: not valid JSON here: arrays and objects nested "
              "deeper than 256 levels");
  ExpectError(
      "{\"format\": \"rematbench-graph\",\n \"version\": 1,\n"
      " \"future\": " +
          deep + ", \"nodes\": []}",
      "bad.json:3: not valid JSON here");
  EXPECT_TRUE(ParseJsonLine(deep).is_discarded());
  EXPECT_EQ(ParseJsonLine("[[1]]"), nlohmann::json::parse("[[1]]"));
}

TEST(GraphJson, DescribesUserValuesWithoutRecursionOrBadBytes) {
  EXPECT_EQ(DescribeJson(nlohmann::json::parse("[[[1]]]")), "an array of 1");
  EXPECT_EQ(DescribeJson(nlohmann::json::parse("{}")), "an empty object");
  EXPECT_EQ(DescribeJson(nlohmann::json(std::string("a\xff"))),
            "\"a\xef\xbf\xbd\"");
  EXPECT_EQ(DescribeJson(nlohmann::json(std::string(100, 'x'))),
            "\"" + std::string(60, 'x') + "\"...");
  EXPECT_EQ(DescribeJson(nlohmann::json(2.5)), "2.5");
}

}  // namespace
}  // namespace remat
