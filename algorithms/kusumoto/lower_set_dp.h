// The dynamic program of Kusumoto et al. 2019 over a family of lower sets,
// the strategy it picks, and that strategy's canonical schedule
// (docs/algorithms.md, "Kusumoto et al. 2019"). dp_exact and dp_approx
// differ only in the family.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "algorithms/kusumoto/lower_sets.h"
#include "model/algorithm.h"
#include "model/graph.h"
#include "model/options.h"

namespace remat {

// One way to reach a lower set: extra (recomputation) time, kept memory,
// and the point it extends (for the back-pointer walk).
struct ParetoPoint {
  int64_t time = 0;
  int64_t kept = 0;
  int32_t from_set = -1;
  int32_t from_point = -1;
};

// The DP at one budget. A transition L -> L' is allowed when kept +
// 2 M(L' \ L) + M(A(L')) + M(B(L')) <= budget; it adds T(L' \ L) - T(U)
// extra time and keeps U = ∂L' \ L. Three passes over the transitions,
// each walking the supersets of a set (LowerSetFamily::ForEachSuperset):
//  0. backward, one label per set: the most kept memory from which G can
//     still be reached. G is reachable at all iff ∅'s label is >= 0, and
//     the other passes drop every point above their set's label (most
//     points a plain forward DP holds are such dead ends).
//  1. (time-centric) Pareto fronts of (time, kept) holding only points
//     with time <= a bound, for growing bounds until one reaches G: that
//     pass is exact, and the fronts stay short (at most one point per time
//     value up to the bound, where a full front holds thousands).
//  2. (memory-centric) one label per set, the least kept memory (ties:
//     least time). Kept memory only ever hurts later transitions, so this
//     label is optimal on its own: at G it is the memory-centric answer
//     (the largest-time end of G's Pareto front).
struct DpOutcome {
  // kFeasible unless the deadline or a size cap stopped a pass (kTimeout,
  // kTooLarge), with `message`.
  Status status = Status::kFeasible;
  std::string message;
  // Pass 0, per set (-1 when G cannot be reached from it).
  std::vector<int64_t> most_kept;
  // Pass 1: per set, a lower bound on the extra time to G (kInt64Max when
  // G is out of reach), and the fronts, sorted by time ascending (kept
  // strictly descending).
  std::vector<int64_t> least_rest;
  std::vector<std::vector<ParetoPoint>> fronts;
  // Pass 2, per set (from_set < 0 and kept = max when unreached).
  std::vector<ParetoPoint> least_kept;
  int64_t transitions = 0;  // (source, target) pairs of pass 1's last bound
  int64_t max_points = 0;   // most Pareto points held at once in pass 1
  bool reachable() const { return !most_kept.empty() && most_kept[0] >= 0; }
  bool reached() const { return !fronts.empty() && !fronts.back().empty(); }
};

// Pass 0 at `budget`; check status, then reachable().
DpOutcome StartLowerSetDp(const LowerSetFamily& family, int64_t budget,
                          const Deadline& deadline);
// Pass 1 (fills dp.fronts) and pass 2 (dp.least_kept), only when
// dp.reachable(). False when stopped, with dp.status and dp.message set.
// `max_points` caps the Pareto points held at once (too_large beyond it).
// A pass of growing bound may always spend `min_pass_work` (transitions
// plus merged pairs) before it is abandoned for a smaller step.
bool FindLeastTime(const LowerSetFamily& family, int64_t budget,
                   int64_t max_points, const Deadline& deadline, DpOutcome& dp,
                   int64_t min_pass_work = int64_t{1} << 20);
bool FindLeastKept(const LowerSetFamily& family, int64_t budget,
                   const Deadline& deadline, DpOutcome& dp);

// The chains ∅ = L0 ⊂ ... ⊂ Lk = G (set indices) of the time-centric
// answer (least extra time, after FindLeastTime) and of the memory-centric
// one (least kept memory, after FindLeastKept).
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
std::vector<NodeId> CanonicalComputes(const LowerSetGraph& g,
                                      const LowerSetFamily& family,
                                      std::span<const int32_t> chain,
                                      const Graph& graph);

// A lower bound on the simulated peak of the canonical schedule of every
// chain of a family, as a test at one budget: `auto` ends its search with
// it where no chain can fit, which would otherwise take every DP run the
// search has to answer infeasible. It looks at the moments when each
// segment's backward nodes are computed (lower_set_dp.cc, above
// CanonicalPeakBound's constructor).
class CanonicalPeakBound {
 public:
  CanonicalPeakBound(const LowerSetGraph& g, const LowerSetFamily& family,
                     const Graph& graph);
  // False only when no chain's canonical schedule peaks within `budget`;
  // true when one may, or when the deadline stopped the test.
  bool MayFit(int64_t budget, const Deadline& deadline) const;

 private:
  // One segment s -> t: `cap`, the most `later` kept memory its moment
  // leaves room for (-1: none), and `grows`, a part of its moment that
  // only grows with t (bytes).
  struct Moment {
    int64_t cap = std::numeric_limits<int64_t>::max();
    int64_t grows = 0;
  };
  Moment At(int32_t s, int32_t t, int64_t budget) const;
  // The kept memory the segment adds that a backward node of t reads,
  // live at every later segment's moment.
  int64_t Kept(int32_t s, int32_t t) const;
  const uint64_t* read(int32_t s) const {
    return read_.data() + static_cast<size_t>(s) * f_.words();
  }

  const LowerSetFamily& f_;
  // Per set: the forward values read by the backward nodes of its nodes (a
  // bitset of the family's words), how many backward nodes those are, the
  // gradients computed outside the set and read inside it, and its
  // boundary values read inside it (bytes).
  std::vector<uint64_t> read_;
  std::vector<int32_t> backward_count_;
  std::vector<int64_t> gradients_in_, held_;
  // Per forward node (CSR), its backward nodes: compute bytes plus inputs
  // other than forward values, and the forward values read by the node and
  // the backward nodes after it in the graph (bitsets).
  std::vector<int32_t> step_offsets_;
  std::vector<int64_t> step_bytes_;
  std::vector<uint64_t> step_reads_;
};

// The options of dp_exact and dp_approx.
enum class DpStrategy { kAuto, kTime, kMemory };
struct DpOptions {
  DpStrategy strategy;
  int64_t max_lower_sets;  // dp_exact's; dp_approx's family is n + 1 sets
  int64_t max_states;
};
// dp_exact's options (kind kAll: strategy, max_lower_sets, max_states) or
// dp_approx's (strategy, max_states).
const Options<DpOptions>& DpOptionsOf(LowerSetKind kind);

// dp_exact and dp_approx: the lower sets of `kind` are the per-graph
// preparation; each solve runs the DP at its budget, takes the time-centric
// or memory-centric answer (param `strategy`) and its canonical schedule.
class LowerSetDp : public PreparedAlgorithm<LowerSetLookup> {
 public:
  explicit LowerSetDp(LowerSetKind kind) : kind_(kind) {}

 private:
  std::shared_ptr<const LowerSetLookup> PrepareGraph(
      const Graph& graph, const SolveRequest& request) override;
  AlgorithmOutput RunPrepared(const Graph& graph, const SolveRequest& request,
                              const LowerSetLookup* lookup) override;

  LowerSetKind kind_;
};

}  // namespace remat
