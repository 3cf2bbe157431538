// Where a segment of the forward graph may end (docs/algorithms.md,
// "Shared building blocks" and "Chen et al. 2016"): the forward values that
// Chen's methods, the TensorFlow gradient-checkpointing selections and
// revolve may keep as checkpoints.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/common/forward_backward.h"
#include "model/graph.h"
#include "model/options.h"

namespace remat {

// What every segment-based algorithm needs of a training graph: the
// forward / backward split, the needed nodes, and the needed forward values
// (topological order).
struct CheckpointGraph {
  ForwardBackward split;
  std::vector<uint8_t> needed;  // per node, NeededNodes()
  std::vector<NodeId> forward;  // needed forward values, topological order
};

// Nullopt with `why` when the graph has no usable forward / backward split,
// or when a needed forward value reads a non-forward node: segments are cut
// in the forward graph alone, so it must be closed under inputs.
std::optional<CheckpointGraph> PrepareCheckpointGraph(const Graph& graph,
                                                      std::string& why);

// The articulation points of the forward graph in its topological order
// (the order segments follow, segment_schedule.h): the forward values x
// such that no forward value before x is read by one after it, so the
// segments between consecutive ones meet only at them. On a chain every
// value is one. An input-less value (a constant such as an attention mask
// made inside each block) or a value only the backward reads (a
// normalization's saved statistics) does not stand in the way unless it
// is read across x; a skip connection does. Loss nodes are left out:
// nothing follows them, so keeping one saves nothing. Topological order.
std::vector<NodeId> ArticulationCandidates(const Graph& graph,
                                           const CheckpointGraph& fwd);

// Every needed forward value except the loss, topological order.
std::vector<NodeId> AllCandidates(const Graph& graph,
                                  const CheckpointGraph& fwd);

// The `candidates=ap|all` option shared by the Chen algorithms.
enum class CandidateSet { kArticulation, kAll };
template <typename T>
OptionField<T> CandidatesOption(CandidateSet T::*member) {
  return ChoiceOption(
      member, "candidates", CandidateSet::kArticulation,
      {{"ap", CandidateSet::kArticulation}, {"all", CandidateSet::kAll}},
      "where segments may end: ap (articulation points of "
      "the forward graph) or all (every forward value)");
}
std::vector<NodeId> SelectCandidates(const Graph& graph,
                                     const CheckpointGraph& fwd,
                                     CandidateSet set);

// The "speed" selection of the TensorFlow gradient-checkpointing library:
// every forward value whose op (or, when the op is empty, name) names a
// convolution or a matrix product. Topological order.
std::vector<NodeId> ConvAndMatmulOutputs(const Graph& graph,
                                         const CheckpointGraph& fwd);

}  // namespace remat
