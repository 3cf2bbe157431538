// The documents of `remat solve --json` and `remat validate --json`
// (docs/cli.md), written here once for both front doors: the command line
// (harness/cli/cmd_solve.cc) and the Python module's rematbench.solve and
// rematbench.validate (python/), so that the two give the same document,
// field for field, in the same order, with the same nulls
// (python/tests/documents_test.py compares them).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/runner.h"
#include "model/graph.h"
#include "model/params.h"
#include "model/registry.h"
#include "model/schedule.h"
#include "model/timing.h"

namespace remat {

// The solve record: the algorithm and its given parameters, the graph, the
// budget (null when unbounded), the judged result's figures (null without
// a schedule), its timeline, solve_seconds, message, and lower_bound_cost,
// optimal and details where the algorithm gave them.
nlohmann::ordered_json SolveRecord(const Graph& graph,
                                   const AlgorithmInfo& algorithm,
                                   const Params& params, int64_t budget_bytes,
                                   const SolveResult& result);

// A schedule to validate. Read from a file, it names the file and the line
// of each event, so that an illegal event is reported with its line; made
// in memory (a rematbench.Schedule), it has neither.
struct ScheduleToValidate {
  Schedule events;
  std::optional<std::string> path;
  std::vector<int64_t> event_lines;
};

// Reads a schedule file for `graph`, keeping each event's line.
ScheduleToValidate ReadScheduleToValidate(const std::string& path,
                                          const Graph& graph);

// Simulates `schedule` on `graph` under `timing` and judges it against
// `budget_bytes` (kUnboundedBudget: none). The validate record: the graph,
// the schedule's path (null without a file), valid, the first illegal
// event's 1-based line (null without a file), 0-based index and reason
// (error, null when valid), the budget (null when unbounded), fits_budget,
// the simulator's figures and the timeline's.
nlohmann::ordered_json ValidateRecord(const Graph& graph,
                                      const ScheduleToValidate& schedule,
                                      int64_t budget_bytes,
                                      const TimingModel& timing);

}  // namespace remat
