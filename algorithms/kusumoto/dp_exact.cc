// dp_exact — Kusumoto et al., "A Graph Theoretic Framework of Recomputation
// Algorithms for Memory-Efficient Backpropagation", NeurIPS 2019: the exact
// dynamic program over all lower sets of the forward graph.
//
// A strategy cuts the forward graph into segments along a chain of lower
// sets ∅ = L0 ⊂ L1 ⊂ ... ⊂ Lk = G; only each segment's boundary values
// (those read by later segments) are kept through the forward pass, and
// the backward pass recomputes one segment at a time from them. The DP
// walks every lower set, subsets first, holding per set the Pareto front of
// (extra time, kept memory); a segment is allowed when the kept memory plus
// 2 M(segment) + M(A(L')) + M(B(L')) fits the budget. This is optimal over
// all such strategies for the paper's memory estimate (not a proven optimum
// of the harness's model: the liveness pass and the simulator decide the
// reported figures), so it is not registered as exact.
//
// The number of lower sets can grow exponentially with the graph's width
// (GoogLeNet: 27,358), hence `max_lower_sets` and `max_states`. The shared
// machinery is in lower_sets.h (the families, made once per graph as the
// algorithm's preparation) and lower_set_dp.h (the DP and the canonical
// schedule).
#include "algorithms/kusumoto/lower_set_dp.h"
#include "model/registry.h"

namespace remat {
namespace {

const bool kRegistered = RegisterAlgorithm({
    .name = "dp_exact",
    .description = "Dynamic program over all lower sets of the forward graph "
                   "(segments recomputed in the backward pass)",
    .citation = "Kusumoto et al., NeurIPS 2019",
    .exact = false,
    .uses_budget = true,
    .params = DpOptionsOf(LowerSetKind::kAll).Specs(),
    .create = [] { return std::make_unique<LowerSetDp>(LowerSetKind::kAll); },
});

}  // namespace
}  // namespace remat
