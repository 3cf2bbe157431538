#include "model/reach_bound.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "model/memory_model.h"
#include "model/simulator.h"

namespace remat {

namespace {

// The steps of the recursion.

// FNV-1a over a set of nodes kept as a vector in one order: the key of the
// sets the search remembers.
struct NodeSetHash {
  size_t operator()(const std::vector<NodeId>& set) const {
    uint64_t h = 1469598103934665603ULL;
    for (NodeId v : set) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

// `set` without repeats, latest in topological order first: the order in
// which the search tries the members as the last computed, which is the
// order a schedule bringing the set live computes them in reverse.
std::vector<NodeId> LatestFirst(const Graph& graph, std::vector<NodeId> set) {
  std::sort(set.begin(), set.end(), [&](NodeId a, NodeId b) {
    return graph.topo_rank(a) > graph.topo_rank(b);
  });
  set.erase(std::unique(set.begin(), set.end()), set.end());
  return set;
}

// The memory while x, a member of `set`, is computed last: `set` live
// (`set_bytes` resident in all) but x itself, x's inputs, and x's step
// (MemoryAtCompute). `scratch` has one zero byte per node, and is left so.
int64_t MemoryComputingLast(const Graph& graph, const std::vector<NodeId>& set,
                            int64_t set_bytes, NodeId x,
                            std::vector<uint8_t>& scratch) {
  for (NodeId v : set) scratch[v] = 1;
  int64_t live = set_bytes - memory_model::ResidentBytes(graph, x);
  for (NodeId u : graph.inputs(x)) {
    if (!scratch[u]) live += memory_model::ResidentBytes(graph, u);
  }
  for (NodeId v : set) scratch[v] = 0;
  return memory_model::MemoryAtCompute(graph, live, x);
}

// The set just before x, a member of `set`, is computed: the rest of `set`
// and x's inputs (unsorted, possibly with repeats).
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

  // Whether reach(set) >= level is proven: the recursion of the header,
  // with its frames on the heap, since a chain of sets is as long as a
  // schedule.
  bool Reaches(std::vector<NodeId> set) {
    std::vector<Frame> stack;
    bool result = false;
    int64_t live = 0;
    if (Settled(set, result, live)) return result;
    stack.push_back({.set = std::move(set), .live = live});
    // `result` is what the frame above the top answered; a frame starts
    // with true, as if its last child had held.
    result = true;
    while (!stack.empty()) {
      Frame& top = stack.back();
      bool descended = false;
      if (result) {
        // The next member computed last below the level: its set before.
        while (top.next < top.set.size()) {
          const NodeId x = top.set[top.next++];
          if (MemoryComputingLast(graph_, top.set, top.live, x, in_set_) >=
              level_) {
            continue;
          }
          std::vector<NodeId> before = Kept(SetBefore(graph_, top.set, x));
          bool settled = false;
          if (Settled(before, settled, live)) {
            if (settled) continue;
            result = false;
            break;
          }
          stack.push_back({.set = std::move(before), .live = live});
          descended = true;
          break;
        }
        if (descended) continue;
      }
      // Every member holds (result true), or one does not: the frame is
      // decided, unless the search was cut short, which proves nothing.
      if (gave_up_) return false;
      memo_[std::move(top.set)] = result;
      stack.pop_back();
    }
    return result;
  }

  struct Frame {
    std::vector<NodeId> set;
    int64_t live = 0;
    size_t next = 0;  // the next member to try as the last computed
  };

  // Whether `set` is decided without a search of its own (remembered, above
  // the level, empty, or past the limits: not proven), and then `holds`;
  // if not, `live` is the bytes of its values, its frame's.
  bool Settled(const std::vector<NodeId>& set, bool& holds, int64_t& live) {
    if (auto it = memo_.find(set); it != memo_.end()) {
      holds = it->second;
      return true;
    }
    if (gave_up_ || ++states_ > max_states_) {
      gave_up_ = true;
      holds = false;
      return true;
    }
    live = 0;
    for (NodeId v : set) live += memory_model::ResidentBytes(graph_, v);
    if (live >= level_ || set.empty()) {
      holds = memo_[set] = live >= level_;
      return true;
    }
    return false;
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
