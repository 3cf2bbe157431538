// The one simulator (docs/model.md). Every peak and cost the harness
// reports is measured here; no algorithm's own estimate is ever reported.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "model/graph.h"
#include "model/schedule.h"
#include "model/timing.h"

namespace remat {

struct SimulationResult {
  bool valid = false;
  // For an invalid schedule: the index of the first illegal event (or the
  // schedule's length when the problem is a target never computed) and why.
  int64_t error_index = -1;
  std::string error;

  // Activation peak: max memory over compute events; with transfers, the
  // maximum over time of device memory (an offloaded value holds its
  // memory until its copy ends, a prefetched one from its copy's start).
  int64_t peak_bytes = 0;
  int64_t cost = 0;       // sum of cost over compute events
  int64_t length = 0;     // number of compute events
  int64_t base_cost = 0;  // see BaseCost()
  double overhead = 0;    // cost / base_cost (1 when base_cost is 0)

  // The timeline (docs/model.md, "Time and offloading"), in the graph's cost
  // unit. makespan: when the last event ends; equal to cost when the
  // schedule has no transfers.
  double makespan = 0;
  // With SimulationOptions::critical_path, the end time on unlimited
  // parallel lanes: each event waits for the values it reads and for the
  // memory the schedule freed before it (every earlier free or offload,
  // which completes when that value's readers have ended); and
  // cost / critical_path (1 when that is 0). Both 0 when not asked for.
  double critical_path = 0;
  double parallelism = 0;
  int64_t transfer_bytes = 0;   // bytes offloaded plus bytes prefetched
  int64_t host_peak_bytes = 0;  // max over time of host memory held
  double stall = 0;  // compute stream idle, waiting for prefetches, waits

  // When requested, the memory at each event in schedule order: for a
  // compute the momentary memory (live values, the new value and its
  // workspace), for any other event the memory after it.
  std::vector<int64_t> memory_at_event;
};

struct SimulationOptions {
  bool record_timeline = false;
  // Link, compute rate and host budget for transfers; null: TimingModel's
  // defaults. Schedules without transfers do not depend on it.
  const TimingModel* timing = nullptr;
  // Also the critical path: every reported schedule has it; the many
  // simulations inside algorithms do without (it costs a second pass over
  // each compute's inputs).
  bool critical_path = false;
};

// Simulates `schedule` on `graph`. Simulation stops at the first illegal
// event; figures then describe the legal prefix (a host budget exceeded is
// found after the whole schedule, and reported at the offload that
// exceeded it).
SimulationResult Simulate(const Graph& graph, std::span<const Event> schedule,
                          SimulationOptions options = {});

// The timeline's figures as every output names them: makespan,
// critical_path, parallelism, and for a schedule with transfers
// transfer_bytes, host_peak_bytes and stall.
nlohmann::json TimelineFigures(const SimulationResult& sim);

// Targets and all their ancestors: the nodes every valid schedule computes.
std::vector<uint8_t> NeededNodes(const Graph& graph);

// Sum of cost over the needed nodes, each computed once.
int64_t BaseCost(const Graph& graph);

// max over needed v of mem(v) + workspace(v) + sum of mem(inputs of v): no
// schedule fits a smaller budget.
int64_t MemoryLowerBound(const Graph& graph);

// The length of the longest path through the needed nodes, each weighted
// by its cost: the least time any schedule takes on unlimited lanes.
int64_t LongestPathCost(const Graph& graph);

// The needed nodes in the graph's topological order: the compute sequence
// of the plain (NoRemat) schedule.
std::vector<NodeId> NoRematOrder(const Graph& graph);

// Activation peak of the plain schedule: every needed node once in the
// graph's topological order, freed right after its last use.
int64_t NoRematPeak(const Graph& graph);

// Budgets from the memory lower bound to the NoRemat peak, both included,
// evenly spaced and rounded up to whole bytes, without repeats.
std::vector<int64_t> BudgetGrid(int64_t lower_bound, int64_t noremat_peak,
                                int count);

}  // namespace remat
