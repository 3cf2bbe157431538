// The checkpoint candidates of Chen et al.'s methods and revolve:
// articulation points of the forward graph (Boost.Graph's biconnected
// components on its undirected view) or every forward value.
#include "algorithms/checkpointing/checkpoint_candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/biconnected_components.hpp>
#include <cctype>
#include <iterator>

#include "harness/simulator.h"

namespace remat {

std::optional<CheckpointGraph> PrepareCheckpointGraph(const Graph& graph,
                                                      std::string& why) {
  std::optional<ForwardBackward> split = SplitForwardBackward(graph, why);
  if (!split) return std::nullopt;
  CheckpointGraph fwd{.split = std::move(*split), .needed = NeededNodes(graph)};
  for (NodeId v : fwd.split.forward) {
    if (!fwd.needed[v]) continue;
    for (NodeId u : graph.inputs(v)) {
      if (!fwd.split.is_forward[u]) {
        why = fmt::format(
            "forward value {} ('{}') reads node {} ('{}') of kind {}: "
            "segments need a forward graph closed under inputs",
            v, graph.node_name(v), u, graph.node_name(u),
            NodeKindName(graph.kind(u)));
        return std::nullopt;
      }
    }
    fwd.forward.push_back(v);
  }
  return fwd;
}

std::vector<NodeId> ArticulationCandidates(const Graph& graph,
                                           const CheckpointGraph& fwd) {
  using UGraph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  const auto f = static_cast<int32_t>(fwd.forward.size());
  if (f == 0) return {};
  std::vector<int32_t> local(graph.num_nodes(), -1);
  for (int32_t i = 0; i < f; ++i) local[fwd.forward[i]] = i;
  const int32_t source = f, sink = f + 1;
  UGraph g(f + 2);
  for (int32_t i = 0; i < f; ++i) {
    const NodeId v = fwd.forward[i];
    bool has_input = false, has_consumer = false;
    for (NodeId u : graph.inputs(v)) {
      if (local[u] >= 0) {
        boost::add_edge(local[u], i, g);
        has_input = true;
      }
    }
    for (NodeId w : graph.consumers(v)) has_consumer |= local[w] >= 0;
    if (!has_input) boost::add_edge(source, i, g);
    if (!has_consumer) boost::add_edge(i, sink, g);
  }
  std::vector<UGraph::vertex_descriptor> points;
  boost::articulation_points(g, std::back_inserter(points));
  std::vector<NodeId> candidates;
  for (auto p : points) {
    const auto i = static_cast<int32_t>(p);
    if (i >= f) continue;  // the virtual source or sink
    if (graph.kind(fwd.forward[i]) == NodeKind::kLoss) continue;
    candidates.push_back(fwd.forward[i]);
  }
  std::sort(candidates.begin(), candidates.end(), [&](NodeId a, NodeId b) {
    return graph.topo_rank(a) < graph.topo_rank(b);
  });
  return candidates;
}

std::vector<NodeId> AllCandidates(const Graph& graph,
                                  const CheckpointGraph& fwd) {
  std::vector<NodeId> candidates;
  for (NodeId v : fwd.forward) {
    if (graph.kind(v) != NodeKind::kLoss) candidates.push_back(v);
  }
  return candidates;
}

std::vector<NodeId> SelectCandidates(const Graph& graph,
                                     const CheckpointGraph& fwd,
                                     CandidateSet set) {
  return set == CandidateSet::kAll ? AllCandidates(graph, fwd)
                                   : ArticulationCandidates(graph, fwd);
}

namespace {

// The TensorFlow library matched op types against 'conv2d|Conv|MatMul';
// PyTorch and Keras spell the same operations as below.
bool NamesConvOrMatmul(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const char* word :
       {"conv", "matmul", "linear", "gemm", "addmm", "dense"}) {
    if (text.find(word) != std::string::npos) return true;
  }
  return text == "mm" || text == "bmm";
}

}  // namespace

std::vector<NodeId> ConvAndMatmulOutputs(const Graph& graph,
                                         const CheckpointGraph& fwd) {
  std::vector<NodeId> kept;
  for (NodeId v : fwd.forward) {
    if (graph.kind(v) == NodeKind::kLoss) continue;
    const std::string& label =
        graph.op(v).empty() ? graph.node_name(v) : graph.op(v);
    if (NamesConvOrMatmul(label)) kept.push_back(v);
  }
  return kept;
}

}  // namespace remat
