#include "harness/cli/timing_options.h"

#include "harness/cli/usage.h"
#include "model/params.h"

namespace remat::cli {

TimingModel TimingOptions::Model() const {
  TimingModel model;
  model.link = ParseLink(link);
  if (compute_rate > 0) model.compute_rate = compute_rate;
  if (!host_budget.empty()) {
    model.host_budget_bytes = ParseBytes(host_budget, "--host-budget");
  }
  return model;
}

std::shared_ptr<TimingOptions> AddTimingOptions(CLI::App* command) {
  auto options = std::make_shared<TimingOptions>();
  command->add_option(
      "--link", options->link,
      "host<->device link for offload (o) and prefetch (p) events: pcie3 "
      "(12 GB/s), pcie4 (25 GB/s), nvlink-c2c (450 GB/s) or "
      "BYTES_PER_S[:LATENCY_S]")
      ->capture_default_str();
  command
      ->add_option("--compute-rate", options->compute_rate,
                   "cost units per second, to time transfers against "
                   "compute (default: 50e12 for FLOP costs, else 1e6, one "
                   "unit per microsecond)")
      ->check(PositiveNumber("cost units per second"));
  command->add_option("--host-budget", options->host_budget,
                      "bound on host memory held by offloaded values "
                      "(default: unbounded)");
  return options;
}

}  // namespace remat::cli
