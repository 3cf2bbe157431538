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
#include <iterator>
#include <optional>
#include <random>
#include <vector>

#include "algorithms/common/drop_recomputes.h"
#include "algorithms/common/fingerprint.h"
#include "model/liveness.h"
#include "model/memory_model.h"
#include "model/registry.h"

namespace remat {
namespace {

struct ReachSearchOptions {
  int64_t memory_mib;
  int64_t restart_states;
  int64_t jitter;
  int64_t seed;
  bool drop_recomputes;
};

const Options<ReachSearchOptions> kOptions(
    IntOption(&ReachSearchOptions::memory_mib, "memory_mib", 128,
              "MiB for the sets the search remembers, per target; past it "
              "the search gives up (too_large)",
              1),
    IntOption(&ReachSearchOptions::restart_states, "restart_states", 100000,
              "sets the first run may search before the search starts "
              "again in another order, each run 1.5 times the last's, "
              "keeping the dead ends found (0: one run)",
              0),
    IntOption(&ReachSearchOptions::jitter, "jitter", 10,
              "in the runs after the first, each value is tried as if up "
              "to this many places later in the topological order, at "
              "random",
              0),
    IntOption(&ReachSearchOptions::seed, "seed", 0, "seed of the runs' orders",
              0),
    BoolOption(&ReachSearchOptions::drop_recomputes, "drop_recomputes", true,
               "then remove recomputations while the schedule stays within "
               "the budget, until none can go or the deadline"));

enum class Found { kSchedule, kNone, kGaveUp };

// The search for one target's inputs; frames on the heap, since a chain of
// choices is as long as the schedule. `in_set_` marks the top frame's set,
// so that trying a member as the last computed costs its inputs, not the
// set.
//
// A depth-first search that chose badly near its root can spend long below
// it: its time to a schedule varies widely with the order it tries the
// members in. So it runs again and again from the root, each run in an
// order perturbed at random and sharing the dead ends found before
// (Restarts, common/fingerprint.h): a run that ends without a schedule
// proves that none exists, as a single run would.
class Search {
 public:
  Search(const Graph& graph, int64_t budget, int64_t max_bytes,
         const ReachSearchOptions& options, const Deadline& deadline)
      : graph_(graph),
        budget_(budget),
        options_(options),
        deadline_(deadline),
        in_set_(graph.num_nodes(), 0),
        keys_(FingerprintKeys(graph)),
        place_(graph.num_nodes()),
        dead_ends_(max_bytes) {}

  // kSchedule: computes() brings `set` live from an empty memory, every
  // compute within the budget.
  Found Run(const std::vector<NodeId>& set) {
    for (Restarts restarts(options_.restart_states);; restarts.Restart()) {
      OrderMembers(restarts.count());
      const std::optional<Found> found = RunOnce(set, restarts.Cutoff(states_));
      restarts_ = restarts.count();
      if (found) return *found;
      std::fill(in_set_.begin(), in_set_.end(), 0);
    }
  }

  const std::vector<NodeId>& computes() const { return computes_; }
  int64_t states() const { return states_; }
  int64_t restarts() const { return restarts_; }

 private:
  struct Frame {
    std::vector<NodeId> set;  // in the order a run tries its members
    Fingerprint print;
    int64_t live = 0;
    size_t next = 0;  // the next member to try as the last computed
    // The inputs of the parent's chosen member that were not in its set.
    std::vector<NodeId> added;
  };

  // The order a run tries a set's members in as the last computed: latest
  // in topological order first, which read forwards keeps what a schedule
  // without recomputation would; after the first run, each value as if up
  // to `jitter` places later, at random.
  void OrderMembers(int64_t run) {
    std::mt19937_64 random(SplitMix(static_cast<uint64_t>(options_.seed)) ^
                           static_cast<uint64_t>(run));
    std::uniform_real_distribution<double> shift(
        0, static_cast<double>(options_.jitter));
    for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
      place_[v] = static_cast<double>(graph_.topo_rank(v)) +
                  (run == 0 ? 0.0 : shift(random));
    }
  }
  bool TriedFirst(NodeId a, NodeId b) const {
    return place_[a] != place_[b] ? place_[a] > place_[b]
                                  : graph_.topo_rank(a) > graph_.topo_rank(b);
  }

