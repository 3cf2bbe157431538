// chen_greedy — Chen et al.'s memory-budget planner.
//
// T. Chen, B. Xu, C. Zhang and C. Guestrin, "Training Deep Nets with
// Sublinear Memory Cost", arXiv:1604.06174, 2016, Algorithm 2 and the
// threshold search of their MXNet code (dmlc/mxnet-memonger, search_plan).
//
// Walk the forward values in topological order adding up their memory;
// when the running sum exceeds a threshold b and the current value is a
// candidate cut point, keep it as a checkpoint and restart the sum. Every
// other value is recomputed in the backward pass (segment_schedule.h).
// The threshold is searched as in the original code: start from b = 0
// (keep every candidate), then three times set b = sqrt(x * y / 2), where x
// is the memory of the kept values and y the largest segment of the previous
// plan; then try `trials` thresholds evenly spaced from the smallest segment
// seen to sqrt(2) times the last guess. Every plan is simulated; the
// cheapest that fits the budget is returned, else the one with the smallest
// peak.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/checkpointing/segment_schedule.h"
#include "algorithms/common/candidate_pool.h"
#include "model/memory_model.h"
#include "model/registry.h"

namespace remat {
namespace {

struct Plan {
  std::vector<NodeId> kept;
  int64_t kept_bytes = 0;       // x
  int64_t largest_segment = 0;  // y, counting the trailing segment
};

Plan GreedyPlan(const Graph& graph, const CheckpointGraph& fwd,
                const std::vector<uint8_t>& is_candidate, int64_t threshold) {
  Plan plan;
  int64_t running = 0;
  for (NodeId v : fwd.forward) {
    running += memory_model::ResidentBytes(graph, v);
    if (running > threshold && is_candidate[v]) {
      plan.kept.push_back(v);
      plan.kept_bytes += memory_model::ResidentBytes(graph, v);
      plan.largest_segment = std::max(plan.largest_segment, running);
      running = 0;
    }
  }
  plan.largest_segment = std::max(plan.largest_segment, running);
  return plan;
}

struct ChenGreedyOptions {
  CandidateSet candidates;
  int64_t threshold;
  int64_t trials;
  int64_t max_computes;
};

const Options<ChenGreedyOptions> kOptions(
    CandidatesOption(&ChenGreedyOptions::candidates),
    BytesOption(&ChenGreedyOptions::threshold, "threshold", 0,
                "use this one threshold b; 0: search it"),
    IntOption(&ChenGreedyOptions::trials, "trials", 6,
              "thresholds tried on the grid after the sqrt(x*y/2) "
              "iterations"),
    MaxComputesOption(&ChenGreedyOptions::max_computes));

class ChenGreedy : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const ChenGreedyOptions options = kOptions.Read(request.params);
    std::string why;
    std::optional<CheckpointGraph> fwd = PrepareCheckpointGraph(graph, why);
    if (!fwd) return AlgorithmOutput::NoSchedule(Status::kUnsupported, why);
    const std::vector<NodeId> candidates =
        SelectCandidates(graph, *fwd, options.candidates);
    std::vector<uint8_t> is_candidate(graph.num_nodes(), 0);
    for (NodeId v : candidates) is_candidate[v] = 1;
    const BuildLimits limits = LimitsOf(request, options.max_computes);
    CandidatePool best(graph, request.budget_bytes, {.invalid_is_bug = true});
    std::vector<std::vector<NodeId>> tried;
    std::optional<Status> stop;
    auto evaluate = [&](int64_t threshold) {
      Plan plan = GreedyPlan(graph, *fwd, is_candidate, threshold);
      if (stop ||
          std::find(tried.begin(), tried.end(), plan.kept) != tried.end()) {
        return plan;
      }
      const SegmentChain chain(graph, *fwd, plan.kept);
      BuildResult built = ChenSchedule(chain, limits);
      if (!built.schedule) {
        stop = built.status;
        return plan;
      }
      best.Offer(std::move(*built.schedule),
                 {{"threshold_bytes", threshold},
                  {"checkpoints", plan.kept.size()},
                  {"candidates", candidates.size()}});
      tried.push_back(plan.kept);
      return plan;
    };

    const int64_t fixed = options.threshold;
    if (fixed > 0) {
      evaluate(fixed);
    } else {
      int64_t threshold = 0;
      int64_t smallest_segment = std::numeric_limits<int64_t>::max();
      for (int i = 0; i < 3; ++i) {
        const Plan plan = evaluate(threshold);
        smallest_segment = std::min(smallest_segment, plan.largest_segment);
        threshold = static_cast<int64_t>(
            std::sqrt(static_cast<double>(plan.kept_bytes) *
                      static_cast<double>(plan.largest_segment) / 2));
      }
      const int64_t trials = options.trials;
      const double top = static_cast<double>(threshold) * std::sqrt(2.0);
      const auto step =
          static_cast<int64_t>((top - static_cast<double>(smallest_segment)) /
                               static_cast<double>(trials));
      for (int64_t t = 1; step > 0 && t <= trials; ++t) {
        evaluate(smallest_segment + t * step);
      }
    }
    if (best.empty()) {
      return AlgorithmOutput::NoSchedule(
          stop.value_or(Status::kError),
          stop == Status::kTooLarge
              ? fmt::format("schedule would exceed max_computes={}",
                            limits.max_computes)
              : "deadline reached before a plan was built");
    }
    std::string message;
    if (!best.fits()) {
      message = candidates.empty() &&
                        options.candidates == CandidateSet::kArticulation
                    ? "no articulation-point candidates (skip connections "
                      "everywhere): nothing can be checkpointed"
                    : fmt::format(
                          "no threshold tried fits the budget; the "
                          "smallest peak is {} bytes",
                          best.peak_bytes());
    }
    return best.Take(stop, message);
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "chen_greedy",
    .description = "Greedy segments by a memory threshold, the threshold "
                   "searched for the cheapest plan that fits the budget",
    .citation = "Chen et al., arXiv:1604.06174 (2016), Algorithm 2",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<ChenGreedy>(); },
});

}  // namespace
}  // namespace remat
