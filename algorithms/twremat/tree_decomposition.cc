// Tree decomposition by greedy elimination (min-fill or min-degree), the
// first step of TwRemat and the treewidth bound of `remat graph info`
// (tree_decomposition.h).
#include "algorithms/twremat/tree_decomposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <queue>
#include <unordered_map>

namespace remat {
namespace {

// Greedy elimination with exact incremental fill-in counts and a lazy heap.
//
// Recomputing fill(v) for all vertices at every step is O(n) per step and
// far too slow on 10^5 nodes. Instead every change to the graph adjusts the
// counts it affects: removing v from a neighbour u's list removes the pairs
// (v, x) that were missing edges; a new fill edge (a, b) adds the pairs
// (b, x) for a's non-neighbours of b (and symmetrically) and closes the pair
// (a, b) for every common neighbour. The heap is never searched or updated
// in place: a changed vertex gets a new entry, and stale entries (whose key
// no longer matches, or whose vertex is gone) are skipped when popped.
class Eliminator {
 public:
  // Stops early (Run then returns nullopt) when `deadline` expires while
  // the initial fill-in counts are taken.
  Eliminator(const Graph& graph, EliminationOrder order,
             const Deadline& deadline)
      : order_(order),
        adj_(graph.num_nodes()),
        index_(graph.num_nodes()),
        fill_(graph.num_nodes(), 0),
        mark_(graph.num_nodes(), 0),
        touched_(graph.num_nodes(), 0),
        eliminated_(graph.num_nodes(), 0) {
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      for (NodeId u : graph.inputs(v)) {
        Append(v, u);
        Append(u, v);
      }
      remaining_edges_ += static_cast<int64_t>(graph.inputs(v).size());
    }
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      if ((v & 1023) == 1023 && deadline.Expired()) {
        expired_ = true;
        return;
      }
      if (order_ == EliminationOrder::kMinFill) fill_[v] = InitialFill(v);
      Push(v);
    }
  }

  std::optional<TreeDecomposition> Run(const Deadline& deadline) {
    if (expired_) return std::nullopt;
    const auto n = static_cast<int64_t>(adj_.size());
    TreeDecomposition td;
    if (n == 0) return td;
    int64_t remaining = n;
    while (remaining_edges_ != remaining * (remaining - 1) / 2) {
      // Every elimination: late ones make cliques of thousands of nodes
      // on wide graphs and take seconds each (random_layered:n=10000).
      if (deadline.Expired()) return std::nullopt;
      Entry top = heap_.top();
      heap_.pop();
      if (eliminated_[top.v] || top.fill != fill_[top.v] ||
          top.degree != Degree(top.v)) {
        continue;
      }
      td.elimination_order.push_back(top.v);
      td.bag_vertices.push_back(top.v);
      td.bag_vertices.insert(td.bag_vertices.end(), adj_[top.v].begin(),
                             adj_[top.v].end());
      td.bag_offsets.push_back(static_cast<int64_t>(td.bag_vertices.size()));
      if (!Eliminate(top.v, deadline)) return std::nullopt;
      --remaining;
    }
    // The root bag: the remaining clique.
    for (NodeId v = 0; v < n; ++v) {
      if (!eliminated_[v]) td.bag_vertices.push_back(v);
    }
    td.bag_offsets.push_back(static_cast<int64_t>(td.bag_vertices.size()));
    const auto root = static_cast<int32_t>(td.elimination_order.size());
    std::vector<int32_t> bag_of(n, root);
    for (int32_t b = 0; b < root; ++b) bag_of[td.elimination_order[b]] = b;
    td.parent.assign(root + 1, root);
    td.parent[root] = -1;
    for (int32_t b = 0; b < root; ++b) {
      // Neighbours are eliminated after v; the earliest one's bag holds them
      // all. With no neighbours any bag would do; the root is nearest.
      for (NodeId u : td.bag(b).subspan(1)) {
        td.parent[b] = std::min(td.parent[b], bag_of[u]);
      }
    }
    return td;
  }

 private:
  struct Entry {
    int64_t fill;
    int32_t degree;
    NodeId v;
    // std::priority_queue is a max-heap: "less" means "picked later".
    bool operator<(const Entry& o) const {
      if (fill != o.fill) return fill > o.fill;
      if (degree != o.degree) return degree > o.degree;
      return v > o.v;
    }
  };

  int32_t Degree(NodeId v) const {
    return static_cast<int32_t>(adj_[v].size());
  }

  // For min-degree the fill stays 0, so the key is (degree, id).
  void Push(NodeId v) { heap_.push({fill_[v], Degree(v), v}); }

  int64_t InitialFill(NodeId v) {
    // No pairs: without this a star's leaves each walked the hub's list,
    // quadratic in the hub's degree (10^6 leaves: hours).
    if (Degree(v) <= 1) return 0;
    const int64_t stamp = ++stamp_;
    for (NodeId u : adj_[v]) mark_[u] = stamp;
    int64_t twice_edges = 0;
    for (NodeId u : adj_[v]) twice_edges += NeighboursAmongMarked(u, v, stamp);
    const int64_t d = Degree(v);
    return d * (d - 1) / 2 - twice_edges / 2;
  }

