#include "model/graph_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <ostream>

#include "model/errors.h"
#include "model/file_io.h"
#include "model/json_text.h"
#include "model/stop.h"

namespace remat {

namespace {

using nlohmann::json;

// Reads the int64 at `value`; `where` names it in the error.
int64_t ToInt64(const json& value, const std::string& where) {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw InputError(
          fmt::format("{} overflows int64 ({})", where, DescribeJson(value)));
    }
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    throw InputError(
        fmt::format("{} must be an integer in int64 range (got {})", where,
                    DescribeJson(value)));
  }
  throw InputError(fmt::format("{} must be an integer (got {})", where,
                               DescribeJson(value)));
}

class NodeReader {
 public:
  NodeReader(const std::string& source, const json& node, size_t index)
      : node_(node) {
    if (!node.is_object()) {
      throw InputError(
          fmt::format("{}: nodes[{}] is not an object", source, index));
    }
    // Name the node by its id once the id is known, else by its position.
    label_ = fmt::format("{}: nodes[{}]", source, index);
    if (auto it = node.find("id"); it != node.end() && it->is_number_integer())
      label_ = fmt::format("{}: node {}", source, it->dump());
  }

  const json& Required(const char* key) const {
    auto it = node_.find(key);
    if (it == node_.end() || it->is_null())
      Fail(fmt::format("missing '{}'", key));
    return *it;
  }
  const json* Optional(const char* key) const {
    auto it = node_.find(key);
    return it == node_.end() || it->is_null() ? nullptr : &*it;
  }
  int64_t Int(const json& value, const std::string& what) const {
    try {
      return ToInt64(value, fmt::format("'{}'", what));
    } catch (const InputError& e) {
      Fail(e.what());
    }
  }
  std::string String(const char* key) const {
    const json* value = Optional(key);
    if (value == nullptr) return {};
    if (!value->is_string()) Fail(fmt::format("'{}' must be a string", key));
    return value->get<std::string>();
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", label_, what));
  }

 private:
  const json& node_;
  std::string label_;
};

NodeSpec ReadNode(const std::string& source, const json& node, size_t index) {
  NodeReader r(source, node, index);
  NodeSpec spec;
  int64_t id = r.Int(r.Required("id"), "id");
  if (id < 0 || id > std::numeric_limits<NodeId>::max()) {
    r.Fail(fmt::format("id {} is out of range", id));
  }
  spec.id = static_cast<NodeId>(id);
  spec.mem = r.Int(r.Required("mem"), "mem");
  spec.cost = r.Int(r.Required("cost"), "cost");
  const json& inputs = r.Required("inputs");
  if (!inputs.is_array()) r.Fail("'inputs' must be an array of node ids");
  spec.inputs.reserve(inputs.size());
  for (const json& input : inputs) {
    int64_t u = r.Int(input, "inputs");
    if (u < 0 || u > std::numeric_limits<NodeId>::max()) {
      r.Fail(fmt::format("input {} is not a node id", u));
    }
    spec.inputs.push_back(static_cast<NodeId>(u));
  }
  spec.name = r.String("name");
  spec.op = r.String("op");
  if (const json* kind = r.Optional("kind")) {
    auto parsed = kind->is_string() ? ParseNodeKind(kind->get<std::string>())
                                    : std::nullopt;
    if (!parsed) {
      r.Fail(fmt::format(
          "'kind' must be forward, backward, loss or other (got {})",
          DescribeJson(*kind)));
    }
    spec.kind = *parsed;
  }
  if (const json* workspace = r.Optional("workspace")) {
    spec.workspace = r.Int(*workspace, "workspace");
  }
  if (const json* grad_of = r.Optional("grad_of")) {
    int64_t f = r.Int(*grad_of, "grad_of");
    if (f < 0 || f > std::numeric_limits<NodeId>::max()) {
      r.Fail(fmt::format("grad_of names unknown node {}", f));
    }
    spec.grad_of = static_cast<NodeId>(f);
  }
  if (const json* target = r.Optional("target")) {
    if (!target->is_boolean()) r.Fail("'target' must be true or false");
    spec.target = target->get<bool>();
  }
  return spec;
}

}  // namespace

