// order_search — the base cost wherever an order fits: a search for an
// order that computes each needed value once and peaks within the budget.
//
// docs/algorithms.md, "order_search". Every schedule computes each needed
// node at least once, so a schedule that computes each exactly once costs
// the base cost, the least any schedule can: where such a schedule fits,
// it is optimal, whatever the class of the method that proves optima. How
// much memory it needs depends only on the order: each value is live from
// its compute to its last reader's. The NoRemat peak is that of one order
// (Kahn's); other orders peak lower, on graphs with parallel branches by
// more than the budgets at which the staged methods recompute
// (Checkmate's random layered graph of 100 nodes fits 80% of its NoRemat
// peak without recomputing, where checkmate_milp had proven 1.0006x the
// base cost optimal in the stage order it took from the other
// heuristics).
//
// The state of the search is the set of values computed so far (a lower
// set): it fixes which values are live. The search extends it one ready
// value at a time while that compute fits the budget, depth first, trying
// first the compute that leaves the least memory live. A compute that
// fits and leaves no more memory live than before (it frees at least the
// bytes it keeps) is taken alone: moving it earlier in any order that
// completes from this set lowers or keeps the memory of every compute in
// between, so no completion is lost (the classic exchange argument).
// Sets from which no order completes are remembered by fingerprint
// (common/fingerprint.h), so the search is complete: when it ends without
// an order, no schedule computing each value once fits (infeasible; one
// that recomputes may still). Runs restart as reach_search's do
// (randomized restarts, each run 1.5 times the last's sets), after the
// first with each compute's memory taken as up to `jitter` mean values
// more, at random.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

#include "algorithms/common/fingerprint.h"
#include "harness/liveness.h"
#include "harness/memory_model.h"
#include "harness/registry.h"
#include "harness/simulator.h"

namespace remat {
namespace {

struct OrderSearchOptions {
  int64_t memory_mib;
  int64_t restart_states;
  double jitter;
  int64_t seed;
};

const Options<OrderSearchOptions> kOptions(
    IntOption(&OrderSearchOptions::memory_mib, "memory_mib", 64,
              "MiB for the sets the search remembers; past it the search "
              "gives up (too_large)",
              1),
    IntOption(&OrderSearchOptions::restart_states, "restart_states", 10000,
              "sets the first run may search before the search starts "
              "again in another order, each run 1.5 times the last's, "
              "keeping the dead ends found (0: one run)",
              0),
    DoubleOption(&OrderSearchOptions::jitter, "jitter", 1,
                 "in the runs after the first, each compute is tried as if "
                 "it left up to this many mean values more live, at random",
                 0),
    IntOption(&OrderSearchOptions::seed, "seed", 0, "seed of the runs' orders",
              0));

enum class Found { kOrder, kNone, kGaveUp };

class Search {
 public:
  Search(const Graph& graph, int64_t budget, const OrderSearchOptions& options,
         const Deadline& deadline)
      : graph_(graph),
        budget_(budget),
        options_(options),
        deadline_(deadline),
        needed_(NeededNodes(graph)),
        keys_(FingerprintKeys(graph)),
        inputs_(graph.num_nodes()),
        readers_(graph.num_nodes()),
        dead_ends_(std::min<int64_t>(options.memory_mib, int64_t{1} << 30)
                   << 20) {
    int64_t resident = 0;
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      if (!needed_[v]) continue;
      ++num_needed_;
      resident += memory_model::ResidentBytes(graph, v);
      for (NodeId u : graph.inputs(v)) {
        if (std::find(inputs_[v].begin(), inputs_[v].end(), u) !=
            inputs_[v].end()) {
          continue;
        }
        inputs_[v].push_back(u);
        readers_[u].push_back(v);
      }
    }
    mean_resident_ = num_needed_ == 0 ? 0.0
                                      : static_cast<double>(resident) /
                                            static_cast<double>(num_needed_);
  }

  Found Run() {
    for (Restarts restarts(options_.restart_states);; restarts.Restart()) {
      const auto run = static_cast<uint64_t>(restarts.count());
      std::mt19937_64 random(SplitMix(static_cast<uint64_t>(options_.seed)) ^
                             run);
      const std::optional<Found> found =
          RunOnce(restarts.Cutoff(states_), run == 0 ? nullptr : &random);
      restarts_ = restarts.count();
      if (found) return *found;
    }
  }

  const std::vector<NodeId>& order() const { return order_; }
  int64_t states() const { return states_; }
  int64_t restarts() const { return restarts_; }

 private:
  struct Frame {
    std::vector<NodeId> tries;  // the computes to try, in order
    size_t next = 0;
    Fingerprint print;
    int64_t live = 0;
  };

  // The bytes live after computing v, ready, with `live` bytes live now.
  int64_t LiveAfter(int64_t live, NodeId v) const {
    if (readers_left_[v] > 0) live += memory_model::ResidentBytes(graph_, v);
    for (NodeId u : inputs_[v]) {
      if (readers_left_[u] == 1) live -= memory_model::ResidentBytes(graph_, u);
    }
    return live;
  }