  // How many of u's neighbours are v's, which carry `stamp` in mark_.
  // A hub's list is looked v's neighbours up in rather than walked: the
  // leaves of a training graph's star (each next to the root, the loss
  // and its gradient) walked two hubs' lists each, quadratic (3*10^5
  // leaves: 30 s).
  int64_t NeighboursAmongMarked(NodeId u, NodeId v, int64_t stamp) const {
    int64_t count = 0;
    if (index_[u] && adj_[u].size() > adj_[v].size()) {
      for (NodeId x : adj_[v]) count += index_[u]->contains(x);
    } else {
      for (NodeId x : adj_[u]) count += mark_[x] == stamp;
    }
    return count;
  }

  // Lists longer than this keep an index of positions, so that removing a
  // neighbour is not a search: a hub's list lost one leaf per elimination,
  // each found by a linear search (quadratic on a star or a wide fan-in).
  static constexpr size_t kIndexedLength = 512;

  void Append(NodeId a, NodeId b) {
    auto& list = adj_[a];
    list.push_back(b);
    if (index_[a]) {
      (*index_[a])[b] = static_cast<int32_t>(list.size() - 1);
    } else if (list.size() > kIndexedLength) {
      index_[a] = std::make_unique<std::unordered_map<NodeId, int32_t>>();
      index_[a]->reserve(2 * list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        (*index_[a])[list[i]] = static_cast<int32_t>(i);
      }
    }
  }

  // Removes v from u's list: the last entry takes its place.
  void Remove(NodeId u, NodeId v) {
    auto& list = adj_[u];
    size_t i;
    if (index_[u]) {
      auto it = index_[u]->find(v);
      i = static_cast<size_t>(it->second);
      index_[u]->erase(it);
    } else {
      i = static_cast<size_t>(std::find(list.begin(), list.end(), v) -
                              list.begin());
    }
    const NodeId moved = list.back();
    list[i] = moved;
    list.pop_back();
    if (index_[u] && moved != v) (*index_[u])[moved] = static_cast<int32_t>(i);
  }

  void Touch(NodeId v) {
    if (touched_[v] != touch_stamp_) {
      touched_[v] = touch_stamp_;
      touched_list_.push_back(v);
    }
  }

  // False when `deadline` expired midway (the state is then abandoned).
  bool Eliminate(NodeId v, const Deadline& deadline) {
    const bool track_fill = order_ == EliminationOrder::kMinFill;
    eliminated_[v] = 1;
    nbrs_.assign(adj_[v].begin(), adj_[v].end());
    ++touch_stamp_;
    touched_list_.clear();
    // Detach v.
    const int64_t in_nbrs = ++stamp_;
    for (NodeId u : nbrs_) mark_[u] = in_nbrs;
    for (NodeId u : nbrs_) {
      auto& list = adj_[u];
      if (track_fill) {
        // Pairs (v, x) with x not a neighbour of v were missing edges:
        // every x but v when u is v's only neighbour (a leaf hanging off
        // u, counted without walking u's list).
        int64_t lost_pairs = static_cast<int64_t>(list.size()) - 1;
        if (nbrs_.size() > 1) {
          lost_pairs -= NeighboursAmongMarked(u, v, in_nbrs);
        }
        fill_[u] -= lost_pairs;
      }
      Remove(u, v);
      Touch(u);
    }
    remaining_edges_ -= static_cast<int64_t>(nbrs_.size());
    // Make the neighbourhood a clique. The last neighbour pairs with none
    // after it: marking its list (a hub's, for each leaf) is skipped. A
    // hub's list is never marked or walked for a neighbour that is not one
    // (NeighboursAmongMarked): its index answers instead.
    for (size_t i = 0; i + 1 < nbrs_.size(); ++i) {
      if ((i & 63) == 63 && deadline.Expired()) return false;
      const NodeId a = nbrs_[i];
      const bool a_indexed = index_[a] != nullptr;
      const int64_t near_a = ++stamp_;
      if (!a_indexed) {
        for (NodeId x : adj_[a]) mark_[x] = near_a;
      }
      const auto next_to_a = [&](NodeId x) {
        return a_indexed ? index_[a]->contains(x) : mark_[x] == near_a;
      };
      for (size_t j = i + 1; j < nbrs_.size(); ++j) {
        const NodeId b = nbrs_[j];
        if (next_to_a(b)) continue;
        if (track_fill) {
          int64_t common = 0;
          const auto found = [&](NodeId x) {
            ++common;
            --fill_[x];
            Touch(x);
          };
          if (index_[b] && adj_[b].size() > adj_[a].size()) {
            for (NodeId x : adj_[a]) {
              if (index_[b]->contains(x)) found(x);
            }
          } else {
            for (NodeId x : adj_[b]) {
              if (next_to_a(x)) found(x);
            }
          }
          fill_[a] += Degree(a) - common;
          fill_[b] += Degree(b) - common;
        }
        Append(a, b);
        Append(b, a);
        mark_[b] = near_a;
        ++remaining_edges_;
      }
    }
    for (NodeId u : touched_list_) Push(u);
    return true;
  }

