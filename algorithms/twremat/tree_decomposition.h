// Tree decompositions of a computation graph by greedy vertex elimination.
//
// docs/algorithms.md, twremat step 1. The DAG is viewed as an undirected simple
// graph. Vertices are eliminated one at a time — by fewest fill-in edges
// (ties: smaller degree, then smaller id) or by smallest degree (ties:
// smaller id) — each turning its remaining neighbourhood into a clique and
// leaving the bag {v} + neighbours. Elimination stops when the remaining
// vertices form a clique, which becomes the root bag. Each bag hangs below
// the bag of its earliest-eliminated neighbour (which holds all of its
// neighbours, as they became a clique), or below the root.
//
// Width = largest bag - 1 is an upper bound on the treewidth; TwRemat's
// separators, and hence its memory, scale with it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

enum class EliminationOrder { kMinFill, kMinDegree };

struct TreeDecomposition {
  // Bag b is bag_vertices[bag_offsets[b] .. bag_offsets[b + 1]).
  std::vector<int64_t> bag_offsets = {0};
  std::vector<NodeId> bag_vertices;
  std::vector<int32_t> parent;  // -1 at the root, the last bag
  // Order in which the vertices were eliminated (the root bag's are absent).
  std::vector<NodeId> elimination_order;

  int32_t num_bags() const { return static_cast<int32_t>(parent.size()); }
  std::span<const NodeId> bag(int32_t b) const {
    return {bag_vertices.data() + bag_offsets[b],
            bag_vertices.data() + bag_offsets[b + 1]};
  }
  // Largest bag size - 1 (-1 for an empty graph).
  int32_t width() const;
};

// Returns nullopt if `deadline` expires first. An empty graph gives no bags.
std::optional<TreeDecomposition> DecomposeByElimination(
    const Graph& graph, EliminationOrder order,
    const Deadline& deadline = Deadline::Never());

// Independent checker (it shares no code with the construction): every
// vertex and every edge of the graph lies in some bag, the parent links form
// one tree, and the bags holding any vertex form a connected subtree.
// Returns an empty string if the decomposition is valid, else what is wrong.
std::string CheckTreeDecomposition(const Graph& graph,
                                   const TreeDecomposition& decomposition);

}  // namespace remat