  // The computes to try from the current set: the one that leaves the
  // least memory live first (as if up to `jitter` mean values more, at
  // random, in runs after the first), or alone the first that fits and
  // leaves no more live than now.
  std::vector<NodeId> Tries(int64_t live, std::mt19937_64* random) const {
    std::vector<std::pair<double, NodeId>> keyed;
    std::uniform_real_distribution<double> noise(
        0, options_.jitter * mean_resident_);
    for (NodeId v : ready_) {
      if (memory_model::MemoryAtCompute(graph_, live, v) > budget_) continue;
      const int64_t after = LiveAfter(live, v);
      if (after <= live) return {v};
      keyed.push_back({static_cast<double>(after) +
                           (random != nullptr ? noise(*random) : 0.0),
                       v});
    }
    std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first
                 ? a.first < b.first
                 : graph_.topo_rank(a.second) < graph_.topo_rank(b.second);
    });
    std::vector<NodeId> tries;
    tries.reserve(keyed.size());
    for (const auto& [key, v] : keyed) tries.push_back(v);
    return tries;
  }

  void Compute(NodeId v) {
    ready_.erase(std::find(ready_.begin(), ready_.end(), v));
    for (NodeId u : inputs_[v]) --readers_left_[u];
    for (NodeId w : readers_[v]) {
      if (--inputs_left_[w] == 0) ready_.push_back(w);
    }
  }
  void Undo(NodeId v) {
    for (NodeId w : readers_[v]) {
      if (inputs_left_[w]++ == 0) {
        ready_.erase(std::find(ready_.begin(), ready_.end(), w));
      }
    }
    for (NodeId u : inputs_[v]) ++readers_left_[u];
    ready_.push_back(v);
  }

  void Reset() {
    readers_left_.assign(graph_.num_nodes(), 0);
    inputs_left_.assign(graph_.num_nodes(), 0);
    ready_.clear();
    for (NodeId v : graph_.topological_order()) {
      if (!needed_[v]) continue;
      readers_left_[v] = static_cast<int32_t>(readers_[v].size());
      inputs_left_[v] = static_cast<int32_t>(inputs_[v].size());
      if (inputs_[v].empty()) ready_.push_back(v);
    }
  }

  // One run, until an order, a proof that none exists, a limit (kGaveUp),
  // or `cutoff` states (nullopt).
  std::optional<Found> RunOnce(int64_t cutoff, std::mt19937_64* random) {
    Reset();
    std::vector<Frame> stack;
    stack.push_back({.tries = Tries(0, random)});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (stack.size() - 1 == static_cast<size_t>(num_needed_)) {
        order_.clear();
        for (auto it = stack.begin(); it + 1 != stack.end(); ++it) {
          order_.push_back(it->tries[it->next - 1]);
        }
        return Found::kOrder;
      }
      if (top.next == top.tries.size()) {
        if (!dead_ends_.Insert(top.print)) return Found::kGaveUp;
        stack.pop_back();
        if (!stack.empty()) {
          Undo(stack.back().tries[stack.back().next - 1]);
        }
        continue;
      }
      const NodeId v = top.tries[top.next++];
      Frame child{.print = top.print, .live = LiveAfter(top.live, v)};
      child.print ^= keys_[v];
      if (dead_ends_.contains(child.print)) continue;
      if ((++states_ & 1023) == 0 && deadline_.Expired()) {
        return Found::kGaveUp;
      }
      if (states_ > cutoff) return std::nullopt;
      Compute(v);
      child.tries = Tries(child.live, random);
      stack.push_back(std::move(child));
    }
    return Found::kNone;
  }

  const Graph& graph_;
  const int64_t budget_;
  const OrderSearchOptions& options_;
  const Deadline& deadline_;
  const std::vector<uint8_t> needed_;
  const std::vector<Fingerprint> keys_;  // each node's random key
  // The needed nodes' distinct inputs and needed readers.
  std::vector<std::vector<NodeId>> inputs_;
  std::vector<std::vector<NodeId>> readers_;
  int64_t num_needed_ = 0;
  double mean_resident_ = 0;
  // The run's current set: readers not yet computed, inputs not yet
  // computed, and the needed values not computed whose inputs are.
  std::vector<int32_t> readers_left_;
  std::vector<int32_t> inputs_left_;
  std::vector<NodeId> ready_;
  DeadEnds dead_ends_;
  std::vector<NodeId> order_;
  int64_t states_ = 0;
  int64_t restarts_ = 0;
};

class OrderSearch : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const OrderSearchOptions options = kOptions.Read(request.params);
    const int64_t budget = request.budget_bytes;
    // NoRemat's own order, where it fits, needs no search.
    std::vector<NodeId> order = NoRematOrder(graph);
    Schedule schedule = InsertFrees(graph, order);
    if (Simulate(graph, schedule).peak_bytes <= budget) {
      return AlgorithmOutput::Found(std::move(schedule),
                                    "NoRemat's order fits");
    }
    Search search(graph, budget, options, request.deadline);
    const Found found = search.Run();
    AlgorithmOutput out = [&] {
      switch (found) {
        case Found::kOrder:
          return AlgorithmOutput::Found(
              InsertFrees(graph, search.order()),
              fmt::format("an order computing each value once fits ({} "
                          "sets searched)",
                          search.states()));
        case Found::kNone:
          return AlgorithmOutput::NoSchedule(
              Status::kInfeasible,
              fmt::format("no order computing each value once fits ({} "
                          "sets searched, all); one that recomputes may",
                          search.states()));
        case Found::kGaveUp:
          break;
      }
      if (request.deadline.Expired()) {
        return AlgorithmOutput::NoSchedule(
            Status::kTimeout,
            fmt::format("deadline reached after {} sets", search.states()));
      }
      return AlgorithmOutput::NoSchedule(
          Status::kTooLarge,
          fmt::format("the sets remembered outgrew memory_mib={} ({} sets "
                      "searched)",
                      options.memory_mib, search.states()));
    }();
    out.extra["states"] = search.states();
    out.extra["restarts"] = search.restarts();
    return out;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "order_search",
    .description =
        "The base cost wherever it fits: a search over the sets of values "
        "computed for an order that computes each value once within the "
        "budget, or a proof that none does",
    .citation = "rematbench (docs/algorithms.md, order_search)",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<OrderSearch>(); },
});

}  // namespace
}  // namespace remat
