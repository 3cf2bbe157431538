#include "model/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/errors.h"
#include "model/named_table.h"

namespace remat {

namespace {

// Function-local statics: registration runs from other files' static
// initializers, whose order relative to this file is unspecified.
NamedTable<AlgorithmInfo>& Algorithms() {
  static NamedTable<AlgorithmInfo> algorithms;
  return algorithms;
}

NamedTable<GeneratorInfo>& Generators() {
  static NamedTable<GeneratorInfo> generators;
  return generators;
}

NamedTable<GraphPropertyInfo>& GraphProperties() {
  static NamedTable<GraphPropertyInfo> properties;
  return properties;
}

}  // namespace

bool RegisterGraphProperty(GraphPropertyInfo info) {
  return AddNamed(GraphProperties(), std::move(info), "graph property");
}

std::vector<const GraphPropertyInfo*> AllGraphProperties() {
  return AllNamed(GraphProperties());
}

bool RegisterAlgorithm(AlgorithmInfo info) {
  return AddNamed(Algorithms(), std::move(info), "algorithm");
}

bool RegisterGenerator(GeneratorInfo info) {
  return AddNamed(Generators(), std::move(info), "generator");
}

std::vector<const AlgorithmInfo*> AllAlgorithms() {
  return AllNamed(Algorithms());
}

std::vector<const GeneratorInfo*> AllGenerators() {
  return AllNamed(Generators());
}

const AlgorithmInfo& FindAlgorithm(const std::string& name) {
  auto it = Algorithms().find(name);
  if (it == Algorithms().end()) {
    std::vector<std::string> known;
    for (const auto& [known_name, info] : Algorithms()) {
      known.push_back(known_name);
    }
    throw InputError(fmt::format("unknown algorithm '{}' (known: {})", name,
                                 fmt::join(known, ", ")));
  }
  return it->second;
}

const GeneratorInfo* FindGenerator(const std::string& name) {
  auto it = Generators().find(name);
  return it == Generators().end() ? nullptr : &it->second;
}

}  // namespace remat
