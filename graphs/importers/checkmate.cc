// Checkmate's graphs (Jain et al., MLSys 2020; the files of
// haoming-codes/moccasin `data/`): networkx node-link JSON in two flavours,
// mapped as docs/formats.md ("Checkmate node-link JSON") binds them.
//
// Keras models (`*_train.json`, `*_test.json`): nodes {id, name, backward,
// cost_cpu, cost_ram}, links {source, target}. `X_backward` is the backward
// of the node named `X` (grad_of); a node marked backward without that suffix
// (`Loss`) is the loss. No parameter sizes are given: static_bytes is 0.
//
// Random layered DAGs (`random_layered_*.json`): nodes {name (the id),
// out_cost, duration, param_cost}, links {"0": source, "1": target}. Plain
// DAGs, so every node is a forward value; param_cost goes to static_bytes.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "graphs/importers/text_lines.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/graph_source.h"
#include "model/json_text.h"

namespace remat {
namespace {

using nlohmann::json;

constexpr std::string_view kBackwardSuffix = "_backward";

// Reads a non-negative int64 at `object[key]`; `where` names the object.
int64_t Count(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) {
    throw InputError(fmt::format("{}: missing '{}'", where, key));
  }
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() &&
       it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) ||
      it->get<int64_t>() < 0) {
    throw InputError(fmt::format(
        "{}: '{}' must be a non-negative integer in int64 range (got {})",
        where, key, DescribeJson(*it)));
  }
  return it->get<int64_t>();
}

NodeId Id(const json& object, const char* key, const std::string& where) {
  int64_t id = Count(object, key, where);
  if (id >= INT32_MAX) {
    throw InputError(fmt::format("{}: id {} is too large", where, id));
  }
  return static_cast<NodeId>(id);
}

// A Keras-model node; `where` is "<file>: nodes[<index>]".
NodeSpec ReadModelNode(const json& node, const std::string& where) {
  NodeSpec spec;
  spec.id = Id(node, "id", where);
  auto name = node.find("name");
  auto backward = node.find("backward");
  if (name == node.end() || !name->is_string()) {
    throw InputError(fmt::format("{}: 'name' must be a string", where));
  }
  if (backward == node.end() || !backward->is_boolean()) {
    throw InputError(
        fmt::format("{}: 'backward' must be true or false", where));
  }
  spec.name = name->get<std::string>();
  spec.mem = Count(node, "cost_ram", where);
  spec.cost = Count(node, "cost_cpu", where);
  if (backward->get<bool>()) {
    spec.kind = spec.name.ends_with(kBackwardSuffix) ? NodeKind::kBackward
                                                     : NodeKind::kLoss;
  }
  return spec;
}

// grad_of of every `X_backward` node: the node named X.
void LinkGradients(std::vector<NodeSpec>& nodes, const std::string& path) {
  std::unordered_map<std::string, NodeId> by_name;
  for (const NodeSpec& node : nodes) {
    if (!by_name.emplace(node.name, node.id).second) {
      throw InputError(fmt::format("{}: node {}: name '{}' is used twice", path,
                                   node.id, node.name));
    }
  }
  for (NodeSpec& node : nodes) {
    if (node.kind != NodeKind::kBackward) continue;
    std::string forward =
        node.name.substr(0, node.name.size() - kBackwardSuffix.size());
    auto it = by_name.find(forward);
    if (it == by_name.end()) {
      throw InputError(
          fmt::format("{}: node {} ('{}'): no node named '{}' "
                      "to be the gradient of",
                      path, node.id, node.name, forward));
    }
    node.grad_of = it->second;
  }
}

Graph ReadCheckmate(const std::string& path) {
  const std::string text = ReadFile(path);
  const json doc = ParseJson(text, path);
  auto nodes = doc.find("nodes");
  auto links = doc.find("links");
  if (!doc.is_object() || nodes == doc.end() || !nodes->is_array() ||
      links == doc.end() || !links->is_array()) {
    throw InputError(fmt::format(
        "{}: not a node-link graph (needs arrays 'nodes' and 'links')", path));
  }
  const bool layered = !nodes->empty() && (*nodes)[0].is_object() &&
                       (*nodes)[0].contains("out_cost");

  std::vector<NodeSpec> specs;
  int64_t static_bytes = 0;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json& node = (*nodes)[i];
    const std::string where = fmt::format("{}: nodes[{}]", path, i);
    if (!node.is_object()) {
      throw InputError(fmt::format("{}: not an object", where));
    }
    if (!layered) {
      specs.push_back(ReadModelNode(node, where));
      continue;
    }
    NodeSpec spec;
    spec.id = Id(node, "name", where);
    spec.mem = Count(node, "out_cost", where);
    spec.cost = Count(node, "duration", where);
    if (__builtin_add_overflow(static_bytes, Count(node, "param_cost", where),
                               &static_bytes)) {
      throw InputError(fmt::format("{}: param_cost overflows int64", where));
    }
    specs.push_back(std::move(spec));
  }

  std::unordered_map<NodeId, size_t> index_of;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!index_of.emplace(specs[i].id, i).second) {
      throw InputError(fmt::format("{}: nodes[{}]: id {} is used twice", path,
                                   i, specs[i].id));
    }
  }
  const char* source_key = layered ? "0" : "source";
  const char* target_key = layered ? "1" : "target";
  for (size_t i = 0; i < links->size(); ++i) {
    const json& link = (*links)[i];
    const std::string where = fmt::format("{}: links[{}]", path, i);
    if (!link.is_object()) {
      throw InputError(fmt::format("{}: not an object", where));
    }
    NodeId from = Id(link, source_key, where);
    NodeId to = Id(link, target_key, where);
    for (NodeId end : {from, to}) {
      if (!index_of.contains(end)) {
        throw InputError(fmt::format("{}: unknown node {}", where, end));
      }
    }
    specs[index_of[to]].inputs.push_back(from);
  }
  if (!layered) LinkGradients(specs, path);

  json provenance = {{"format", layered ? "checkmate-layered" : "checkmate"},
                     {"file", path}};
  if (auto graph = doc.find("graph");
      graph != doc.end() && graph->is_object() && graph->contains("name")) {
    provenance["name"] = (*graph)["name"];
  }
  GraphBuilder builder(path);
  builder.set_name(FileStem(path))
      .set_static_bytes(static_bytes)
      .set_units("bytes", "abstract")
      .set_provenance(std::move(provenance));
  for (NodeSpec& spec : specs) builder.add_node(std::move(spec));
  return std::move(builder).Build();
}

// networkx writes "directed" and "multigraph" first in node-link data.
bool SniffNodeLink(const std::string&, const std::string& head) {
  return head.find_first_not_of(" \t\r\n") != std::string::npos &&
         head[head.find_first_not_of(" \t\r\n")] == '{' &&
         head.find("\"directed\"") != std::string::npos &&
         head.find("\"multigraph\"") != std::string::npos;
}

const bool kRegistered = RegisterGraphFormat({
    .name = "checkmate",
    .description =
        "Checkmate node-link JSON (Keras models and random layered DAGs)",
    .sniff = SniffNodeLink,
    .read = ReadCheckmate,
    .write = nullptr,
});

}  // namespace
}  // namespace remat
