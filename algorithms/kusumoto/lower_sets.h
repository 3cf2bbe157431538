// Lower sets of the forward graph, the state space of Kusumoto et al.'s
// dynamic programs (docs/algorithms.md, "Kusumoto et al. 2019").
//
// The forward graph G is the needed forward and loss values of a training
// graph, numbered 0..n-1 in the graph's topological order. A lower set L is
// closed under predecessors in G. For each set of a family this file keeps
// what the DP reads per transition, computed once per graph: the set as a
// bitset, M(L), T(L), the boundary ∂L (nodes of L with a successor outside
// L) with M(∂L) and T(∂L), and M(A(L)) + M(B(L)) (A: successors of L outside
// L; B: the other predecessors of A outside L and outside A).
//
// Sets are stored sorted by (M(L), |L|). A proper subset has a smaller size
// and no larger memory, so this is a subsets-first order. The DP finds the
// supersets of a set that a budget allows by walking one-node extensions
// (ForEachSuperset) instead of testing every pair.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

// The forward graph G plus what the canonical schedule needs from the rest
// of the training graph.
struct LowerSetGraph {
  std::vector<NodeId> node;    // local index -> graph node, topological
  std::vector<int32_t> local;  // graph node -> local index, or -1
  std::vector<int64_t> mem, cost;
  // CSR adjacency inside G, local indices.
  std::vector<int32_t> pred_offsets, preds, succ_offsets, succs;
  // Needed backward nodes by local index of their grad_of, each list in
  // topological order.
  std::vector<std::vector<NodeId>> backward_of;

  int32_t size() const { return static_cast<int32_t>(node.size()); }
  std::span<const int32_t> pred(int32_t v) const {
    return {preds.data() + pred_offsets[v], preds.data() + pred_offsets[v + 1]};
  }
  std::span<const int32_t> succ(int32_t v) const {
    return {succs.data() + succ_offsets[v], succs.data() + succ_offsets[v + 1]};
  }
};

enum class LowerSetKind {
  kAll,               // every lower set (dp_exact)
  kAncestorClosures,  // ∅, each {v} ∪ ancestors(v), and G (dp_approx)
};

class LowerSetFamily {
 public:
  int32_t size() const { return static_cast<int32_t>(mem_.size()); }
  int32_t words() const { return words_; }
  const uint64_t* bits(int32_t s) const {
    return bits_.data() + static_cast<size_t>(s) * words_;
  }
  bool Contains(int32_t s, int32_t v) const {
    return (bits(s)[v >> 6] >> (v & 63)) & 1;
  }
  // True when set a is a subset of set b.
  bool IsSubset(int32_t a, int32_t b) const {
    const uint64_t* x = bits(a);
    const uint64_t* y = bits(b);
    for (int32_t w = 0; w < words_; ++w) {
      if (x[w] & ~y[w]) return false;
    }
    return true;
  }
  int64_t mem(int32_t s) const { return mem_[s]; }
  int64_t cost(int32_t s) const { return cost_[s]; }
  int32_t count(int32_t s) const { return count_[s]; }
  // M(A(L)) + M(B(L)).
  int64_t ab_mem(int32_t s) const { return ab_mem_[s]; }
  std::span<const int32_t> boundary(int32_t s) const {
    return {boundary_.data() + boundary_offsets_[s],
            boundary_.data() + boundary_offsets_[s + 1]};
  }
  int64_t boundary_mem(int32_t s) const { return boundary_mem_[s]; }
  // M and T of one node of G (local index), copied for locality.
  int64_t node_mem(int32_t v) const { return node_mem_[v]; }
  int64_t node_cost(int32_t v) const { return node_cost_[v]; }
  int64_t boundary_cost(int32_t s) const { return boundary_cost_[s]; }
  // 2 M(L) + M(A(L)) + M(B(L)): a segment ending at L costs this minus
  // 2 M(L0) at its start. It grows with L: adding a node v (whose
  // predecessors are all in L) adds 2 M(v), and removes at most M(v) from
  // A ∪ B, since A(L ∪ {v}) keeps A(L) \ {v} and B keeps every node not
  // in L ∪ {v} with a successor in A (no predecessor of v is outside L).
  int64_t peak_key(int32_t s) const { return 2 * mem_[s] + ab_mem_[s]; }