Graph ParseGraphJson(std::string_view text, const std::string& source) {
  json doc = ParseJson(text, source);
  if (!doc.is_object() || !doc.contains("format") ||
      doc["format"] != "rematbench-graph") {
    throw InputError(fmt::format(
        "{}: not a rematbench graph (\"format\" must be \"rematbench-graph\")",
        source));
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<int64_t>() != 1) {
    throw InputError(fmt::format(
        "{}: unsupported graph format version {} (this reader knows 1)", source,
        doc.contains("version") ? DescribeJson(doc["version"]) : "(missing)"));
  }
  auto nodes = doc.find("nodes");
  if (nodes == doc.end() || !nodes->is_array()) {
    throw InputError(fmt::format("{}: \"nodes\" must be an array", source));
  }

  GraphBuilder builder(source);
  if (auto name = doc.find("name"); name != doc.end() && !name->is_null()) {
    if (!name->is_string()) {
      throw InputError(fmt::format("{}: \"name\" must be a string, not {}",
                                   source, DescribeJson(*name)));
    }
    builder.set_name(name->get<std::string>());
  }
  if (auto bytes = doc.find("static_bytes");
      bytes != doc.end() && !bytes->is_null()) {
    int64_t static_bytes;
    try {
      static_bytes = ToInt64(*bytes, "\"static_bytes\"");
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", source, e.what()));
    }
    // Outside the try: the builder's own error names the source already.
    builder.set_static_bytes(static_bytes);
  }
  if (auto units = doc.find("units"); units != doc.end() && !units->is_null()) {
    // A unit of the wrong type is refused, never replaced by the default:
    // figures in FLOPs read as abstract units would be wrong silently.
    if (!units->is_object()) {
      throw InputError(fmt::format(
          "{}: \"units\" must be an object such as {{\"memory\": "
          "\"bytes\", \"cost\": \"flop\"}}, not {}",
          source, DescribeJson(*units)));
    }
    auto unit = [&](const char* key, const char* otherwise) {
      auto it = units->find(key);
      if (it == units->end() || it->is_null()) return std::string(otherwise);
      if (!it->is_string()) {
        throw InputError(fmt::format("{}: \"units\".\"{}\" must be a string, "
                                     "not {}",
                                     source, key, DescribeJson(*it)));
      }
      return it->get<std::string>();
    };
    builder.set_units(unit("memory", "bytes"), unit("cost", "abstract"));
  }
  if (auto provenance = doc.find("provenance"); provenance != doc.end()) {
    builder.set_provenance(*provenance);
  }
  // Reading a node's fields is most of the work after parsing: a stop is
  // looked for more often than GraphBuilder does.
  StopPoll stop;
  for (size_t i = 0; i < nodes->size(); ++i) {
    stop.Tick();
    builder.add_node(ReadNode(source, (*nodes)[i], i));
  }
  return std::move(builder).Build();
}

Graph ReadGraphJsonFile(const std::string& path) {
  return ParseGraphJson(ReadFile(path), path);
}

void WriteGraphJson(std::ostream& out, const Graph& g) {
  auto quote = [](const std::string& s) { return DumpJson(json(s)); };
  std::string text = fmt::format(
      "{{\n  \"format\": \"rematbench-graph\",\n  \"version\": 1,\n"
      "  \"name\": {},\n  \"static_bytes\": {},\n"
      "  \"units\": {{\"memory\": {}, \"cost\": {}}},\n"
      "  \"provenance\": {},\n  \"nodes\": [\n",
      quote(g.name()), g.static_bytes(), quote(g.memory_unit()),
      quote(g.cost_unit()), DumpJson(g.provenance()));
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    fmt::format_to(std::back_inserter(text),
                   "    {{\"id\": {}, \"name\": {}, \"kind\": \"{}\"", v,
                   quote(g.node_name(v)), NodeKindName(g.kind(v)));
    if (!g.op(v).empty()) {
      fmt::format_to(std::back_inserter(text), ", \"op\": {}", quote(g.op(v)));
    }
    fmt::format_to(std::back_inserter(text), ", \"mem\": {}, \"cost\": {}",
                   g.mem(v), g.cost(v));
    if (g.workspace(v) != 0) {
      fmt::format_to(std::back_inserter(text), ", \"workspace\": {}",
                     g.workspace(v));
    }
    if (g.grad_of(v) != kNoNode) {
      fmt::format_to(std::back_inserter(text), ", \"grad_of\": {}",
                     g.grad_of(v));
    }
    if (g.is_target(v) != g.consumers(v).empty()) {
      fmt::format_to(std::back_inserter(text), ", \"target\": {}",
                     g.is_target(v));
    }
    fmt::format_to(std::back_inserter(text), ", \"inputs\": [{}]}}{}\n",
                   fmt::join(g.inputs(v), ", "),
                   v + 1 < g.num_nodes() ? "," : "");
  }
  text += "  ]\n}\n";
  out << text;
}

}  // namespace remat
