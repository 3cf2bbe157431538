#include "harness/reach_bound.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "harness/memory_model.h"
#include "harness/simulator.h"

namespace remat {

namespace {

// Decides one level: whether some needed node's inputs cannot be brought
// live together below `level` bytes.
class LevelProof {
 public:
  LevelProof(const Graph& graph, int64_t level, int64_t max_states)
      : graph_(graph),
        level_(level),
        smallest_kept_(level / 64),
        max_states_(max_states),
        in_set_(graph.num_nodes(), 0) {}

  bool Holds(std::vector<NodeId> inputs) {
    return Reaches(Kept(std::move(inputs)));
  }
  bool gave_up() const { return gave_up_; }
  int64_t states() const { return states_; }

 private:
  // The set's members large enough to keep, latest in topological order
  // first (LatestFirst), so that a level that does not hold is refuted
  // quickly.
  std::vector<NodeId> Kept(std::vector<NodeId> set) const {
    std::erase_if(set, [&](NodeId v) {
      return memory_model::ResidentBytes(graph_, v) < smallest_kept_;
    });
    return LatestFirst(graph_, std::move(set));
  }

  // Whether reach(set) >= level is proven.
  bool Reaches(const std::vector<NodeId>& set) {
    if (auto it = memo_.find(set); it != memo_.end()) return it->second;
    if (gave_up_ || ++states_ > max_states_) {
      gave_up_ = true;
      return false;
    }
    int64_t live = 0;
    for (NodeId v : set) live += memory_model::ResidentBytes(graph_, v);
    if (live >= level_) return memo_[set] = true;
    if (set.empty()) return memo_[set] = false;
    bool holds = true;
    for (NodeId x : set) {
      if (MemoryComputingLast(graph_, set, live, x, in_set_) >= level_) {
        continue;
      }
      if (!Reaches(Kept(SetBefore(graph_, set, x)))) {
        holds = false;
        break;
      }
    }
    // A search cut short proves nothing about this set.
    if (gave_up_) return false;
    return memo_[set] = holds;
  }

  const Graph& graph_;
  const int64_t level_;
  const int64_t smallest_kept_;
  const int64_t max_states_;
  std::vector<uint8_t> in_set_;
  std::unordered_map<std::vector<NodeId>, bool, NodeSetHash> memo_;
  int64_t states_ = 0;
  bool gave_up_ = false;
};

}  // namespace

size_t NodeSetHash::operator()(const std::vector<NodeId>& set) const {
  uint64_t h = 1469598103934665603ULL;
  for (NodeId v : set) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ULL;
  return static_cast<size_t>(h);
}

std::vector<NodeId> LatestFirst(const Graph& graph, std::vector<NodeId> set) {
  std::sort(set.begin(), set.end(), [&](NodeId a, NodeId b) {
    return graph.topo_rank(a) > graph.topo_rank(b);
  });
  set.erase(std::unique(set.begin(), set.end()), set.end());
  return set;
}

int64_t MemoryComputingLast(const Graph& graph,
                            const std::vector<NodeId>& set, int64_t set_bytes,
                            NodeId x, std::vector<uint8_t>& scratch) {
  for (NodeId v : set) scratch[v] = 1;
  int64_t live = set_bytes - memory_model::ResidentBytes(graph, x);
  for (NodeId u : graph.inputs(x)) {
    if (!scratch[u]) live += memory_model::ResidentBytes(graph, u);
  }
  for (NodeId v : set) scratch[v] = 0;
  return memory_model::MemoryAtCompute(graph, live, x);
}

std::vector<NodeId> SetBefore(const Graph& graph,
                              const std::vector<NodeId>& set, NodeId x) {
  std::vector<NodeId> before;
  before.reserve(set.size() + graph.inputs(x).size());
  for (NodeId v : set) {
    if (v != x) before.push_back(v);
  }
  for (NodeId u : graph.inputs(x)) before.push_back(u);
  return before;
}

ReachBound ReachLowerBound(const Graph& graph, const ReachBoundLimits& limits) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(limits.seconds));
  const std::vector<uint8_t> needed = NeededNodes(graph);
  ReachBound bound;
  bound.bytes = MemoryLowerBound(graph);
  // The NoRemat schedule computes and frees only and peaks here: nothing
  // above it can be proven.
  bound.unproven_above = NoRematPeak(graph) + 1;
  while (bound.unproven_above - bound.bytes >
         std::max<int64_t>(1, bound.bytes / 1000)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      bound.limited = true;
      break;
    }
    const int64_t level =
        bound.bytes + (bound.unproven_above - bound.bytes) / 2;
    LevelProof proof(graph, level, limits.states_per_level);
    NodeId witness = kNoNode;
    for (NodeId v : graph.topological_order()) {
      if (!needed[v] || proof.gave_up()) continue;
      const auto in = graph.inputs(v);
      if (proof.Holds({in.begin(), in.end()})) {
        witness = v;
        break;
      }
    }
    bound.states += proof.states();
    bound.limited = bound.limited || proof.gave_up();
    if (witness != kNoNode) {
      bound.bytes = level;
      bound.witness = witness;
    } else {
      bound.unproven_above = level;
    }
  }
  return bound;
}

}  // namespace remat
