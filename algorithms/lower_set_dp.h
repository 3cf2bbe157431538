// The dynamic program of Kusumoto et al. 2019 over a family of lower sets,
// the strategy it picks, and that strategy's canonical schedule
// (ALGORITHMS.md, "Kusumoto et al. 2019"). dp_exact and dp_approx differ
// only in the family.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/lower_sets.h"
#include "harness/algorithm.h"
#include "harness/graph.h"

namespace remat {

// One way to reach a lower set: extra (recomputation) time, kept memory,
// and the point it extends (for the back-pointer walk).
struct ParetoPoint {
  int64_t time = 0;
  int64_t kept = 0;
  int32_t from_set = -1;
  int32_t from_point = -1;
};

// The DP at one budget, in three passes over the transitions L -> L'
// (allowed when kept + 2 M(L' \ L) + M(A(L')) + M(B(L')) <= budget):
//  1. one label per set, the least kept memory (ties: least time). Kept
//     memory only ever hurts later transitions, so this label is optimal
//     on its own: at G it is the memory-centric answer (the largest-time
//     end of G's Pareto front), and if it does not reach G nothing does.
//  2. Pareto fronts of (time, kept) cut to a few points each (a beam):
//     a strategy whose time is an upper bound UB on the least time.
//  3. exact Pareto fronts holding only points with time <= UB (time only
//     grows along a strategy). At generous budgets the full fronts hold
//     one point per time value (thousands on ResNet-152); with the bound
//     they hold a handful, which is what makes the DP fast.
struct DpOutcome {
  // kFeasible when the DP ran to the end (G may still be unreachable),
  // else kTimeout or kTooLarge with `message`.
  Status status = Status::kFeasible;
  std::string message;
  // Pass 3, per set, sorted by time ascending (kept strictly descending).
  std::vector<std::vector<ParetoPoint>> fronts;
  // Pass 1, per set (from_set < 0 and kept = max when unreached).
  std::vector<ParetoPoint> least_kept;
  int64_t transitions = 0;  // allowed (source, target) pairs of pass 1
  int64_t max_points = 0;   // most Pareto points held at once
  bool reached() const { return !fronts.empty() && !fronts.back().empty(); }
};

// Runs the DP at `budget`. `max_points` caps the Pareto points held at
// once (too_large beyond it).
DpOutcome RunLowerSetDp(const LowerSetFamily& family, int64_t budget,
                        int64_t max_points, const Deadline& deadline);

// The chains ∅ = L0 ⊂ ... ⊂ Lk = G (set indices) of the time-centric
// answer (least extra time) and of the memory-centric one (least kept
// memory). Only when dp.reached().
std::vector<int32_t> TimeCentricChain(const DpOutcome& dp,
                                      const LowerSetFamily& family);
std::vector<int32_t> MemoryCentricChain(const DpOutcome& dp,
                                        const LowerSetFamily& family);

// The DP's memory estimate of a strategy:
// max_i [ sum_{j<i} M(Uj) + 2 M(Vi) + M(A(Li)) + M(B(Li)) ].
int64_t EstimatedPeak(const LowerSetFamily& family,
                      std::span<const int32_t> chain);

// The computes of the strategy's canonical schedule on the whole training
// graph (frees come from the shared liveness pass).
std::vector<NodeId> CanonicalComputes(const ForwardGraph& g,
                                      const LowerSetFamily& family,
                                      std::span<const int32_t> chain,
                                      const Graph& graph);

// The whole solve shared by dp_exact and dp_approx: lower sets from the
// cache, the DP at the request's budget, the time-centric or
// memory-centric answer (param `strategy`), the canonical schedule.
AlgorithmOutput SolveLowerSetDp(const Graph& graph, const SolveRequest& request,
                                LowerSetKind kind);

}  // namespace remat
