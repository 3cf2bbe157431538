// vdnn — virtualized DNN memory: offload activations to host memory during
// the forward pass, prefetch them back during the backward.
//
// Rhu, Gimelshein, Clemons, Zulfiqar, Keckler, "vDNN: Virtualized Deep
// Neural Networks for Scalable, Memory-Efficient Neural Network Design",
// MICRO 2016. No value is recomputed: the plain (NoRemat) order runs, and
// each offloaded value leaves the device after its last forward read and
// comes back one compute ahead of its first backward read, so that both
// copies overlap compute (the link and compute rate are the harness's
// timing model). Which values move is the paper's policy:
//   policy=all   every forward value (vDNN_all);
//   policy=conv  the inputs of convolutions, whose long computes hide the
//                copies (vDNN_conv);
//   policy=dyn   the first of none, conv, all whose simulated peak fits
//                the budget (vDNN_dyn, without its per-layer choice of
//                convolution algorithms, which the graph does not model).
// Each moved value is offloaded over its longest unread stretch, which in
// a training graph is the gap between its forward and backward reads. As
// in vDNN, the compute stream waits for each offload before it goes on
// (wait=true), so that the layer's memory is free for the next; wait=false
// lets compute run on while the copies hold their memory.
#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "algorithms/offload/idle_spans.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

bool IsConvolution(const Graph& graph, NodeId v) {
  std::string op = graph.op(v);
  std::transform(op.begin(), op.end(), op.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return op.find("conv") != std::string::npos;
}

// Forward values, and with `conv_inputs_only` only those a forward
// convolution reads.
std::vector<uint8_t> Movable(const Graph& graph, bool conv_inputs_only) {
  std::vector<uint8_t> movable(graph.num_nodes(), 0);
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    if (graph.kind(v) != NodeKind::kForward) continue;
    if (!conv_inputs_only) {
      movable[v] = 1;
    } else if (IsConvolution(graph, v)) {
      for (NodeId u : graph.inputs(v)) {
        if (graph.kind(u) == NodeKind::kForward) movable[u] = 1;
      }
    }
  }
  return movable;
}

enum class Policy { kDyn, kAll, kConv };

struct VdnnOptions {
  Policy policy;
  int64_t lookahead;
  bool wait;
};

const Options<VdnnOptions> kOptions(
    ChoiceOption(
        &VdnnOptions::policy, "policy", Policy::kDyn,
        {{"dyn", Policy::kDyn}, {"all", Policy::kAll}, {"conv", Policy::kConv}},
        "values moved: all (every forward value), conv (inputs of "
        "convolutions), dyn (the first of none, conv, all that "
        "fits)"),
    LookaheadOption(&VdnnOptions::lookahead),
    BoolOption(&VdnnOptions::wait, "wait", true,
               "the compute stream waits for each offload (vDNN's "
               "synchronization) or runs on"));

class Vdnn : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const Schedule plain = InsertFrees(graph, NoRematOrder(graph));
    const VdnnOptions options = kOptions.Read(request.params);
    const Policy policy = options.policy;
    const int64_t lookahead = options.lookahead;
    const bool wait = options.wait;
    auto offloading = [&](bool conv_inputs_only) {
      const std::vector<uint8_t> movable = Movable(graph, conv_inputs_only);
      const std::vector<IdleSpan> spans = LongestIdleSpans(
          graph, plain, [&](NodeId v) { return movable[v] != 0; });
      return WithOffloads(plain, spans, lookahead, wait);
    };
    if (policy == Policy::kAll)
      return AlgorithmOutput::Found(offloading(false));
    if (policy == Policy::kConv)
      return AlgorithmOutput::Found(offloading(true));
    const std::pair<const char*, Schedule> tries[] = {
        {"policy none", plain}, {"policy conv", offloading(true)}};
    for (const auto& [name, schedule] : tries) {
      const SimulationResult sim =
          Simulate(graph, schedule, {.timing = &request.timing});
      if (sim.valid && sim.peak_bytes <= request.budget_bytes) {
        return AlgorithmOutput::Found(schedule, name);
      }
    }
    return AlgorithmOutput::Found(offloading(false), "policy all");
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "vdnn",
    .description = "vDNN: offload forward values to host memory after their "
                   "forward use, prefetch them one compute ahead of the "
                   "backward; no recomputation",
    .citation = "Rhu et al., vDNN: Virtualized Deep Neural Networks for "
                "Scalable, Memory-Efficient Neural Network Design, MICRO 2016",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<Vdnn>(); },
});

}  // namespace
}  // namespace remat
