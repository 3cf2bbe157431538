// Runs one algorithm on one graph and judges its answer with the simulator.
// The CLI's `solve` and the sweep both go through here, so a status means
// the same thing everywhere.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/algorithm.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {

// One run of an algorithm, before it is judged against a budget.
struct Attempt {
  AlgorithmOutput output;                      // its schedule, if any, is kept
  std::optional<SimulationResult> simulation;  // of output.schedule
  double solve_seconds = 0;
};

// What the harness reports for one (graph, algorithm, budget).
struct SolveResult {
  Status status = Status::kError;
  std::string message;
  bool has_schedule = false;  // figures below are the simulator's
  bool valid = false;
  int64_t peak_bytes = 0;
  int64_t cost = 0;
  double overhead = 0;
  int64_t length = 0;
  nlohmann::json timeline;  // TimelineFigures of the schedule
  double solve_seconds = 0;
  std::optional<int64_t> lower_bound_cost;
  std::optional<int64_t> staged_lower_bound_cost;  // the algorithm's, as said
  bool optimal = false;
  nlohmann::json extra = nlohmann::json::object();
};

// Runs `algorithm` with the given budget and a deadline `timeout_seconds`
// from now (<= 0: none). Exceptions thrown by the algorithm become status
// error with their message. An algorithm marked `isolate` runs in a child
// process once InitIsolation enabled it (a crash there is status error).
// With a `preparation` slot, the algorithm's per-graph work is taken from
// it (made there by the first solve that needs it; its time counts in
// that solve's solve_seconds); without one, the solve prepares for itself.
// `standby` receives the algorithm's best answer so far where it offers
// one (SolveRequest::standby). `timing` (null: the defaults) is handed to
// the algorithm and to the simulation.
Attempt RunAlgorithm(const Graph& graph, const AlgorithmInfo& algorithm,
                     const Params& params, int64_t budget_bytes,
                     double timeout_seconds,
                     PreparationSlot* preparation = nullptr,
                     StandbyAnswer* standby = nullptr,
                     const TimingModel* timing = nullptr);

// The sub-solver RunAlgorithm hands every algorithm (SolveRequest's
// sub_solver): it runs the other algorithm by RunAlgorithm, with no
// preparation slot and nobody standing by.
const SubSolver& RunnerSubSolver();

// Decides the status from the simulation: an invalid schedule is an error;
// a valid one is feasible iff its peak fits `budget_bytes` (a timeout stays
// a timeout, with the figures of its best schedule).
SolveResult Judge(const Attempt& attempt, int64_t budget_bytes);

}  // namespace remat
