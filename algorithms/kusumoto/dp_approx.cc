// dp_approx — Kusumoto et al., "A Graph Theoretic Framework of Recomputation
// Algorithms for Memory-Efficient Backpropagation", NeurIPS 2019: the
// approximate dynamic program.
//
// The same DP as dp_exact (see there and lower_set_dp.h), restricted to the
// n + 1 lower sets ∅ and {v} ∪ ancestors(v) for each forward value v (plus
// the whole forward graph when no single value has every other as an
// ancestor). On a chain these are all the lower sets and the two agree; on
// a graph with parallel branches, a cut through the middle of several
// branches is not available, so the answer can only be the same or worse.
// The DP is quadratic in n at worst, so it needs no size guard.
#include "algorithms/kusumoto/lower_set_dp.h"
#include "model/registry.h"

namespace remat {
namespace {

const bool kRegistered = RegisterAlgorithm({
    .name = "dp_approx",
    .description = "Dynamic program over the ancestor closures of the forward "
                   "graph (n + 1 lower sets)",
    .citation = "Kusumoto et al., NeurIPS 2019",
    .exact = false,
    .uses_budget = true,
    .params = DpOptionsOf(LowerSetKind::kAncestorClosures).Specs(),
    .create =
        [] {
          return std::make_unique<LowerSetDp>(LowerSetKind::kAncestorClosures);
        },
});

}  // namespace
}  // namespace remat
