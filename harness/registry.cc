#include "harness/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "harness/errors.h"

namespace remat {

namespace {

// Function-local statics: registration runs from other files' static
// initializers, whose order relative to this file is unspecified.
std::map<std::string, AlgorithmInfo>& Algorithms() {
  static std::map<std::string, AlgorithmInfo> algorithms;
  return algorithms;
}

std::map<std::string, GeneratorInfo>& Generators() {
  static std::map<std::string, GeneratorInfo> generators;
  return generators;
}

std::map<std::string, GraphPropertyInfo>& GraphProperties() {
  static std::map<std::string, GraphPropertyInfo> properties;
  return properties;
}

}  // namespace

bool RegisterGraphProperty(GraphPropertyInfo info) {
  std::string name = info.name;
  if (!GraphProperties().emplace(name, std::move(info)).second) {
    throw std::logic_error("graph property registered twice: " + name);
  }
  return true;
}

std::vector<const GraphPropertyInfo*> AllGraphProperties() {
  std::vector<const GraphPropertyInfo*> all;
  for (const auto& [name, info] : GraphProperties()) all.push_back(&info);
  return all;
}

bool RegisterAlgorithm(AlgorithmInfo info) {
  std::string name = info.name;
  if (!Algorithms().emplace(name, std::move(info)).second) {
    throw std::logic_error("algorithm registered twice: " + name);
  }
  return true;
}

bool RegisterGenerator(GeneratorInfo info) {
  std::string name = info.name;
  if (!Generators().emplace(name, std::move(info)).second) {
    throw std::logic_error("generator registered twice: " + name);
  }
  return true;
}

std::vector<const AlgorithmInfo*> AllAlgorithms() {
  std::vector<const AlgorithmInfo*> all;
  for (const auto& [name, info] : Algorithms()) all.push_back(&info);
  return all;
}

std::vector<const GeneratorInfo*> AllGenerators() {
  std::vector<const GeneratorInfo*> all;
  for (const auto& [name, info] : Generators()) all.push_back(&info);
  return all;
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
