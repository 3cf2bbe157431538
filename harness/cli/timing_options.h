// --link, --compute-rate and --host-budget: the timing model of solve,
// validate and sweep (model/timing.h).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "model/timing.h"

namespace remat::cli {

struct TimingOptions {
  std::string link = "pcie4";
  double compute_rate = 0;  // 0: by the graph's cost unit
  std::string host_budget;  // empty: unbounded

  // Throws InputError naming the option on a bad link or host budget.
  TimingModel Model() const;
};

std::shared_ptr<TimingOptions> AddTimingOptions(CLI::App* command);

}  // namespace remat::cli
