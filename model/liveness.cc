#include "model/liveness.h"

namespace remat {

Schedule InsertFrees(const Graph& graph, std::span<const NodeId> computes,
                     std::span<const uint8_t> live_out) {
  const int32_t n = graph.num_nodes();
  const auto steps = static_cast<int64_t>(computes.size());
  // One backward pass finds, for each compute step, which values die there:
  // walking from the end, a value's first sighting (as a read or as its own
  // compute) is the last use of the instance live at that point.
  std::vector<uint8_t> used_later(n, 0);
  std::vector<int64_t> frees_after(steps + 1, 0);  // CSR offsets
  std::vector<NodeId> dying;
  std::vector<int64_t> dying_step;
  for (NodeId v = 0; v < n; ++v) {
    if (!live_out.empty() && live_out[v]) used_later[v] = 1;
  }
  for (int64_t i = steps - 1; i >= 0; --i) {
    NodeId v = computes[i];
    for (NodeId u : graph.inputs(v)) {
      if (!used_later[u]) {
        used_later[u] = 1;
        dying.push_back(u);
        dying_step.push_back(i);
      }
    }
    // This compute starts a new instance of v: reads after it (already
    // seen) belong to it; reads before it belong to an earlier instance.
    if (!used_later[v]) {
      dying.push_back(v);
      dying_step.push_back(i);
    }
    used_later[v] = 0;
  }
  // Bucket the (step, value) pairs by step, keeping the input order within
  // a step (inputs first, in the order the node lists them, then the node).
  for (int64_t step : dying_step) ++frees_after[step + 1];
  for (int64_t i = 0; i < steps; ++i) frees_after[i + 1] += frees_after[i];
  std::vector<NodeId> free_list(dying.size());
  {
    std::vector<int64_t> fill(frees_after.begin(), frees_after.end() - 1);
    for (size_t k = 0; k < dying.size(); ++k) {
      free_list[fill[dying_step[k]]++] = dying[k];
    }
  }
  Schedule schedule;
  schedule.reserve(steps + dying.size());
  for (int64_t i = 0; i < steps; ++i) {
    schedule.push_back(Event::Compute(computes[i]));
    for (int64_t k = frees_after[i]; k < frees_after[i + 1]; ++k) {
      schedule.push_back(Event::Free(free_list[k]));
    }
  }
  return schedule;
}

}  // namespace remat
