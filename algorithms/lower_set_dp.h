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

// One Pareto-optimal way to reach a lower set: extra (recomputation) time,
// kept memory, and the point it extends (for the back-pointer walk).
struct ParetoPoint {
  int64_t time = 0;
  int64_t kept = 0;
  int32_t from_set = -1;
  int32_t from_point = -1;
};

struct DpOutcome {
  // kFeasible when the DP ran to the end (the front of G may still be
  // empty), else kTimeout or kTooLarge with `message`.
  Status status = Status::kFeasible;
  std::string message;
  // Per set, sorted by time ascending (so kept strictly descending).
  std::vector<std::vector<ParetoPoint>> fronts;
  int64_t transitions = 0;  // (source, target) pairs that fit the budget
  int64_t max_points = 0;   // largest number of live Pareto points
};

// Runs the DP at `budget`. `max_points` caps the Pareto points held at
// once (too_large beyond it).
DpOutcome RunLowerSetDp(const LowerSetFamily& family, int64_t budget,
                        int64_t max_points, const Deadline& deadline);

// The chain ∅ = L0 ⊂ ... ⊂ Lk = G (set indices) that ends at point
// `point` of G's front.
std::vector<int32_t> StrategyChain(const DpOutcome& dp,
                                   const LowerSetFamily& family,
                                   int32_t point);

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