  EliminationOrder order_;
  std::vector<std::vector<NodeId>> adj_;
  // Positions in adj_[v], for lists longer than kIndexedLength.
  std::vector<std::unique_ptr<std::unordered_map<NodeId, int32_t>>> index_;
  std::vector<int64_t> fill_;
  std::vector<int64_t> mark_;
  int64_t stamp_ = 0;
  std::vector<int64_t> touched_;
  int64_t touch_stamp_ = 0;
  std::vector<NodeId> touched_list_;
  std::vector<uint8_t> eliminated_;
  std::vector<NodeId> nbrs_;
  int64_t remaining_edges_ = 0;
  std::priority_queue<Entry> heap_;
  bool expired_ = false;  // in the constructor
};

}  // namespace

int32_t TreeDecomposition::width() const {
  int64_t largest = 0;
  for (int32_t b = 0; b < num_bags(); ++b) {
    largest = std::max(largest, bag_offsets[b + 1] - bag_offsets[b]);
  }
  return static_cast<int32_t>(largest) - 1;
}

std::optional<TreeDecomposition> DecomposeByElimination(
    const Graph& graph, EliminationOrder order, const Deadline& deadline) {
  return Eliminator(graph, order, deadline).Run(deadline);
}

std::string CheckTreeDecomposition(const Graph& graph,
                                   const TreeDecomposition& td) {
  const int32_t n = graph.num_nodes();
  const int32_t bags = td.num_bags();
  if (n == 0) return bags == 0 ? "" : "bags for an empty graph";
  if (static_cast<int64_t>(td.bag_offsets.size()) != bags + int64_t{1}) {
    return "bag_offsets and parent disagree on the number of bags";
  }
  // One tree: a single root from which every bag is reached.
  std::vector<std::vector<int32_t>> children(bags);
  int32_t root = -1;
  for (int32_t b = 0; b < bags; ++b) {
    const int32_t p = td.parent[b];
    if (p == -1) {
      if (root != -1)
        return fmt::format("bags {} and {} are both roots", root, b);
      root = b;
    } else if (p < 0 || p >= bags || p == b) {
      return fmt::format("bag {} has parent {}", b, p);
    } else {
      children[p].push_back(b);
    }
  }
  if (root == -1) return "no root bag";
  int32_t reached = 0;
  std::vector<int32_t> stack = {root};
  while (!stack.empty()) {
    const int32_t b = stack.back();
    stack.pop_back();
    ++reached;
    stack.insert(stack.end(), children[b].begin(), children[b].end());
  }
  if (reached != bags) return "the parent links do not form one tree";
  // Sorted copies of the bags for membership tests.
  std::vector<std::vector<NodeId>> sorted(bags);
  std::vector<std::vector<int32_t>> bags_of(n);
  for (int32_t b = 0; b < bags; ++b) {
    sorted[b].assign(td.bag(b).begin(), td.bag(b).end());
    std::sort(sorted[b].begin(), sorted[b].end());
    for (size_t i = 0; i < sorted[b].size(); ++i) {
      const NodeId v = sorted[b][i];
      if (v < 0 || v >= n) return fmt::format("bag {} holds {}", b, v);
      if (i > 0 && sorted[b][i - 1] == v) {
        return fmt::format("bag {} holds {} twice", b, v);
      }
      bags_of[v].push_back(b);
    }
  }
  auto holds = [&](int32_t b, NodeId v) {
    return std::binary_search(sorted[b].begin(), sorted[b].end(), v);
  };
  // Connected subtree: k bags holding v are joined by exactly k - 1 tree
  // edges whose both ends hold v.
  std::vector<int32_t> joined(n, 0);
  for (int32_t b = 0; b < bags; ++b) {
    if (td.parent[b] == -1) continue;
    for (NodeId v : sorted[b]) joined[v] += holds(td.parent[b], v);
  }
  for (NodeId v = 0; v < n; ++v) {
    if (bags_of[v].empty()) return fmt::format("node {} is in no bag", v);
    if (joined[v] != static_cast<int32_t>(bags_of[v].size()) - 1) {
      return fmt::format("the bags holding node {} are not connected", v);
    }
  }
  for (NodeId v = 0; v < n; ++v) {
    for (NodeId u : graph.inputs(v)) {
      const bool covered = std::any_of(bags_of[u].begin(), bags_of[u].end(),
                                       [&](int32_t b) { return holds(b, v); });
      if (!covered) return fmt::format("edge {} -> {} is in no bag", u, v);
    }
  }
  return "";
}

}  // namespace remat
