// The main job: every algorithm on every graph at every budget, in parallel,
// as one results document (results/SCHEMA.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/graph.h"

namespace remat {

struct SweepConfig {
  std::vector<std::string> graph_specs;      // files or generator specs
  std::vector<std::string> algorithm_specs;  // "name" or "name:k=v,..."
  int budgets_per_graph = 16;
  int threads = 0;  // 0: OpenMP's default
  double timeout_seconds = 60;
  bool progress = false;  // a progress line on stderr
  std::string command_line;
  // When set, every schedule is written there (named by graph, algorithm,
  // parameters and budget) and each point names its file in
  // `schedule_file`, relative to `results_dir` (the results file's folder).
  std::string schedules_dir;
  std::string results_dir = ".";
};

// Budgets from the memory lower bound to the NoRemat peak, both included,
// evenly spaced and rounded up to whole bytes, without repeats.
std::vector<int64_t> BudgetGrid(int64_t lower_bound, int64_t noremat_peak,
                                int count);

// Reads a corpus manifest (graphs/corpus/*.json) into graph specs; paths in
// it are relative to the manifest. Entries marked optional whose file is
// missing are skipped with a note on stderr.
std::vector<std::string> ReadCorpus(const std::string& path);

// Validates every spec first (InputError before any work), then runs.
nlohmann::json RunSweep(const SweepConfig& config);

}  // namespace remat
