#include "harness/results.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "harness/simulator.h"

#ifndef REMAT_GIT_COMMIT
#define REMAT_GIT_COMMIT "unknown"
#endif
#ifndef REMAT_BUILD_TYPE
#define REMAT_BUILD_TYPE "unknown"
#endif

namespace remat {

namespace {

#if defined(__clang__)
constexpr const char* kCompiler = "clang " __clang_version__;
#else
constexpr const char* kCompiler = "gcc " __VERSION__;
#endif

}  // namespace

GraphSummary Summarize(const Graph& graph, const std::string& spec) {
  GraphSummary s;
  s.name = graph.name();
  s.spec = spec;
  s.nodes = graph.num_nodes();
  s.edges = graph.num_edges();
  s.base_cost = BaseCost(graph);
  s.static_bytes = graph.static_bytes();
  s.lower_bound_bytes = MemoryLowerBound(graph);
  s.noremat_peak_bytes = NoRematPeak(graph);
  s.content_hash = ContentHash(graph);
  return s;
}

nlohmann::json ToJson(const GraphSummary& s) {
  return {{"name", s.name},
          {"spec", s.spec},
          {"nodes", s.nodes},
          {"edges", s.edges},
          {"base_cost", s.base_cost},
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
  point["solve_seconds"] = r.solve_seconds;
  point["message"] = r.message;
  if (r.lower_bound_cost) point["lower_bound_cost"] = *r.lower_bound_cost;
  if (r.optimal) point["optimal"] = true;
  if (!r.extra.empty()) point["details"] = r.extra;
  return point;
}

nlohmann::json RunContext(int threads, const std::string& command_line) {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  return {{"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                               fmt::gmtime(std::time(nullptr)))},
          {"host", host},
          {"git_commit", REMAT_GIT_COMMIT},
          {"build_type", REMAT_BUILD_TYPE},
          {"compiler", kCompiler},
          {"threads", threads},
          {"command_line", command_line}};
}

}  // namespace remat
