// revolve — binomial checkpointing.
//
// A. Griewank, "Achieving logarithmic growth of temporal and spatial
// complexity in reverse automatic differentiation", Optimization Methods and
// Software 1(1), 1992; A. Griewank and A. Walther, "Algorithm 799: revolve",
// ACM TOMS 26(1), 2000.
//
// Reversing a chain of l steps with s checkpoint slots (one of them holding
// the start) needs at least t(l, s) = r*l - C(s+r, r-1) forward steps, where
// r is the least integer with C(s+r, s) >= l; with s slots and r sweeps a
// chain of C(s+r, s) steps can be reversed. The classic recursive schedule
// reaches it: advance k steps, keep that state in a slot, reverse the rest
// with one slot fewer, free the slot, reverse the first k steps; k minimizes
// k + t(l-k, s-1) + t(k, s), a convex function of k found by bisection.
//
// Here the steps are the segments between articulation points of the
// forward graph (each forward value on a chain), the start is the graph's
// input (which costs no memory), and a backward node joins the step it can
// be run from (segment_schedule.h). On `chain:n=N` at budget B >= 3 this
// gives s = B - 2 slots over N + 1 steps and the optimal cost
// N + 1 + t(N + 1, B - 2). Given a budget, the largest slot count whose
// simulated peak fits is used: more slots never cost more.
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/checkpointing/segment_schedule.h"
#include "algorithms/common/candidate_pool.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

// t(l, s) for l >= 1, s >= 1.
int64_t MinAdvances(int64_t l, int64_t s) {
  if (l <= 1) return 0;
  __int128 beta = 1;  // C(s + r, s), exact at every r
  int64_t r = 0;
  while (beta < l) {
    ++r;
    beta = beta * (s + r) / r;
  }
  const __int128 sweeps_saved = beta * r / (s + 1);  // C(s + r, r - 1)
  return static_cast<int64_t>(static_cast<__int128>(r) * l - sweeps_saved);
}

int32_t BinomialSplit(int32_t length, int64_t slots) {
  if (slots <= 1) return 0;
  if (slots >= length) return 1;  // enough slots to keep every state
  auto advances = [&](int64_t k) {
    return k + MinAdvances(length - k, slots - 1) + MinAdvances(k, slots);
  };
  // The first k where the convex advances(k) stops decreasing.
  int32_t lo = 1, hi = length - 1;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (advances(mid + 1) >= advances(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

struct RevolveOptions {
  int64_t slots;
  int64_t max_computes;
};

const Options<RevolveOptions> kOptions(
    IntOption(&RevolveOptions::slots, "slots", 0,
              "checkpoint slots including the start; 0: the most that fit "
              "the budget"),
    MaxComputesOption(&RevolveOptions::max_computes));

class Revolve : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const RevolveOptions options = kOptions.Read(request.params);
    std::string why;
    std::optional<CheckpointGraph> fwd = PrepareCheckpointGraph(graph, why);
    if (!fwd) return AlgorithmOutput::NoSchedule(Status::kUnsupported, why);
    const SegmentChain chain(graph, *fwd, ArticulationCandidates(graph, *fwd));
    const int32_t steps = chain.num_steps();
    const BuildLimits limits = LimitsOf(request, options.max_computes);
    const int64_t budget = request.budget_bytes;
    CandidatePool best(graph, budget, {.invalid_is_bug = true});
    std::optional<Status> stop;  // of the last build that stopped
    int64_t largest_unbuilt = 0;
    int64_t last_peak = 0;
    // Builds with `slots` slots and says whether they fit. A build too
    // large to finish has few slots, so it counts as fitting: the search
    // then moves up.
    auto fits_at = [&](int64_t slots) {
      BuildResult built = NestedSchedule(chain, slots, BinomialSplit, limits);
      if (!built.schedule) {
        stop = built.status;
        largest_unbuilt = std::max(largest_unbuilt, slots);
        return true;
      }
      const bool fits = best.Offer(std::move(*built.schedule),
                                   {{"slots", slots},
                                    {"steps", steps},
                                    {"candidates", chain.num_checkpoints()}});
      last_peak = best.last().peak_bytes;
      return fits;
    };
    auto searching = [&] { return stop != Status::kTimeout; };

    const int64_t slots = options.slots;
    if (slots > 0 || budget == kUnboundedBudget) {
      fits_at(slots > 0 ? std::min<int64_t>(slots, steps) : steps);
    } else if (!fits_at(steps) && searching()) {
      // The largest slot count that fits. The peak grows with the slots,
      // about linearly (each holds one state): interpolate between the
      // memory lower bound and the peak with every slot, gallop from that
      // guess to a bracket, then bisect. On a uniform chain the guess is
      // right and three builds suffice.
      const int64_t floor_peak = MemoryLowerBound(graph);
      const auto guess = static_cast<int64_t>(
          1 +
          static_cast<long double>(std::max<int64_t>(budget - floor_peak, 0)) *
              (steps - 1) / std::max<int64_t>(last_peak - floor_peak, 1));
      int64_t lo = 0, hi = steps;  // lo fits (0: none does), hi does not
      const int64_t first = std::clamp<int64_t>(guess, 1, steps - 1);
      if (fits_at(first)) {
        lo = first;
        for (int64_t step = 1; lo + step < hi && searching(); step *= 2) {
          if (!fits_at(lo + step)) {
            hi = lo + step;
            break;
          }
          lo += step;
        }
      } else {
        hi = first;
        for (int64_t step = 1; hi - step > 0 && searching(); step *= 2) {
          if (fits_at(hi - step)) {
            lo = hi - step;
            break;
          }
          hi -= step;
        }
      }
      lo = BisectKnob(lo, hi, fits_at, searching).lo;
      if (lo > 0 && lo == largest_unbuilt && stop == Status::kTooLarge) {
        return AlgorithmOutput::NoSchedule(
            Status::kTooLarge,
            fmt::format("{} slots fit the budget but need more than "
                        "max_computes={} computes",
                        lo, limits.max_computes));
      }
    }
    if (best.empty()) {
      return AlgorithmOutput::NoSchedule(
          stop.value_or(Status::kTooLarge),
          stop == Status::kTimeout
              ? "deadline reached before a schedule was built"
              : fmt::format("the slot count the budget allows needs more "
                            "than max_computes={} computes",
                            limits.max_computes));
    }
    std::string message;
    if (!best.fits() && chain.num_checkpoints() == 0) {
      message =
          "no articulation-point candidates (skip connections "
          "everywhere): nothing can be checkpointed";
    } else if (!best.fits()) {
      message = fmt::format(
          "no slot count fits the budget; the smallest peak found is {} "
          "bytes ({} slots)",
          best.peak_bytes(), best.note()["slots"].get<int64_t>());
    }
    return best.Take(stop, message);
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "revolve",
    .description = "Binomial checkpointing over the chain of articulation "
                   "points; the largest slot count that fits the budget",
    .citation = "Griewank & Walther, ACM TOMS 2000 (Algorithm 799: revolve)",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<Revolve>(); },
});

}  // namespace
}  // namespace remat
