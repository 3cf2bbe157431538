#include "harness/registry_json.h"

#include <vector>

#include "model/graph_source.h"
#include "model/registry.h"

namespace remat {
namespace {

using Json = nlohmann::json;

Json ParamsJson(const std::vector<ParamSpec>& specs) {
  Json params = Json::array();
  for (const ParamSpec& p : specs) {
    Json param = {{"name", p.name},
                  {"default", p.default_value.empty() ? Json(nullptr)
                                                      : Json(p.default_value)},
                  {"description", p.description}};
    if (!p.choices.empty()) param["choices"] = p.choices;
    params.push_back(param);
  }
  return params;
}

}  // namespace

Json RegistryJson() {
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
  return {{"algorithms", algorithms},
          {"generators", generators},
          {"formats", formats}};
}

}  // namespace remat
