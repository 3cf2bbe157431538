// The search for a compute-once order and the bisection for the least
// peak of one (compute_once_order.h).
#include "algorithms/common/compute_once_order.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/common/fingerprint.h"
#include "model/liveness.h"
#include "model/memory_model.h"
#include "model/simulator.h"

namespace remat {
namespace {

using Found = OrderSearchResult::Found;

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

}  // namespace

OrderSearchResult SearchComputeOnceOrder(const Graph& graph, int64_t budget,
                                         const OrderSearchOptions& options,
                                         const Deadline& deadline) {
  Search search(graph, budget, options, deadline);
  OrderSearchResult result{.found = search.Run()};
  if (result.found == Found::kOrder) result.order = search.order();
  result.states = search.states();
  result.restarts = search.restarts();
  return result;
}

LeastPeakOrder FindLeastPeakOrder(const Graph& graph,
                                  const OrderSearchOptions& options,
                                  const Deadline& deadline) {
  auto peak_of = [&](std::span<const NodeId> order) {
    return Simulate(graph, InsertFrees(graph, order)).peak_bytes;
  };
  LeastPeakOrder best{.order = NoRematOrder(graph)};
  best.peak_bytes = peak_of(best.order);
  // Every budget in [low, best.peak_bytes) is still open; each search
  // below `low` was exhaustive.
  int64_t low = MemoryLowerBound(graph);
  bool exhaustive = true;
  while (low < best.peak_bytes && !deadline.Expired()) {
    const int64_t budget = low + (best.peak_bytes - 1 - low) / 2;
    // The searches left if each halves the range: each gets as much time.
    const auto searches_left =
        std::bit_width(static_cast<uint64_t>(best.peak_bytes - low));
    const OrderSearchResult found = SearchComputeOnceOrder(
        graph, budget, options,
        Deadline::In(std::max(deadline.SecondsLeft() / searches_left, 1e-3)));
    if (found.found == Found::kOrder) {
      best.order = found.order;
      best.peak_bytes = peak_of(best.order);
    } else {
      exhaustive = exhaustive && found.found == Found::kNone;
      low = budget + 1;
    }
  }
  best.least = exhaustive && low >= best.peak_bytes;
  return best;
}

}  // namespace remat
