// reach_search — memory first: a schedule within the budget whenever one
// that recomputes (and never offloads) exists, found by search.
//
// docs/algorithms.md, "reach_search"; the recursion is the reach bound's
// (docs/model.md, "Bounds of a graph"). A schedule may free everything
// after each target, so it fits the budget exactly when each target t can
// be computed from an empty memory within it: when t's step fits and the
// set inputs(t) can be brought live with every compute on the way within
// the budget. For a set S, the value x of S computed last is computed with
// S and inputs(x) live, and S \ {x} and inputs(x) were live just before:
// the search walks back from inputs(t), choosing x (latest in topological
// order first) while that compute fits, until the set is empty; read
// forwards, the choices are a schedule. Sets from which no choice leads to
// the empty set are remembered, so the search is complete: when it ends
// without a schedule, none exists (infeasible, with that proof). It
// minimizes nothing itself: in the search's schedule a value is recomputed
// each time it is needed again, every target from an empty memory. A pass
// then removes recomputations while the schedule stays within the budget
// (common/drop_recomputes.h), which can only lower the cost.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "algorithms/common/drop_recomputes.h"
#include "harness/liveness.h"
#include "harness/memory_model.h"
#include "harness/reach_bound.h"
#include "harness/registry.h"

namespace remat {
namespace {

struct ReachSearchOptions {
  int64_t memory_mib;
  bool drop_recomputes;
};

const Options<ReachSearchOptions> kOptions(
    IntOption(&ReachSearchOptions::memory_mib, "memory_mib", 64,
              "MiB for the sets the search remembers, per target; past it "
              "the search gives up (too_large)",
              1),
    BoolOption(&ReachSearchOptions::drop_recomputes, "drop_recomputes", true,
               "then remove recomputations while the schedule stays within "
               "the budget, until none can go or the deadline"));

// A remembered set is kept as a 128-bit fingerprint of its members, not the
// members themselves: sets of a few hundred values would take a kilobyte
// each, and the search's reach is the number of sets it can remember. Two
// different sets share a fingerprint with a probability near 2^-128 per
// pair; among the 10^8 sets a search remembers at most, the chance that any
// two collide (and a set is taken for a dead end it is not) is below 10^-22.
struct Fingerprint {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Fingerprint&) const = default;
};

struct FingerprintHash {
  size_t operator()(const Fingerprint& print) const { return print.low; }
};

// splitmix64's finalizer: every bit of the result depends on every bit of
// the argument.
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Of a set in its one order (latest first); two chains with different seeds.
Fingerprint FingerprintOf(const std::vector<NodeId>& set) {
  Fingerprint print{.high = 0x9e3779b97f4a7c15ULL,
                    .low = 0x632be59bd9b4e019ULL};
  for (NodeId v : set) {
    const auto id = static_cast<uint64_t>(static_cast<uint32_t>(v));
    print.high = Mix(print.high ^ id);
    print.low = Mix(print.low + id * 0xd6e8feb86659fd93ULL);
  }
  return print;
}

// What one remembered set takes in the hash set: the fingerprint, the
// node's link and cached hash, the allocator's header and a bucket.
constexpr int64_t kBytesPerRememberedSet = 64;

enum class Found { kSchedule, kNone, kGaveUp };

// The search for one target's inputs; frames on the heap, since a chain of
// choices is as long as the schedule. `in_set_` marks the top frame's set,
// so that trying a member as the last computed costs its inputs, not the
// set.
class Search {
 public:
  Search(const Graph& graph, int64_t budget, int64_t max_bytes,
         const Deadline& deadline)
      : graph_(graph),
        budget_(budget),
        max_bytes_(max_bytes),
        deadline_(deadline),
        in_set_(graph.num_nodes(), 0) {}

