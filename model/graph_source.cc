#include "model/graph_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>

#include "model/errors.h"
#include "model/file_io.h"
#include "model/graph_dot.h"
#include "model/graph_json.h"
#include "model/named_table.h"
#include "model/params.h"
#include "model/registry.h"

namespace remat {

namespace {

NamedTable<GraphFormat>& Formats() {
  static NamedTable<GraphFormat> formats;
  return formats;
}

std::string Head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), head.size());
  head.resize(in.gcount());
  return head;
}

Graph Generate(const std::string& spec) {
  auto [name, items] = SplitSpec(spec);
  const GeneratorInfo* generator = FindGenerator(name);
  if (generator == nullptr) {
    std::vector<std::string> known;
    for (const GeneratorInfo* g : AllGenerators()) known.push_back(g->name);
    throw InputError(fmt::format(
        "{}: no such file, and '{}' is not a generator (generators: {})", spec,
        name, fmt::join(known, ", ")));
  }
  Params params = Params::Parse(items, generator->params, spec);
  return generator->generate(params, spec);
}

}  // namespace

bool RegisterGraphFormat(GraphFormat format) {
  return AddNamed(Formats(), std::move(format), "graph format");
}

std::vector<const GraphFormat*> AllGraphFormats() {
  return AllNamed(Formats());
}

namespace {

Graph LoadAnyGraph(const std::string& spec) {
  std::error_code ec;
  if (!std::filesystem::exists(spec, ec)) return Generate(spec);
  if (std::filesystem::is_directory(spec, ec)) {
    throw InputError(fmt::format("{}: is a directory, not a graph file", spec));
  }
  RequireRegularFile(spec);  // a FIFO or /dev/zero is never sniffed
  const std::string head = Head(spec);
  for (const auto& [name, format] : Formats()) {
    if (format.read && format.sniff(spec, head)) return format.read(spec);
  }
  // Unrecognized JSON goes to the native reader, whose error says why.
  if (spec.ends_with(".json")) return ReadGraphJsonFile(spec);
  std::vector<std::string> readable;
  for (const auto& [name, format] : Formats()) {
    if (format.read) readable.push_back(name);
  }
  throw InputError(fmt::format("{}: not a graph file in a known format ({})",
                               spec, fmt::join(readable, ", ")));
}

}  // namespace

Graph LoadGraph(const std::string& spec) {
  Graph graph = LoadAnyGraph(spec);
  // Such a graph is well formed, but every figure of it would be 0 and
  // every overhead 0/0 or 1: a user meant something else.
  if (graph.num_nodes() == 0) {
    throw InputError(fmt::format("{}: the graph has no nodes", spec));
  }
  if (graph.targets().empty()) {
    throw InputError(fmt::format(
        "{}: the graph has no target (every node without consumers has "
        "\"target\": false)",
        spec));
  }
  return graph;
}

void WriteGraph(std::ostream& out, const Graph& graph,
                const std::string& format) {
  auto it = Formats().find(format);
  if (it == Formats().end() || !it->second.write) {
    std::vector<std::string> writable;
    for (const auto& [name, f] : Formats()) {
      if (f.write) writable.push_back(name);
    }
    throw InputError(fmt::format("unknown output format '{}' (known: {})",
                                 format, fmt::join(writable, ", ")));
  }
  it->second.write(out, graph);
}

namespace {

// The formats of the core; importers register theirs from their own files.
const bool kCoreFormatsRegistered =
    RegisterGraphFormat({
        .name = "json",
        .description = "rematbench native graph JSON, version 1",
        .sniff =
            [](const std::string&, const std::string& head) {
              return head.find("\"rematbench-graph\"") != std::string::npos;
            },
        .read = ReadGraphJsonFile,
        .write = WriteGraphJson,
    }) &&
    RegisterGraphFormat({
        .name = "dot",
        .description = "Graphviz dot (write only)",
        .sniff = [](const std::string&, const std::string&) { return false; },
        .read = nullptr,
        .write = WriteGraphDot,
    });

}  // namespace

}  // namespace remat
