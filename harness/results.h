// Building blocks of the results JSON, version 1 (results/SCHEMA.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harness/runner.h"
#include "model/graph.h"

namespace remat {

// The per-graph figures every tool reports (also `remat graph info`).
struct GraphSummary {
  std::string name;
  std::string spec;
  int32_t nodes = 0;
  int64_t edges = 0;
  int64_t base_cost = 0;
  int64_t longest_path_cost = 0;  // LongestPathCost: NoRemat's critical path
  int64_t static_bytes = 0;
  int64_t lower_bound_bytes = 0;
  int64_t noremat_peak_bytes = 0;
  std::string content_hash;
};

GraphSummary Summarize(const Graph& graph, const std::string& spec);
// Ordered as people read it: `remat graph info` prints it as it is.
nlohmann::ordered_json ToJson(const GraphSummary& summary);

// One point of a run; figures are null when there is no schedule.
nlohmann::json ToJson(const SolveResult& result, int64_t budget_bytes);

// A point's details: the algorithm's own figures (SolveResult::extra) and
// its staged_lower_bound_cost. The one writer of that field, and below its
// one reader.
nlohmann::json DetailsOf(const SolveResult& result);
// The staged_lower_bound_cost of a point (ToJson's), if it has one.
std::optional<int64_t> StagedLowerBoundOf(const nlohmann::json& point);

// The result's timeline figures (TimelineFigures), or makespan,
// critical_path and parallelism null when it has no schedule.
nlohmann::json TimelineOrNull(const SolveResult& result);

// Date, host, commit, build type, compiler, CPU model and count, load
// average, library versions (CBC, nlohmann/json, fmt), threads, command line.
nlohmann::json RunContext(int threads, const std::string& command_line);

// The commit this binary was configured from ("-dirty" when the tree had
// changes): part of what makes two runs' points comparable.
std::string CodeVersion();

}  // namespace remat
