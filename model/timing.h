// The time model of the simulator's timeline (docs/model.md, "Time and
// offloading"): how long a compute and a host<->device copy take.
//
// Times are in the graph's cost unit, so that a schedule without transfers
// ends exactly at its cost. A copy of `b` bytes takes b / bandwidth +
// latency seconds, converted to cost units by the compute rate (cost units
// per second): FLOP/s for graphs whose costs are FLOPs, 1e6 for
// microseconds.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/graph.h"

namespace remat {

// A host<->device link: one copy stream per direction, each at this rate.
struct Link {
  std::string name;  // "pcie4", or the bytes/s as given
  double bytes_per_second = 0;
  double latency_seconds = 0;
};

// "pcie3" (12 GB/s), "pcie4" (25 GB/s, the default), "nvlink-c2c"
// (450 GB/s per direction), or "BYTES_PER_S[:LATENCY_S]" ("20e9:5e-6").
// Throws InputError naming the option `what` (the command line's --link,
// the Python module's link) and the text.
Link ParseLink(const std::string& text, const std::string& what = "--link");
Link DefaultLink();

struct TimingModel {
  Link link = DefaultLink();
  // Cost units per second; none: by the graph's cost unit (see
  // ComputeRate).
  std::optional<double> compute_rate;
  // Bound on host memory held by offloaded values.
  int64_t host_budget_bytes = std::numeric_limits<int64_t>::max();

  // Cost units per second on `graph`.
  double ComputeRate(const Graph& graph) const;
  // How long copying `bytes` over the link takes, in cost units of `graph`.
  double TransferTime(const Graph& graph, int64_t bytes) const;
  // As recorded in a results file's context.
  nlohmann::json ToJson() const;
};

// The compute rate assumed for a cost unit when none is given: 50e12 for
// "flop" (a sustained FP32/TF32 rate of a current datacenter GPU), 1e6 for
// "microseconds" and "abstract" (one unit is read as one microsecond).
double DefaultComputeRate(const std::string& cost_unit);

}  // namespace remat
