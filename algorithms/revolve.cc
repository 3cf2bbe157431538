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

#include "algorithms/segment_schedule.h"
#include "harness/registry.h"

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

class Revolve : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph, const SolveRequest& request) override {
    std::string why;
    std::optional<ForwardGraph> fwd = PrepareForwardGraph(graph, why);
    if (!fwd) return AlgorithmOutput::NoSchedule(Status::kUnsupported, why);
    const SegmentChain chain(graph, *fwd, ArticulationCandidates(graph, *fwd));
    const int32_t steps = chain.num_steps();
    const BuildLimits limits = LimitsOf(request);
    BestSchedule best(graph, request.budget_bytes);
    std::optional<Status> stop;  // of the last build that stopped
    // Builds with `slots` slots; false if the build was stopped.
    auto attempt = [&](int64_t slots, bool& fits) {
      BuildResult built = NestedSchedule(chain, slots, BinomialSplit, limits);
      if (!built.schedule) {
        stop = built.status;
        return false;
      }
      fits = best.Offer(std::move(*built.schedule),
                        {{"slots", slots},
                         {"steps", steps},
                         {"candidates", chain.num_checkpoints()}});
      return true;
    };

    int64_t slots = request.params.Int("slots");
    bool fits = false;
    if (slots > 0 || request.budget_bytes == kUnboundedBudget) {
      attempt(slots > 0 ? std::min<int64_t>(slots, steps) : steps, fits);
    } else if (!attempt(steps, fits) || !fits) {
      // Largest slot count that fits, by bisection: the peak grows with
      // the slots. A build too large to finish has few slots, so it counts
      // as fitting and the search moves up. If nothing fits, one slot (the
      // smallest peak) was the last one tried.
      int64_t lo = 0, hi = steps;  // lo fits (0: none tried), hi does not
      bool lo_built = false;
      while (hi - lo > 1 && stop != Status::kTimeout) {
        const int64_t mid = lo + (hi - lo) / 2;
        const bool built = attempt(mid, fits);
        if (!built || fits) {
          lo = mid;
          lo_built = built;
        } else {
          hi = mid;
        }
      }
      if (lo > 0 && !lo_built && stop == Status::kTooLarge) {
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
      message = "no articulation-point candidates (skip connections "
                "everywhere): nothing can be checkpointed";
    } else if (!best.fits()) {
      message = fmt::format("even one slot peaks at {} bytes, over the budget",
                            best.peak_bytes());
    }
    return best.Take(stop == Status::kTimeout ? Status::kTimeout
                                              : Status::kFeasible,
                     message);
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "revolve",
    .description = "Binomial checkpointing over the chain of articulation "
                   "points; the largest slot count that fits the budget",
    .citation = "Griewank & Walther, ACM TOMS 2000 (Algorithm 799: revolve)",
    .exact = false,
    .uses_budget = true,
    .params = {{.name = "slots",
                .type = ParamSpec::Type::kInt,
                .default_value = "0",
                .description = "checkpoint slots including the start; 0: the "
                               "most that fit the budget"},
               MaxComputesParam()},
    .create = [] { return std::make_unique<Revolve>(); },
});

}  // namespace
}  // namespace remat
