// Removes recomputations one at a time, each judged by the simulator
// (drop_recomputes.h).
#include "algorithms/common/drop_recomputes.h"

#include <algorithm>

#include "harness/liveness.h"
#include "harness/simulator.h"

namespace remat {
namespace {

bool FitsBudget(const Graph& graph, const std::vector<NodeId>& computes,
                int64_t budget_bytes) {
  const SimulationResult sim = Simulate(graph, InsertFrees(graph, computes));
  return sim.valid && sim.peak_bytes <= budget_bytes;
}

}  // namespace

std::vector<NodeId> WithoutUnreadComputes(
    const Graph& graph, const std::vector<NodeId>& computes) {
  // Walking backwards, `wanted[v]`: some read seen so far (later in the
  // sequence) belongs to v's instance live at this point. A compute of v
  // that is not wanted is removed and reads nothing; one that is wanted
  // satisfies those reads, and earlier reads belong to an earlier instance.
  std::vector<uint8_t> wanted(graph.num_nodes(), 0);
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    wanted[v] = graph.is_target(v) ? 1 : 0;
  }
  std::vector<uint8_t> keep(computes.size(), 0);
  for (size_t i = computes.size(); i-- > 0;) {
    const NodeId x = computes[i];
    if (!wanted[x]) continue;
    keep[i] = 1;
    wanted[x] = 0;
    for (NodeId u : graph.inputs(x)) wanted[u] = 1;
  }
  std::vector<NodeId> kept;
  kept.reserve(computes.size());
  for (size_t i = 0; i < computes.size(); ++i) {
    if (keep[i]) kept.push_back(computes[i]);
  }
  return kept;
}

DroppedRecomputes DropRecomputes(const Graph& graph,
                                 std::vector<NodeId> computes,
                                 int64_t budget_bytes,
                                 const Deadline& deadline) {
  DroppedRecomputes out;
  const size_t given = computes.size();
  computes = WithoutUnreadComputes(graph, computes);
  std::vector<size_t> first(graph.num_nodes(), computes.size());
  for (bool removed_any = true; removed_any;) {
    removed_any = false;
    std::fill(first.begin(), first.end(), computes.size());
    for (size_t i = computes.size(); i-- > 0;) first[computes[i]] = i;
    for (size_t i = computes.size(); i-- > 0;) {
      if (deadline.Expired()) {
        out.removed = static_cast<int64_t>(given - computes.size());
        out.computes = std::move(computes);
        return out;
      }
      // Only a recomputation can go: an earlier instance serves its reads.
      if (i >= computes.size() || first[computes[i]] >= i) continue;
      std::vector<NodeId> trial = computes;
      trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(i));
      trial = WithoutUnreadComputes(graph, trial);
      if (!FitsBudget(graph, trial, budget_bytes)) continue;
      computes = std::move(trial);
      removed_any = true;
      // Removals shift positions; the first computes only move earlier.
      std::fill(first.begin(), first.end(), computes.size());
      for (size_t k = computes.size(); k-- > 0;) first[computes[k]] = k;
    }
  }
  out.removed = static_cast<int64_t>(given - computes.size());
  out.computes = std::move(computes);
  out.finished = true;
  return out;
}

}  // namespace remat
