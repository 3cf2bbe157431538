// Registries of algorithms and graph generators. Each algorithm or generator
// registers itself from its own file with one call, so adding one means
// adding one file (docs/adding_an_algorithm.md).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"
#include "model/options.h"
#include "model/params.h"

namespace remat {

struct AlgorithmInfo {
  std::string name;
  std::string description;  // one line
  std::string citation;
  bool exact = false;  // proves optimality (within its stated model)
  // False when the schedule does not depend on the budget: the sweep then
  // solves once per graph and judges that schedule at every budget.
  bool uses_budget = true;
  // Run each solve in a child process (harness/isolation.h): for
  // algorithms that call a library which can crash or keeps process-wide
  // state.
  bool isolate = false;
  // Optional: the algorithm's own quick refusals (too_large, a budget below
  // the lower bound), in time linear in the graph. An isolated algorithm's
  // are checked before the graph is sent to its process, which takes
  // seconds for 10^6 nodes: longer than the time limit such a refusal
  // should take.
  std::function<std::optional<AlgorithmOutput>(const Graph& graph,
                                               const SolveRequest& request)>
      refuse;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Algorithm>()> create;
};

struct GeneratorInfo {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  // `spec` is the full generator spec, for the graph's name and provenance.
  std::function<Graph(const Params& params, const std::string& spec)> generate;
};

// The GeneratorInfo::generate of a generator whose parameters are the typed
// options `options` (model/options.h; its GeneratorInfo::params are
// options.Specs()): `generate` gets them read once, as a T.
template <typename T>
std::function<Graph(const Params& params, const std::string& spec)>
GenerateWith(const Options<T>& options,
             Graph (*generate)(const T& options, const std::string& spec)) {
  return [&options, generate](const Params& params, const std::string& spec) {
    return generate(options.Read(params), spec);
  };
}

// A figure `remat graph info` reports for every graph, contributed by the
// code that knows how to compute it (e.g. a treewidth upper bound).
struct GraphPropertyInfo {
  std::string name;
  std::function<nlohmann::json(const Graph& graph)> compute;
};

// All three return true so that a file can register from a static initializer:
//   const bool kRegistered = RegisterAlgorithm({...});
bool RegisterAlgorithm(AlgorithmInfo info);
bool RegisterGenerator(GeneratorInfo info);
bool RegisterGraphProperty(GraphPropertyInfo info);

// Sorted by name.
std::vector<const AlgorithmInfo*> AllAlgorithms();
std::vector<const GeneratorInfo*> AllGenerators();
std::vector<const GraphPropertyInfo*> AllGraphProperties();

// Throw InputError listing the known names when `name` is unknown.
const AlgorithmInfo& FindAlgorithm(const std::string& name);
const GeneratorInfo* FindGenerator(const std::string& name);

}  // namespace remat
