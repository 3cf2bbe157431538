// remat list — what can be run: algorithms, generators, graph formats.
#include <fmt/format.h>

#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/output.h"
#include "harness/graph_source.h"
#include "harness/registry.h"

namespace remat::cli {

namespace {

Json ParamsJson(const std::vector<ParamSpec>& specs) {
  Json params = Json::array();
  for (const ParamSpec& p : specs) {
    Json param = {{"name", p.name},
                  {"default", p.default_value.empty()
                                  ? Json(nullptr)
                                  : Json(p.default_value)},
                  {"description", p.description}};
    if (!p.choices.empty()) param["choices"] = p.choices;
    params.push_back(param);
  }
  return params;
}

void PrintParams(const std::vector<ParamSpec>& specs) {
  for (const ParamSpec& p : specs) {
    std::cout << fmt::format(
        "      {}={}  {}\n", p.name,
        p.default_value.empty() ? "<required>" : p.default_value,
        p.description);
  }
}

void RunList(bool as_json) {
  Json algorithms = Json::array();
  for (const AlgorithmInfo* a : AllAlgorithms()) {
    algorithms.push_back({{"name", a->name},
                          {"description", a->description},
                          {"citation", a->citation},
                          {"exact", a->exact},
                          {"uses_budget", a->uses_budget},
                          {"params", ParamsJson(a->params)}});
  }
  Json generators = Json::array();
  for (const GeneratorInfo* g : AllGenerators()) {
    generators.push_back({{"name", g->name},
                          {"description", g->description},
                          {"params", ParamsJson(g->params)}});
  }
  Json formats = Json::array();
  for (const GraphFormat* f : AllGraphFormats()) {
    formats.push_back({{"name", f->name},
                       {"description", f->description},
                       {"read", static_cast<bool>(f->read)},
                       {"write", static_cast<bool>(f->write)}});
  }
  if (as_json) {
    Print({{"algorithms", algorithms},
           {"generators", generators},
           {"formats", formats}},
          true);
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
