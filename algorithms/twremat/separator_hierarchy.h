// The separator hierarchy of a tree decomposition (docs/algorithms.md,
// twremat step 2): a centroid decomposition of the decomposition tree.
//
// The root is a bag whose removal leaves pieces of at most half the bags;
// each piece is decomposed the same way and hangs below it, so the hierarchy
// has at most floor(log2 #bags) + 1 levels. A bag separates the graph
// vertices of its pieces from each other (the running-intersection property),
// which is what lets TwRemat work on one piece at a time while keeping only
// the separators on its recursion path. Each vertex is kept only in the
// highest hierarchy node whose bag holds it, so every vertex belongs to
// exactly one node; all(h) is the union of the bags of h's subtree.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/twremat/tree_decomposition.h"
#include "model/graph.h"

namespace remat {

class SeparatorHierarchy {
 public:
  SeparatorHierarchy(const Graph& graph, const TreeDecomposition& td);

  // Hierarchy nodes are numbered in depth-first preorder: 0 is the root and
  // the subtree of h is the range [h, subtree_end(h)).
  int32_t num_nodes() const { return static_cast<int32_t>(parent_.size()); }
  int32_t parent(int32_t h) const { return parent_[h]; }
  int32_t subtree_end(int32_t h) const { return end_[h]; }
  int32_t depth(int32_t h) const { return depth_[h]; }
  // Number of levels (0 for an empty graph).
  int32_t height() const { return height_; }
  // In increasing order.
  std::span<const int32_t> children(int32_t h) const {
    return {child_list_.data() + child_offsets_[h],
            child_list_.data() + child_offsets_[h + 1]};
  }
  // The vertices owned by h, in the graph's topological order.
  std::span<const NodeId> bag(int32_t h) const {
    return {bag_list_.data() + bag_offsets_[h],
            bag_list_.data() + bag_offsets_[h + 1]};
  }
  int32_t owner(NodeId v) const { return owner_[v]; }

  // v is in all(h).
  bool Contains(int32_t h, NodeId v) const {
    return h <= owner_[v] && owner_[v] < end_[h];
  }
  // The child of h whose subtree holds v; v must be in all(h) \ bag(h).
  int32_t ChildContaining(int32_t h, NodeId v) const;

 private:
  std::vector<int32_t> parent_, end_, depth_;
  int32_t height_ = 0;
  std::vector<int32_t> child_offsets_ = {0}, child_list_;
  std::vector<int64_t> bag_offsets_ = {0};
  std::vector<NodeId> bag_list_;
  std::vector<int32_t> owner_;
};

}  // namespace remat