  // kSchedule: computes() brings `set` live from an empty memory, every
  // compute within the budget.
  Found Run(const std::vector<NodeId>& set) {
    std::vector<Frame> stack;
    stack.push_back(MakeFrame(LatestFirst(graph_, set)));
    for (NodeId v : stack.back().set) in_set_[v] = 1;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.set.empty()) {
        computes_.clear();
        for (auto it = stack.rbegin() + 1; it != stack.rend(); ++it) {
          computes_.push_back(it->set[it->next - 1]);
        }
        return Found::kSchedule;
      }
      if (top.next == top.set.size() || top.live > budget_) {
        remembered_bytes_ += kBytesPerRememberedSet;
        if (remembered_bytes_ > max_bytes_) return Found::kGaveUp;
        dead_ends_.insert(FingerprintOf(top.set));
        Pop(stack);
        continue;
      }
      const NodeId x = top.set[top.next++];
      if (MemoryComputingLast(top, x) > budget_) continue;
      Frame child = MakeFrame(SetBefore(top.set, x));
      if (dead_ends_.contains(FingerprintOf(child.set))) continue;
      if ((++states_ & 1023) == 0 && deadline_.Expired()) {
        return Found::kGaveUp;
      }
      in_set_[x] = 0;
      for (NodeId u : child.added) in_set_[u] = 1;
      stack.push_back(std::move(child));
    }
    return Found::kNone;
  }

  const std::vector<NodeId>& computes() const { return computes_; }
  int64_t states() const { return states_; }

 private:
  struct Frame {
    std::vector<NodeId> set;  // latest in topological order first
    int64_t live = 0;
    size_t next = 0;  // the next member to try as the last computed
    // The inputs of the parent's chosen member that were not in its set.
    std::vector<NodeId> added;
  };

  // MemoryComputingLast of harness/reach_bound.h, for the top frame.
  int64_t MemoryComputingLast(const Frame& top, NodeId x) const {
    int64_t live = top.live - memory_model::ResidentBytes(graph_, x);
    for (NodeId u : graph_.inputs(x)) {
      if (!in_set_[u]) live += memory_model::ResidentBytes(graph_, u);
    }
    return memory_model::MemoryAtCompute(graph_, live, x);
  }

  // The top frame's set without x and with x's inputs, latest first: the
  // set merged with the new inputs, sorted.
  Frame SetBefore(const std::vector<NodeId>& set, NodeId x) const {
    Frame child;
    for (NodeId u : graph_.inputs(x)) {
      if (!in_set_[u]) child.added.push_back(u);
    }
    child.added = LatestFirst(graph_, std::move(child.added));
    child.set.reserve(set.size() + child.added.size());
    auto later = [&](NodeId a, NodeId b) {
      return graph_.topo_rank(a) > graph_.topo_rank(b);
    };
    auto added = child.added.begin();
    for (NodeId v : set) {
      if (v == x) continue;
      while (added != child.added.end() && later(*added, v)) {
        child.set.push_back(*added++);
      }
      child.set.push_back(v);
    }
    child.set.insert(child.set.end(), added, child.added.end());
    return child;
  }

  Frame MakeFrame(Frame frame) const {
    for (NodeId v : frame.set) {
      frame.live += memory_model::ResidentBytes(graph_, v);
    }
    return frame;
  }
  Frame MakeFrame(std::vector<NodeId> set) const {
    return MakeFrame(Frame{.set = std::move(set)});
  }

  // Leaves the parent's set marked.
  void Pop(std::vector<Frame>& stack) {
    const Frame& top = stack.back();
    for (NodeId u : top.added) in_set_[u] = 0;
    if (stack.size() > 1) {
      const Frame& parent = stack[stack.size() - 2];
      in_set_[parent.set[parent.next - 1]] = 1;
    } else {
      for (NodeId v : top.set) in_set_[v] = 0;
    }
    stack.pop_back();
  }

  const Graph& graph_;
  const int64_t budget_;
  const int64_t max_bytes_;
  const Deadline& deadline_;
  std::vector<uint8_t> in_set_;
  std::unordered_set<Fingerprint, FingerprintHash> dead_ends_;
  std::vector<NodeId> computes_;
  int64_t states_ = 0;
  int64_t remembered_bytes_ = 0;
};

class ReachSearch : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const ReachSearchOptions options = kOptions.Read(request.params);
    const int64_t memory_mib = options.memory_mib;
    const int64_t budget = request.budget_bytes;
    std::vector<NodeId> computes;
    int64_t states = 0;
    for (NodeId t : graph.topological_order()) {
      if (!graph.is_target(t)) continue;
      if (memory_model::LeastMemoryToCompute(graph, t) > budget) {
        return AlgorithmOutput::NoSchedule(
            Status::kInfeasible,
            fmt::format("{} alone needs {} bytes with its inputs",
                        graph.node_name(t),
                        memory_model::LeastMemoryToCompute(graph, t)));
      }
      // More than a pebibyte is no limit.
      Search search(graph, budget,
                    std::min<int64_t>(memory_mib, int64_t{1} << 30) << 20,
                    request.deadline);
      const auto in = graph.inputs(t);
      const Found found = search.Run({in.begin(), in.end()});
      states += search.states();
      if (found == Found::kGaveUp) {
        if (request.deadline.Expired()) {
          return AlgorithmOutput::NoSchedule(
              Status::kTimeout,
              fmt::format("deadline reached searching for {}'s inputs",
                          graph.node_name(t)));
        }
        return AlgorithmOutput::NoSchedule(
            Status::kTooLarge,
            fmt::format("the sets remembered searching for {}'s inputs "
                        "outgrew memory_mib={} ({} sets searched)",
                        graph.node_name(t), memory_mib, search.states()));
      }
      if (found == Found::kNone) {
        return AlgorithmOutput::NoSchedule(
            Status::kInfeasible,
            fmt::format("no schedule brings {}'s inputs live within the "
                        "budget ({} sets searched, all)",
                        graph.node_name(t), search.states()));
      }
      computes.insert(computes.end(), search.computes().begin(),
                      search.computes().end());
      computes.push_back(t);
    }
    std::string message;
    if (options.drop_recomputes) {
      const size_t searched = computes.size();
      DroppedRecomputes dropped =
          DropRecomputes(graph, std::move(computes), budget, request.deadline);
      computes = std::move(dropped.computes);
      message = fmt::format(
          "{} of the search's {} computes removed{}", dropped.removed, searched,
          dropped.finished ? "" : " before the deadline stopped the pass");
    }
    AlgorithmOutput out =
        AlgorithmOutput::Found(InsertFrees(graph, computes), message);
    out.extra["states"] = states;
    return out;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "reach_search",
    .description =
        "Memory first: a search backwards from each target's inputs over "
        "the sets of values live together finds a schedule within the "
        "budget whenever one exists (recomputation only); the cost is not "
        "minimized",
    .citation = "rematbench (docs/model.md, the reach bound's recursion)",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<ReachSearch>(); },
});

}  // namespace
}  // namespace remat
