// TwRemat's `p remat2` text format (nshepperd's twremat), read and written:
//
//   p remat2
//   memlimit <bytes>                                  (optional)
//   node <id> deps <ids...> cpu <cost> mem <bytes> [target]
//
// One node per line. As in the reference parser, `deps` may be left out when
// there are none and a node without `cpu .. mem ..` weighs cpu 1, mem 1.
// Its `effectful` and `pointer` nodes have no equivalent in the native model
// and are refused. Ids must be 0..n-1 so that the tool's schedules (`c <id>`
// / `f <id>`, the native schedule format) keep meaning the same nodes.
// The memlimit is a budget, not part of a graph: it goes to the provenance.
//
// The format has no names, kinds, grad_of, workspace or static bytes;
// writing drops all but workspace, which it refuses because the tool would
// then solve a different problem than the harness measures.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <limits>
#include <ostream>
#include <unordered_map>

#include "graphs/importers/text_lines.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/graph_source.h"

namespace remat {
namespace {

constexpr int64_t kMaxId = std::numeric_limits<NodeId>::max() - 1;

// The node id in `token`, failing on the current line.
NodeId ReadId(const TextLines& lines, std::string_view token) {
  int64_t id = lines.Count(token, "node id");
  if (id > kMaxId) lines.Fail(fmt::format("node id {} is too large", id));
  return static_cast<NodeId>(id);
}

// Parses one `node ...` line (words[0] == "node") into `node`.
void ReadNodeLine(const TextLines& lines,
                  const std::vector<std::string_view>& words, NodeSpec& node) {
  size_t i = 1;
  auto next = [&](const char* what) {
    if (i >= words.size()) {
      lines.Fail(fmt::format("line ends where {} was expected", what));
    }
    return words[i++];
  };
  node.id = ReadId(lines, next("the node id"));
  // Defaults of the reference parser.
  node.cost = 1;
  node.mem = 1;
  node.target = false;
  if (i < words.size() && words[i] == "deps") {
    ++i;
    while (i < words.size() && words[i][0] >= '0' && words[i][0] <= '9') {
      node.inputs.push_back(ReadId(lines, words[i++]));
    }
  }
  if (i < words.size() && words[i] == "cpu") {
    ++i;
    node.cost = lines.Count(next("the cpu cost"), "cpu");
    if (next("'mem'") != "mem") lines.Fail("expected 'mem' after the cpu cost");
    node.mem = lines.Count(next("the mem size"), "mem");
  } else if (i < words.size() &&
             (words[i] == "effectful" || words[i] == "pointer")) {
    lines.Fail(fmt::format(
        "'{}' nodes are not supported (the native model has only values "
        "with a cost and a size)",
        words[i]));
  }
  if (i < words.size() && words[i] == "target") {
    ++i;
    node.target = true;
  }
  if (i < words.size()) {
    lines.Fail(
        fmt::format("unexpected '{}' (expected node <id> deps <ids> "
                    "cpu <c> mem <m> [target])",
                    words[i]));
  }
}

Graph ReadRemat2(const std::string& path) {
  const std::string text = ReadFile(path);
  TextLines lines(text, path);
  std::string_view line;
  std::vector<std::string_view> words;
  do {
    line = lines.Expect("'p remat2'");
    words = SplitWords(line);
  } while (words.empty());
  if (words != std::vector<std::string_view>{"p", "remat2"}) {
    lines.Fail("not a remat2 file (the first line must be 'p remat2')");
  }

  nlohmann::json provenance = {{"format", "remat2"}, {"file", path}};
  std::vector<NodeSpec> nodes;
  std::vector<int64_t> line_of;  // per entry of `nodes`
  std::unordered_map<NodeId, int64_t> line_of_id;
  bool any_target = false;
  while (lines.Next(line)) {
    words = SplitWords(line);
    if (words.empty()) continue;
    if (words[0] == "memlimit") {
      if (!nodes.empty() || provenance.contains("memlimit")) {
        lines.Fail("'memlimit' may only come once, before the nodes");
      }
      if (words.size() != 2) lines.Fail("expected 'memlimit <bytes>'");
      provenance["memlimit"] = lines.Count(words[1], "memlimit");
      continue;
    }
    if (words[0] != "node") {
      lines.Fail(
          fmt::format("unexpected '{}' (expected a 'node' line)", words[0]));
    }
    NodeSpec node;
    ReadNodeLine(lines, words, node);
    if (auto [it, fresh] = line_of_id.emplace(node.id, lines.line_number());
        !fresh) {
      lines.Fail(fmt::format("node {} is defined twice (first on line {})",
                             node.id, it->second));
    }
    any_target = any_target || *node.target;
    nodes.push_back(std::move(node));
    line_of.push_back(lines.line_number());
  }
  if (nodes.empty()) lines.Fail("no nodes after 'p remat2'");

  const auto n = static_cast<int64_t>(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    NodeSpec& node = nodes[k];
    if (node.id >= n) {
      lines.FailAt(line_of[k],
                   fmt::format("node id {} is out of range: ids must be "
                               "0..{} (one per node)",
                               node.id, n - 1));
    }
    for (NodeId u : node.inputs) {
      if (u >= n) {
        lines.FailAt(line_of[k], fmt::format("node {} depends on unknown "
                                             "node {}",
                                             node.id, u));
      }
    }
    // A file that marks no target would ask for nothing to be computed;
    // the native default (the nodes without consumers) is what it means.
    if (!any_target) node.target.reset();
  }

  GraphBuilder builder(path);
  builder.set_name(FileStem(path))
      .set_units("bytes", "abstract")
      .set_provenance(std::move(provenance));
  for (NodeSpec& node : nodes) builder.add_node(std::move(node));
  return std::move(builder).Build();
}

void WriteRemat2(std::ostream& out, const Graph& g) {
  std::string text = "p remat2\n";
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    if (g.workspace(v) != 0) {
      throw InputError(fmt::format(
          "{}: node {} ('{}') has workspace {}, which remat2 cannot represent",
          g.name(), v, g.node_name(v), g.workspace(v)));
    }
    fmt::format_to(std::back_inserter(text),
                   "node {} deps{}{} cpu {} mem {}{}\n", v,
                   g.inputs(v).empty() ? "" : " ", fmt::join(g.inputs(v), " "),
                   g.cost(v), g.mem(v), g.is_target(v) ? " target" : "");
  }
  out << text;
}

const bool kRegistered = RegisterGraphFormat({
    .name = "remat2",
    .description = "TwRemat's 'p remat2' text format (read and write)",
    .sniff =
        [](const std::string&, const std::string& head) {
          std::string_view rest = head;
          while (!rest.empty() &&
                 std::isspace(static_cast<unsigned char>(rest.front()))) {
            rest.remove_prefix(1);
          }
          return rest.starts_with("p remat2");
        },
    .read = ReadRemat2,
    .write = WriteRemat2,
});

}  // namespace
}  // namespace remat
