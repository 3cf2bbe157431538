// The centroid hierarchy over a tree decomposition's bags that TwRemat
// recurses on: balanced separators, each bag owned by one hierarchy node
// (separator_hierarchy.h).
#include "algorithms/twremat/separator_hierarchy.h"

#include <algorithm>
#include <utility>

namespace remat {
namespace {

// Centroid decomposition of the tree given by `tree_parent`; returns each
// bag's parent in the hierarchy (-1 at its root). Iterative, O(B log B).
std::vector<int32_t> CentroidParents(const std::vector<int32_t>& tree_parent) {
  const auto bags = static_cast<int32_t>(tree_parent.size());
  std::vector<std::vector<int32_t>> adj(bags);
  for (int32_t b = 0; b < bags; ++b) {
    if (tree_parent[b] >= 0) {
      adj[b].push_back(tree_parent[b]);
      adj[tree_parent[b]].push_back(b);
    }
  }
  std::vector<int32_t> hier_parent(bags, -1);
  std::vector<uint8_t> removed(bags, 0);
  std::vector<int32_t> size(bags), dfs_parent(bags), order, stack;
  // Pieces still to decompose: (any bag of the piece, hierarchy parent).
  std::vector<std::pair<int32_t, int32_t>> pieces;
  if (bags > 0) pieces.push_back({0, -1});
  while (!pieces.empty()) {
    const auto [start, above] = pieces.back();
    pieces.pop_back();
    order.clear();
    stack.assign(1, start);
    dfs_parent[start] = -1;
    while (!stack.empty()) {
      const int32_t b = stack.back();
      stack.pop_back();
      order.push_back(b);
      for (int32_t c : adj[b]) {
        if (!removed[c] && c != dfs_parent[b]) {
          dfs_parent[c] = b;
          stack.push_back(c);
        }
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      size[*it] = 1;
      for (int32_t c : adj[*it]) {
        if (!removed[c] && c != dfs_parent[*it]) size[*it] += size[c];
      }
    }
    // Walk towards the heavy side; the side behind stays <= half.
    const auto total = static_cast<int32_t>(order.size());
    int32_t centroid = start;
    for (bool moved = true; moved;) {
      moved = false;
      for (int32_t c : adj[centroid]) {
        if (!removed[c] && c != dfs_parent[centroid] && 2 * size[c] > total) {
          centroid = c;
          moved = true;
          break;
        }
      }
    }
    hier_parent[centroid] = above;
    removed[centroid] = 1;
    for (int32_t c : adj[centroid]) {
      if (!removed[c]) pieces.push_back({c, centroid});
    }
  }
  return hier_parent;
}

}  // namespace

SeparatorHierarchy::SeparatorHierarchy(const Graph& graph,
                                       const TreeDecomposition& td) {
  const int32_t bags = td.num_bags();
  const std::vector<int32_t> hier_parent = CentroidParents(td.parent);
  std::vector<std::vector<int32_t>> kids(bags);
  int32_t root = -1;
  for (int32_t b = 0; b < bags; ++b) {
    if (hier_parent[b] < 0) {
      root = b;
    } else {
      kids[hier_parent[b]].push_back(b);
    }
  }
  // Renumber in preorder so that subtrees are index ranges.
  std::vector<int32_t> number(bags, -1), bag_at;
  std::vector<int32_t> stack;
  if (root >= 0) stack.push_back(root);
  while (!stack.empty()) {
    const int32_t b = stack.back();
    stack.pop_back();
    number[b] = static_cast<int32_t>(bag_at.size());
    bag_at.push_back(b);
    stack.insert(stack.end(), kids[b].rbegin(), kids[b].rend());
  }
  parent_.assign(bags, -1);
  depth_.assign(bags, 0);
  end_.assign(bags, 0);
  for (int32_t h = 0; h < bags; ++h) {
    const int32_t p = hier_parent[bag_at[h]];
    parent_[h] = p < 0 ? -1 : number[p];
    depth_[h] = p < 0 ? 0 : depth_[parent_[h]] + 1;
    height_ = std::max(height_, depth_[h] + 1);
  }
  for (int32_t h = bags - 1; h >= 0; --h) {
    end_[h] = std::max(end_[h], h + 1);
    if (parent_[h] >= 0) end_[parent_[h]] = std::max(end_[parent_[h]], end_[h]);
  }
  for (int32_t h = 0; h < bags; ++h) {
    for (int32_t b : kids[bag_at[h]]) child_list_.push_back(number[b]);
    std::sort(child_list_.begin() + child_offsets_.back(), child_list_.end());
    child_offsets_.push_back(static_cast<int32_t>(child_list_.size()));
  }
  // Preorder visits an ancestor before its descendants, and the bags holding
  // a vertex form a connected subtree whose highest node is an ancestor of
  // the rest: the first node to see a vertex owns it.
  owner_.assign(graph.num_nodes(), -1);
  for (int32_t h = 0; h < bags; ++h) {
    const size_t first = bag_list_.size();
    for (NodeId v : td.bag(bag_at[h])) {
      if (owner_[v] < 0) {
        owner_[v] = h;
        bag_list_.push_back(v);
      }
    }
    std::sort(bag_list_.begin() + static_cast<std::ptrdiff_t>(first),
              bag_list_.end(), [&](NodeId a, NodeId b) {
                return graph.topo_rank(a) < graph.topo_rank(b);
              });
    bag_offsets_.push_back(static_cast<int64_t>(bag_list_.size()));
  }
}

int32_t SeparatorHierarchy::ChildContaining(int32_t h, NodeId v) const {
  auto kids = children(h);
  // The last child whose preorder number is <= the owner's.
  return *(std::upper_bound(kids.begin(), kids.end(), owner_[v]) - 1);
}

}  // namespace remat