  // One run, until a schedule, a proof that none exists, a limit
  // (kGaveUp), or `cutoff` states (nullopt).
  std::optional<Found> RunOnce(const std::vector<NodeId>& set, int64_t cutoff) {
    std::vector<Frame> stack;
    {
      Frame root;
      for (NodeId v : set) {
        if (in_set_[v]) continue;
        in_set_[v] = 1;
        root.set.push_back(v);
        root.print ^= keys_[v];
        root.live += memory_model::ResidentBytes(graph_, v);
      }
      std::sort(root.set.begin(), root.set.end(),
                [&](NodeId a, NodeId b) { return TriedFirst(a, b); });
      stack.push_back(std::move(root));
    }
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
        if (!dead_ends_.Insert(top.print)) return Found::kGaveUp;
        Pop(stack);
        continue;
      }
      const NodeId x = top.set[top.next++];
      if (MemoryComputingLast(top, x) > budget_) continue;
      Frame child = SetBefore(top, x);
      if (dead_ends_.contains(child.print)) continue;
      if ((++states_ & 1023) == 0 && deadline_.Expired()) {
        return Found::kGaveUp;
      }
      if (states_ > cutoff) return std::nullopt;
      in_set_[x] = 0;
      for (NodeId u : child.added) in_set_[u] = 1;
      stack.push_back(std::move(child));
    }
    return Found::kNone;
  }

  // The memory while x, a member of the top frame's set, is computed last:
  // the set live but x, x's inputs, and x's step.
  int64_t MemoryComputingLast(const Frame& top, NodeId x) const {
    int64_t live = top.live - memory_model::ResidentBytes(graph_, x);
    for (NodeId u : graph_.inputs(x)) {
      if (!in_set_[u]) live += memory_model::ResidentBytes(graph_, u);
    }
    return memory_model::MemoryAtCompute(graph_, live, x);
  }

  // The top frame's set without x and with x's inputs, in the run's order:
  // the set merged with the new inputs, sorted.
  Frame SetBefore(const Frame& top, NodeId x) const {
    Frame child{.print = top.print, .live = top.live};
    child.print ^= keys_[x];
    child.live -= memory_model::ResidentBytes(graph_, x);
    for (NodeId u : graph_.inputs(x)) {
      if (in_set_[u] || std::find(child.added.begin(), child.added.end(), u) !=
                            child.added.end()) {
        continue;
      }
      child.added.push_back(u);
      child.print ^= keys_[u];
      child.live += memory_model::ResidentBytes(graph_, u);
    }
    const auto first = [&](NodeId a, NodeId b) { return TriedFirst(a, b); };
    std::sort(child.added.begin(), child.added.end(), first);
    child.set.reserve(top.set.size() + child.added.size());
    std::merge(top.set.begin(), top.set.end(), child.added.begin(),
               child.added.end(), std::back_inserter(child.set), first);
    child.set.erase(std::find(child.set.begin(), child.set.end(), x));
    return child;
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
  const ReachSearchOptions& options_;
  const Deadline& deadline_;
  std::vector<uint8_t> in_set_;
  std::vector<Fingerprint> keys_;  // each node's random key
  std::vector<double> place_;      // the run's order: the larger, the first
  DeadEnds dead_ends_;
  std::vector<NodeId> computes_;
  int64_t states_ = 0;
  int64_t restarts_ = 0;
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
    int64_t restarts = 0;
    // Every answer after a search says how far it went.
    const auto searched = [&](AlgorithmOutput out) {
      out.extra["states"] = states;
      out.extra["restarts"] = restarts;
      return out;
    };
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
                    options, request.deadline);
      const auto in = graph.inputs(t);
      const Found found = search.Run({in.begin(), in.end()});
      states += search.states();
      restarts += search.restarts();
      if (found == Found::kGaveUp) {
        if (request.deadline.Expired()) {
          return searched(AlgorithmOutput::NoSchedule(
              Status::kTimeout,
              fmt::format("deadline reached searching for {}'s inputs",
                          graph.node_name(t))));
        }
        return searched(AlgorithmOutput::NoSchedule(
            Status::kTooLarge,
            fmt::format("the sets remembered searching for {}'s inputs "
                        "outgrew memory_mib={} ({} sets searched)",
                        graph.node_name(t), memory_mib, search.states())));
      }
      if (found == Found::kNone) {
        return searched(AlgorithmOutput::NoSchedule(
            Status::kInfeasible,
            fmt::format("no schedule brings {}'s inputs live within the "
                        "budget ({} sets searched, all)",
                        graph.node_name(t), search.states())));
      }
      computes.insert(computes.end(), search.computes().begin(),
                      search.computes().end());
      computes.push_back(t);
    }
    std::string message;
    if (options.drop_recomputes) {
      const size_t found_computes = computes.size();
      DroppedRecomputes dropped =
          DropRecomputes(graph, std::move(computes), budget, request.deadline);
      computes = std::move(dropped.computes);
      message = fmt::format(
          "{} of the search's {} computes removed{}", dropped.removed,
          found_computes,
          dropped.finished ? "" : " before the deadline stopped the pass");
    }
    return searched(
        AlgorithmOutput::Found(InsertFrees(graph, computes), message));
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
