#include "harness/results.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "git_commit.h"  // REMAT_GIT_COMMIT, generated (harness/CMakeLists.txt)
#include "model/simulator.h"

#ifndef REMAT_BUILD_TYPE
#define REMAT_BUILD_TYPE "unknown"
#endif
#ifndef REMAT_CBC_VERSION
#define REMAT_CBC_VERSION "unknown"
#endif

namespace remat {

namespace {

#if defined(__clang__)
constexpr const char* kCompiler = "clang " __clang_version__;
#else
constexpr const char* kCompiler = "gcc " __VERSION__;
#endif

// The processor's model name from /proc/cpuinfo ("unknown" elsewhere).
std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos)
      return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

}  // namespace

GraphSummary Summarize(const Graph& graph, const std::string& spec) {
  GraphSummary s;
  s.name = graph.name();
  s.spec = spec;
  s.nodes = graph.num_nodes();
  s.edges = graph.num_edges();
  s.base_cost = BaseCost(graph);
  s.longest_path_cost = LongestPathCost(graph);
  s.static_bytes = graph.static_bytes();
  s.lower_bound_bytes = MemoryLowerBound(graph);
  s.noremat_peak_bytes = NoRematPeak(graph);
  s.content_hash = ContentHash(graph);
  return s;
}

nlohmann::ordered_json ToJson(const GraphSummary& s) {
  return {{"name", s.name},
          {"spec", s.spec},
          {"nodes", s.nodes},
          {"edges", s.edges},
          {"base_cost", s.base_cost},
          {"longest_path_cost", s.longest_path_cost},
          {"static_bytes", s.static_bytes},
          {"lower_bound_bytes", s.lower_bound_bytes},
          {"noremat_peak_bytes", s.noremat_peak_bytes},
          {"content_hash", s.content_hash}};
}

nlohmann::json ToJson(const SolveResult& r, int64_t budget_bytes) {
  nlohmann::json point = {{"budget_bytes", budget_bytes},
                          {"status", StatusName(r.status)}};
  if (r.has_schedule) {
    point["valid"] = r.valid;
    point["peak_bytes"] = r.peak_bytes;
    point["cost"] = r.cost;
    point["overhead"] = r.overhead;
    point["length"] = r.length;
  } else {
    point["valid"] = nullptr;
    point["peak_bytes"] = nullptr;
    point["cost"] = nullptr;
    point["overhead"] = nullptr;
    point["length"] = nullptr;
  }
  point.update(TimelineOrNull(r));
  point["solve_seconds"] = r.solve_seconds;
  point["message"] = r.message;
  if (r.lower_bound_cost) point["lower_bound_cost"] = *r.lower_bound_cost;
  if (r.optimal) point["optimal"] = true;
  if (nlohmann::json details = DetailsOf(r); !details.empty()) {
    point["details"] = std::move(details);
  }
  return point;
}

nlohmann::json DetailsOf(const SolveResult& result) {
  nlohmann::json details = result.extra;
  if (result.staged_lower_bound_cost) {
    details["staged_lower_bound_cost"] = *result.staged_lower_bound_cost;
  }
  return details;
}

std::optional<int64_t> StagedLowerBoundOf(const nlohmann::json& point) {
  if (!point.contains("details")) return std::nullopt;
  const nlohmann::json& details = point["details"];
  if (!details.is_object() || !details.contains("staged_lower_bound_cost") ||
      !details["staged_lower_bound_cost"].is_number()) {
    return std::nullopt;
  }
  return details["staged_lower_bound_cost"].get<int64_t>();
}

nlohmann::json TimelineOrNull(const SolveResult& r) {
  if (r.has_schedule) return r.timeline;
  return {{"makespan", nullptr},
          {"critical_path", nullptr},
          {"parallelism", nullptr}};
}

std::string CodeVersion() { return REMAT_GIT_COMMIT; }

nlohmann::json RunContext(int threads, const std::string& command_line) {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  // Timings depend on the machine and on what else ran on it.
  double load[3] = {0, 0, 0};
  const bool has_load = getloadavg(load, 3) == 3;
  return {
      {"date",
       fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
      {"host", host},
      {"git_commit", REMAT_GIT_COMMIT},
      {"build_type", REMAT_BUILD_TYPE},
      {"compiler", kCompiler},
      {"cpu_model", CpuModel()},
      {"cpu_count", std::thread::hardware_concurrency()},
      {"load_average", has_load
                           ? nlohmann::json{std::round(load[0] * 100) / 100,
                                            std::round(load[1] * 100) / 100,
                                            std::round(load[2] * 100) / 100}
                           : nlohmann::json(nullptr)},
      {"libraries",
       {{"cbc", REMAT_CBC_VERSION},
        {"nlohmann_json",
         fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR,
                     NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH)},
        {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000,
                            FMT_VERSION / 100 % 100, FMT_VERSION % 100)}}},
      {"threads", threads},
      {"command_line", command_line}};
}

}  // namespace remat
