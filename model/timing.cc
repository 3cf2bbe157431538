#include "model/timing.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "model/errors.h"

namespace remat {

namespace {

// A finite positive number spelled entirely by `text` (strtod's syntax).
std::optional<double> ParsePositive(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value) ||
      value <= 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

Link DefaultLink() { return ParseLink("pcie4"); }

Link ParseLink(const std::string& text, const std::string& what) {
  // Effective rates of a x16 slot per direction and a DMA set-up latency;
  // NVLink-C2C is Grace Hopper's 900 GB/s, 450 each way.
  if (text == "pcie3") return {text, 12e9, 10e-6};
  if (text == "pcie4") return {text, 25e9, 10e-6};
  if (text == "nvlink-c2c") return {text, 450e9, 2e-6};
  const size_t colon = text.find(':');
  const std::optional<double> rate = ParsePositive(text.substr(0, colon));
  std::optional<double> latency = 0.0;
  if (colon != std::string::npos) {
    const std::string after = text.substr(colon + 1);
    latency = after == "0" ? 0.0 : ParsePositive(after);
  }
  if (!rate || !latency) {
    throw InputError(
        fmt::format("{} '{}': expected pcie3, pcie4, nvlink-c2c or "
                    "BYTES_PER_SECOND[:LATENCY_SECONDS] (positive, finite)",
                    what, text));
  }
  return {text, *rate, *latency};
}

double DefaultComputeRate(const std::string& cost_unit) {
  return cost_unit == "flop" ? 50e12 : 1e6;
}

double TimingModel::ComputeRate(const Graph& graph) const {
  return compute_rate ? *compute_rate : DefaultComputeRate(graph.cost_unit());
}

double TimingModel::TransferTime(const Graph& graph, int64_t bytes) const {
  const double seconds =
      static_cast<double>(bytes) / link.bytes_per_second + link.latency_seconds;
  return seconds * ComputeRate(graph);
}

nlohmann::json TimingModel::ToJson() const {
  nlohmann::json j = {{"link", link.name},
                      {"link_bytes_per_second", link.bytes_per_second},
                      {"link_latency_seconds", link.latency_seconds},
                      {"compute_rate", compute_rate
                                           ? nlohmann::json(*compute_rate)
                                           : nlohmann::json("by cost unit")}};
  if (host_budget_bytes != std::numeric_limits<int64_t>::max()) {
    j["host_budget_bytes"] = host_budget_bytes;
  }
  return j;
}

}  // namespace remat
