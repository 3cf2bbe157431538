// The checkpoint candidates of Chen et al.'s methods, revolve and rotor:
// the articulation points of the forward graph's topological order (the
// values no read skips over) or every forward value.
#include "algorithms/checkpointing/checkpoint_candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "model/simulator.h"

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
  // A segment is the run of forward values between two checkpoints in
  // topological order (segment_schedule.h), so x is a place to cut exactly
  // when no forward value before x is read by one after it: every value
  // that crosses the cut is x itself. One sweep with the furthest position
  // read so far.
  const auto f = static_cast<int32_t>(fwd.forward.size());
  std::vector<int32_t> position(graph.num_nodes(), -1);
  for (int32_t i = 0; i < f; ++i) position[fwd.forward[i]] = i;
  std::vector<NodeId> candidates;
  int32_t reach = 0;  // the furthest position a value before i is read at
  for (int32_t i = 0; i < f; ++i) {
    const NodeId v = fwd.forward[i];
    if (reach <= i && graph.kind(v) != NodeKind::kLoss && i + 1 < f) {
      candidates.push_back(v);
    }
    for (NodeId w : graph.consumers(v)) {
      reach = std::max(reach, position[w]);
    }
  }
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