  // A superset of a set one step up (see ForEachSuperset).
  struct Cover {
    int32_t set;   // L ∪ {node}, or the closure of node (-1 for G)
    int32_t node;  // local index in G
  };
  // Scratch space for ForEachSuperset, reused across calls.
  struct WalkScratch {
    std::vector<Cover> stack;
    std::vector<uint32_t> seen;  // == stamp: reached in the current walk
    uint32_t stamp = 0;
  };
  // Calls visit(t) for every strict superset t of set s in the family with
  // peak_key(t) <= max_key, which `visit` may lower as it goes; when
  // visit(t) returns false, the supersets of t that the walk would reach
  // through t are skipped (pass a condition that holds for them too).
  //
  // The walk follows the covers. For all lower sets they are L -> L ∪ {v},
  // taken with the nodes of t \ s in increasing order: removing the largest
  // node of t \ s from t leaves a lower set (it has no successor in t), so
  // each t is reached once, along a path of subsets of t. For ancestor
  // closures they are closure(v) -> closure(w) for the successors w of v
  // (and the sinks' closures -> G), which reach closure(w) from closure(v)
  // for every descendant w, possibly along several paths: there `seen`
  // keeps each set to one visit.
  template <typename Visit>
  void ForEachSuperset(int32_t s, const int64_t& max_key, WalkScratch& scratch,
                       Visit&& visit) const {
    std::vector<Cover>& stack = scratch.stack;
    if (!one_node_covers_) {
      if (scratch.seen.size() != static_cast<size_t>(size()) ||
          ++scratch.stamp == 0) {
        scratch.seen.assign(size(), 0);
        scratch.stamp = 1;
      }
    }
    stack.assign(1, {s, -1});
    while (!stack.empty()) {
      const Cover at = stack.back();
      stack.pop_back();
      for (int32_t i = cover_offsets_[at.set + 1] - 1;
           i >= cover_offsets_[at.set]; --i) {
        const Cover next = covers_[i];
        if (one_node_covers_) {
          if (next.node <= at.node) break;  // ascending in node
        } else {
          if (scratch.seen[next.set] == scratch.stamp) continue;
          scratch.seen[next.set] = scratch.stamp;
        }
        if (peak_key(next.set) > max_key) continue;
        if (visit(next.set)) stack.push_back(next);
      }
    }
  }

  // Index of the empty set and of G (first and last in the order).
  int32_t empty_set() const { return 0; }
  int32_t full_set() const { return size() - 1; }

  // Builds the per-set quantities from raw bitsets (any order, no
  // duplicates, containing ∅ and G) and the covers of each set (indices
  // into `bits`; for all lower sets, `one_node_covers` and each list
  // ascending in node); nullopt when `deadline` expires first.
  static std::optional<LowerSetFamily> FromBitsets(
      const LowerSetGraph& g, std::vector<uint64_t> bits,
      const std::vector<std::vector<Cover>>& covers, bool one_node_covers,
      const Deadline& deadline);

 private:
  int32_t words_ = 0;
  std::vector<uint64_t> bits_;
  std::vector<int64_t> mem_, cost_, ab_mem_, boundary_mem_, boundary_cost_;
  std::vector<int64_t> node_mem_, node_cost_;
  std::vector<int32_t> count_, boundary_offsets_, boundary_;
  std::vector<int32_t> cover_offsets_;
  std::vector<Cover> covers_;
  bool one_node_covers_ = false;
};

// Everything the DP needs about one graph, shared across budgets.
struct LowerSetAnalysis {
  LowerSetGraph graph;
  LowerSetFamily family;
};

// The forward graph of `graph`, or nullopt with `why` when the graph is not
// a training graph the canonical schedule can handle.
std::optional<LowerSetGraph> ExtractLowerSetGraph(const Graph& graph,
                                                  std::string& why);

// Result of AnalyzeLowerSets: an analysis, or a status (unsupported, too_large,
// timeout) with a message.
struct LowerSetLookup {
  std::shared_ptr<const LowerSetAnalysis> analysis;
  Status status = Status::kFeasible;
  std::string message;
};

// The analysis of `graph` for `kind`: the per-graph work of dp_exact and
// dp_approx (their Prepare), shared by every budget of a sweep.
// Enumerating all lower sets stops with too_large beyond `max_sets` sets
// and with timeout at `deadline`.
LowerSetLookup AnalyzeLowerSets(const Graph& graph, LowerSetKind kind,
                                int64_t max_sets, const Deadline& deadline);

}  // namespace remat
