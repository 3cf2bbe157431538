// chen_sqrtn — sqrt(n) checkpointing.
//
// T. Chen, B. Xu, C. Zhang and C. Guestrin, "Training Deep Nets with
// Sublinear Memory Cost", arXiv:1604.06174, 2016; and the TensorFlow
// gradient-checkpointing library of T. Salimans and Y. Bulatov
// (github.com/cybertronai/gradient-checkpointing), 2018.
//
// Split the forward graph into segments at k candidate cut points, keep only
// the segment boundaries during the forward pass, and in the backward pass
// recompute one segment at a time from the boundary before it: one extra
// forward pass buys memory O(k + n/k), least at k ~ sqrt(n). With the
// candidates in topological order and s = floor(sqrt(#candidates)), the
// candidates at positions s, 2s, 3s, ... (1-based) are kept.
//   candidates=ap   articulation points of the forward graph (Chen's cut
//                   points; the library's "memory" mode); few on graphs with
//                   long skip connections, which is where the method is weak;
//   candidates=all  every forward value (a boundary that is not an
//                   articulation point makes its stage recompute further back);
//   select=speed    the library's "speed" mode: keep every convolution and
//                   matrix-product output instead (no sqrt thinning), and
//                   recompute each dropped value at most once, keeping it
//                   until no later stage needs it, as MXNet's mirror (Chen et
//                   al.'s own implementation) does. Dropping it after each
//                   stage instead would recompute, for every stage, the
//                   whole chain of cheap values a skip connection reaches
//                   back through (12 times per value on ResNet-56).
#include <fmt/format.h>

#include <cmath>

#include "algorithms/checkpointing/segment_schedule.h"
#include "model/registry.h"

namespace remat {
namespace {

std::vector<NodeId> EverySqrtTh(const std::vector<NodeId>& candidates) {
  const auto k = static_cast<int64_t>(candidates.size());
  auto s = static_cast<int64_t>(std::sqrt(static_cast<double>(k)));
  while (s * s > k) --s;  // floor(sqrt(k)) despite rounding
  while ((s + 1) * (s + 1) <= k) ++s;
  std::vector<NodeId> kept;
  for (int64_t p = s; s > 0 && p <= k; p += s)
    kept.push_back(candidates[p - 1]);
  return kept;
}

enum class Select { kMemory, kSpeed };

struct ChenSqrtNOptions {
  CandidateSet candidates;
  Select select;
  int64_t max_computes;
};

const Options<ChenSqrtNOptions> kOptions(
    CandidatesOption(&ChenSqrtNOptions::candidates),
    ChoiceOption(&ChenSqrtNOptions::select, "select", Select::kMemory,
                 {{"memory", Select::kMemory}, {"speed", Select::kSpeed}},
                 "memory: sqrt thinning of the candidates; speed: keep "
                 "every convolution / matrix product output"),
    MaxComputesOption(&ChenSqrtNOptions::max_computes));

class ChenSqrtN : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const ChenSqrtNOptions options = kOptions.Read(request.params);
    std::string why;
    std::optional<CheckpointGraph> fwd = PrepareCheckpointGraph(graph, why);
    if (!fwd) return AlgorithmOutput::NoSchedule(Status::kUnsupported, why);
    const bool speed = options.select == Select::kSpeed;
    std::vector<NodeId> candidates;
    std::vector<NodeId> kept;
    std::string message;
    if (speed) {
      kept = ConvAndMatmulOutputs(graph, *fwd);
      if (kept.empty()) {
        message =
            "select=speed: no forward op is a convolution or matrix "
            "product, so nothing is checkpointed and every forward "
            "value is kept";
      }
    } else {
      candidates = SelectCandidates(graph, *fwd, options.candidates);
      kept = EverySqrtTh(candidates);
      if (kept.empty()) {
        message = options.candidates == CandidateSet::kArticulation
                      ? "no articulation-point candidates (skip connections "
                        "everywhere): nothing can be checkpointed, every "
                        "forward value is kept"
                      : "no forward values to checkpoint";
      }
    }
    const SegmentChain chain(graph, *fwd, kept);
    BuildResult built =
        ChenSchedule(chain, LimitsOf(request, options.max_computes), speed);
    if (!built.schedule) {
      return AlgorithmOutput::NoSchedule(built.status, built.message);
    }
    AlgorithmOutput output =
        AlgorithmOutput::Found(std::move(*built.schedule), message);
    output.extra = {{"checkpoints", kept.size()}};
    if (!speed) output.extra["candidates"] = candidates.size();
    return output;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "chen_sqrtn",
    .description = "Keep every floor(sqrt(k))-th of k cut-point candidates; "
                   "recompute each segment once in the backward pass",
    .citation = "Chen et al., arXiv:1604.06174 (2016); Salimans & Bulatov, "
                "gradient-checkpointing (2018)",
    .exact = false,
    .uses_budget = false,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<ChenSqrtN>(); },
});

}  // namespace
}  // namespace remat
