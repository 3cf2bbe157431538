#include "model/graph_dot.h"

#include <fmt/format.h>

#include <ostream>

#include "model/params.h"

namespace remat {

namespace {

const char* Shape(NodeKind kind) {
  switch (kind) {
    case NodeKind::kForward:
      return "box";
    case NodeKind::kBackward:
      return "ellipse";
    case NodeKind::kLoss:
      return "diamond";
    case NodeKind::kOther:
      return "octagon";
  }
  return "box";
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

void WriteGraphDot(std::ostream& out, const Graph& g) {
  std::string text = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n",
                                 Escape(g.name()));
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    fmt::format_to(std::back_inserter(text),
                   "  n{} [shape={}{}, label=\"{}\\n{} | cost {}\"];\n", v,
                   Shape(g.kind(v)), g.is_target(v) ? ", peripheries=2" : "",
                   Escape(g.node_name(v)), FormatBytes(g.mem(v)), g.cost(v));
  }
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    for (NodeId u : g.inputs(v)) {
      fmt::format_to(std::back_inserter(text), "  n{} -> n{};\n", u, v);
    }
  }
  text += "}\n";
  out << text;
}

}  // namespace remat
