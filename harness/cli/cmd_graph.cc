// remat graph info | convert — look at a graph, or write it in another format.
#include <fmt/format.h>

#include <map>

#include "harness/cli/commands.h"
#include "harness/cli/output.h"
#include "harness/results.h"
#include "model/file_io.h"
#include "model/graph_source.h"
#include "model/reach_bound.h"
#include "model/registry.h"

namespace remat::cli {

namespace {

Json GraphInfo(const Graph& graph, const std::string& spec) {
  Json info = ToJson(Summarize(graph, spec));
  info["targets"] = graph.targets().size();
  info["units"] = {{"memory", graph.memory_unit()},
                   {"cost", graph.cost_unit()}};
  std::map<std::string, int64_t> by_kind;
  std::map<size_t, int64_t> by_in_degree;
  int64_t forward_bytes = 0;
  NodeId largest = kNoNode;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    ++by_kind[NodeKindName(graph.kind(v))];
    ++by_in_degree[graph.inputs(v).size()];
    if (graph.kind(v) == NodeKind::kForward) forward_bytes += graph.mem(v);
    if (largest == kNoNode || graph.mem(v) > graph.mem(largest)) largest = v;
  }
  info["nodes_by_kind"] = by_kind;
  info["forward_bytes"] = forward_bytes;
  if (largest != kNoNode) {
    info["largest_value"] = {{"node", largest},
                             {"name", graph.node_name(largest)},
                             {"mem_bytes", graph.mem(largest)}};
  }
  // Keys are strings in JSON; "in-degree: count" reads naturally.
  Json in_degrees = Json::object();
  for (const auto& [degree, count] : by_in_degree) {
    in_degrees[std::to_string(degree)] = count;
  }
  info["nodes_by_in_degree"] = in_degrees;
  for (const GraphPropertyInfo* property : AllGraphProperties()) {
    info[property->name] = property->compute(graph);
  }
  return info;
}

Json ReachBoundInfo(const Graph& graph, double seconds) {
  const ReachBound bound = ReachLowerBound(graph, {.seconds = seconds});
  Json out = {{"bytes", bound.bytes},
              {"unproven_above_bytes", bound.unproven_above},
              {"states", bound.states},
              {"limited", bound.limited}};
  out["witness"] = bound.witness == kNoNode
                       ? Json(nullptr)
                       : Json(graph.node_name(bound.witness));
  return out;
}

}  // namespace

void AddGraphCommand(CLI::App& app, int& exit_code) {
  auto* graph = app.add_subcommand("graph", "Inspect or convert a graph");
  graph->require_subcommand(1);

  auto* info = graph->add_subcommand(
      "info",
      "Size, bounds (memory lower bound, NoRemat peak, base cost) and "
      "properties of a graph");
  auto spec = std::make_shared<std::string>();
  info->add_option("graph", *spec, "graph file or generator spec")->required();
  auto reach_seconds = std::make_shared<double>(0);
  info->add_option("--reach-bound", *reach_seconds,
                   "also search this many seconds for the reach bound: no "
                   "schedule that recomputes rather than offloads peaks "
                   "below it (docs/model.md)")
      ->check(CLI::PositiveNumber);
  auto info_json = AddJsonFlag(info);
  info->callback([spec, reach_seconds, info_json, &exit_code] {
    const Graph graph = LoadGraph(*spec);
    Json out = GraphInfo(graph, *spec);
    if (*reach_seconds > 0) {
      out["reach_lower_bound"] = ReachBoundInfo(graph, *reach_seconds);
    }
    Print(out, *info_json);
    exit_code = kExitOk;
  });

  auto* convert = graph->add_subcommand(
      "convert", "Write a graph in another format (json, dot, ...)");
  auto convert_spec = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  convert->add_option("graph", *convert_spec, "graph file or generator spec")
      ->required();
  convert->add_option("--to", *format, "output format (see `remat list`)")
      ->required();
  convert->add_option("-o,--out", *out, "output file ('-': stdout)")
      ->required();
  auto convert_json = AddJsonFlag(convert);
  convert->callback([=, &exit_code] {
    RefuseOutputThatIsAnInput(*out, "graph convert: -o", {*convert_spec});
    Graph g = LoadGraph(*convert_spec);
    // Check the format before creating any file.
    std::ostringstream text;
    WriteGraph(text, g, *format);
    WriteFileAtomically(*out, [&](std::ostream& os) { os << text.str(); });
    if (*out != "-") {
      Print({{"graph", g.name()}, {"format", *format}, {"out", *out},
             {"nodes", g.num_nodes()}},
            *convert_json);
    }
    exit_code = kExitOk;
  });
}

}  // namespace remat::cli
