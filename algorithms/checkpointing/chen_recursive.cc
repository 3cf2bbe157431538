// chen_recursive — recursive checkpointing, O(log n) memory.
//
// T. Chen, B. Xu, C. Zhang and C. Guestrin, "Training Deep Nets with
// Sublinear Memory Cost", arXiv:1604.06174, 2016, section 4.3 ("Recursion
// and subroutine").
//
// Treat a segment as one bulk operator and apply the segmenting again
// inside it: with one kept boundary per level, the memory to reverse n
// steps is g(n) = 1 + g(n/2) = O(log n) and every level of the recursion
// recomputes about half of the chain, O(n log n) extra forward compute.
// Concretely: to reverse steps i+1..l from state i, advance floor((l-i)/2)
// steps, keep that state, reverse the second half, drop it, reverse the
// first half. The steps are the segments between articulation points of the
// forward graph (each forward value on a chain); the schedule does not
// depend on the budget.
#include <fmt/format.h>

#include "algorithms/checkpointing/segment_schedule.h"
#include "model/registry.h"

namespace remat {
namespace {

struct ChenRecursiveOptions {
  int64_t max_computes;
};

const Options<ChenRecursiveOptions> kOptions(
    MaxComputesOption(&ChenRecursiveOptions::max_computes));

class ChenRecursive : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    std::string why;
    std::optional<CheckpointGraph> fwd = PrepareCheckpointGraph(graph, why);
    if (!fwd) return AlgorithmOutput::NoSchedule(Status::kUnsupported, why);
    const SegmentChain chain(graph, *fwd, ArticulationCandidates(graph, *fwd));
    // Slots are never the limit: the nesting depth is.
    BuildResult built = NestedSchedule(
        chain, chain.num_steps(),
        [](int32_t length, int64_t) { return length / 2; },
        LimitsOf(request, kOptions.Read(request.params).max_computes));
    if (!built.schedule) {
      return AlgorithmOutput::NoSchedule(built.status, built.message);
    }
    AlgorithmOutput output = AlgorithmOutput::Found(
        std::move(*built.schedule),
        chain.num_checkpoints() == 0
            ? "no articulation-point candidates (skip connections "
              "everywhere): nothing can be checkpointed, every forward "
              "value is kept"
            : "");
    output.extra = {{"steps", chain.num_steps()}};
    return output;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "chen_recursive",
    .description = "Recursive bisection of the chain of articulation "
                   "points: O(log n) memory, O(n log n) recomputation",
    .citation = "Chen et al., arXiv:1604.06174 (2016), section 4.3",
    .exact = false,
    .uses_budget = false,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<ChenRecursive>(); },
});

}  // namespace
}  // namespace remat
