// Removes recomputations one at a time, each judged by the simulator
// (drop_recomputes.h).
#include "algorithms/common/drop_recomputes.h"

#include <algorithm>
#include <numeric>

#include "model/liveness.h"
#include "model/simulator.h"

namespace remat {
namespace {

// Which computes of `computes` someone reads (WithoutUnreadComputes):
// walking backwards, `wanted[v]` says that some read seen so far (later in
// the sequence) belongs to v's instance live at this point. A compute of v
// that is not wanted reads nothing; one that is wanted satisfies those
// reads, and earlier reads belong to an earlier instance. `skip`, if not
// past the end, is a position left out.
std::vector<uint8_t> ReadComputes(const Graph& graph,
                                  const std::vector<NodeId>& computes,
                                  size_t skip, std::vector<uint8_t>& wanted) {
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    wanted[v] = graph.is_target(v) ? 1 : 0;
  }
  std::vector<uint8_t> keep(computes.size(), 0);
  for (size_t i = computes.size(); i-- > 0;) {
    const NodeId x = computes[i];
    if (i == skip || !wanted[x]) continue;
    keep[i] = 1;
    wanted[x] = 0;
    for (NodeId u : graph.inputs(x)) wanted[u] = 1;
  }
  return keep;
}

template <typename T>
std::vector<T> Kept(const std::vector<T>& items,
                    const std::vector<uint8_t>& keep) {
  std::vector<T> kept;
  kept.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (keep[i]) kept.push_back(items[i]);
  }
  return kept;
}

bool FitsBudget(const Graph& graph, const std::vector<NodeId>& computes,
                int64_t budget_bytes) {
  const SimulationResult sim = Simulate(graph, InsertFrees(graph, computes));
  return sim.valid && sim.peak_bytes <= budget_bytes;
}

}  // namespace

std::vector<NodeId> WithoutUnreadComputes(
    const Graph& graph, const std::vector<NodeId>& computes) {
  std::vector<uint8_t> wanted(graph.num_nodes());
  return Kept(computes,
              ReadComputes(graph, computes, computes.size(), wanted));
}

DroppedRecomputes DropRecomputes(const Graph& graph,
                                 std::vector<NodeId> computes,
                                 int64_t budget_bytes,
                                 const Deadline& deadline) {
  DroppedRecomputes out;
  const size_t given = computes.size();
  std::vector<uint8_t> wanted(graph.num_nodes());
  computes = WithoutUnreadComputes(graph, computes);
  // Each compute keeps its id while others go, so that a round can try
  // them in an order fixed at its start.
  std::vector<int64_t> ids(computes.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto stop = [&](bool finished) {
    out.removed = static_cast<int64_t>(given - computes.size());
    out.computes = std::move(computes);
    out.finished = finished;
    return out;
  };
  for (bool removed_any = true; removed_any;) {
    removed_any = false;
    // The recomputations (an earlier instance serves their reads), each
    // with the cost its removal saves, itself and what only it read.
    std::vector<uint8_t> seen(graph.num_nodes(), 0);
    std::vector<std::pair<int64_t, int64_t>> saving_and_id;
    for (size_t i = 0; i < computes.size(); ++i) {
      if (!seen[computes[i]]) {
        seen[computes[i]] = 1;
        continue;
      }
      if (deadline.Expired()) return stop(false);
      const std::vector<uint8_t> keep =
          ReadComputes(graph, computes, i, wanted);
      int64_t saving = 0;
      for (size_t k = 0; k < computes.size(); ++k) {
        if (!keep[k]) saving += graph.cost(computes[k]);
      }
      saving_and_id.emplace_back(saving, ids[i]);
    }
    // The largest saving first; ties, the later compute first.
    std::sort(saving_and_id.begin(), saving_and_id.end(),
              [](const auto& a, const auto& b) {
                return a.first != b.first ? a.first > b.first
                                          : a.second > b.second;
              });
    for (const auto& [saving, id] : saving_and_id) {
      if (deadline.Expired()) return stop(false);
      const auto at = std::lower_bound(ids.begin(), ids.end(), id);
      if (at == ids.end() || *at != id) continue;  // gone with another
      const size_t i = static_cast<size_t>(at - ids.begin());
      if (std::find(computes.begin(), computes.begin() + i, computes[i]) ==
          computes.begin() + i) {
        continue;  // the earlier instance went: now the first
      }
      const std::vector<uint8_t> keep =
          ReadComputes(graph, computes, i, wanted);
      std::vector<NodeId> trial = Kept(computes, keep);
      if (!FitsBudget(graph, trial, budget_bytes)) continue;
      computes = std::move(trial);
      ids = Kept(ids, keep);
      removed_any = true;
    }
  }
  return stop(true);
}

}  // namespace remat
