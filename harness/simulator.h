// The one simulator (DESIGN.md section 1). Every peak and cost the harness
// reports is measured here; no algorithm's own estimate is ever reported.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/graph.h"
#include "harness/schedule.h"

namespace remat {

struct SimulationResult {
  bool valid = false;
  // For an invalid schedule: the index of the first illegal event (or the
  // schedule's length when the problem is a target never computed) and why.
  int64_t error_index = -1;
  std::string error;

  int64_t peak_bytes = 0;  // activation peak: max memory over compute events
  int64_t cost = 0;        // sum of cost over compute events
  int64_t length = 0;      // number of compute events
  int64_t base_cost = 0;   // see BaseCost()
  double overhead = 0;     // cost / base_cost (1 when base_cost is 0)
  // When requested, the memory at each event: for a compute the momentary
  // memory (live values, the new value and its workspace), for a free the
  // memory after it.
  std::vector<int64_t> memory_at_event;
};

struct SimulationOptions {
  bool record_timeline = false;
};

// Simulates `schedule` on `graph`. Simulation stops at the first illegal
// event; figures then describe the legal prefix.
SimulationResult Simulate(const Graph& graph, std::span<const Event> schedule,
                          SimulationOptions options = {});

// Targets and all their ancestors: the nodes every valid schedule computes.
std::vector<uint8_t> NeededNodes(const Graph& graph);

// Sum of cost over the needed nodes, each computed once.
int64_t BaseCost(const Graph& graph);

// max over needed v of mem(v) + workspace(v) + sum of mem(inputs of v): no
// schedule fits a smaller budget.
int64_t MemoryLowerBound(const Graph& graph);

// The needed nodes in the graph's topological order: the compute sequence
// of the plain (NoRemat) schedule.
std::vector<NodeId> NoRematOrder(const Graph& graph);

// Activation peak of the plain schedule: every needed node once in the
// graph's topological order, freed right after its last use.
int64_t NoRematPeak(const Graph& graph);

}  // namespace remat
