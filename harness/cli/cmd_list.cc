// remat list — what can be run: algorithms, generators, graph formats.
#include <fmt/format.h>

#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/output.h"
#include "harness/registry_json.h"
#include "model/graph_source.h"
#include "model/registry.h"

namespace remat::cli {

namespace {

void PrintParams(const std::vector<ParamSpec>& specs) {
  for (const ParamSpec& p : specs) {
    std::cout << fmt::format(
        "      {}={}  {}\n", p.name,
        p.default_value.empty() ? "<required>" : p.default_value,
        p.description);
  }
}

void RunList(bool as_json) {
  if (as_json) {
    Print(RegistryJson(), true);
    return;
  }
  std::cout << "Algorithms:\n";
  for (const AlgorithmInfo* a : AllAlgorithms()) {
    std::cout << fmt::format("  {:<18} [{}] {}\n      source: {}\n", a->name,
                             a->exact ? "exact" : "heuristic", a->description,
                             a->citation);
    PrintParams(a->params);
  }
  std::cout << "\nGraph generators (use as name:k=v,k=v):\n";
  for (const GeneratorInfo* g : AllGenerators()) {
    std::cout << fmt::format("  {:<18} {}\n", g->name, g->description);
    PrintParams(g->params);
  }
  std::cout << "\nGraph file formats:\n";
  for (const GraphFormat* f : AllGraphFormats()) {
    std::cout << fmt::format("  {:<18} {} ({}{})\n", f->name, f->description,
                             f->read ? "read" : "",
                             f->write ? (f->read ? ", write" : "write") : "");
  }
}

}  // namespace

void AddListCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "list", "List the registered algorithms, graph generators and formats");
  auto as_json = AddJsonFlag(cmd);
  cmd->callback([as_json, &exit_code] {
    RunList(*as_json);
    exit_code = kExitOk;
  });
}

}  // namespace remat::cli
