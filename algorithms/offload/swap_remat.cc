// swap_remat — recomputation and offloading together: each value that must
// leave the device is offloaded where its copies hide under compute and
// recomputed where that is cheaper, within the budget.
//
// After Peng et al., "Capuchin: Tensor-based GPU Memory Management for
// Deep Learning", ASPLOS 2020, which chooses per tensor between swapping
// and recomputation by comparing the swap's stall with the recomputation's
// cost. Here the choice is a search over how the saving is split: a
// remat-only schedule planned for an internal budget B' between the budget
// B and the NoRemat peak (so recomputation saves all but B' - B of what is
// needed) has its values' longest unread stretches offloaded, those whose
// copies hide under the compute of the stretch first and then the largest,
// as few as bring the simulated peak within B (found by bisection on that
// order), once with compute running on during the copies and once waiting
// for each (vDNN's synchronization, which frees the memory sooner at the
// price of stalls). B' = B is recomputation alone, B' = the NoRemat peak
// offloading alone; vDNN's schedules (policies conv and all, waiting or
// not) are candidates too.
// Every candidate is simulated with the harness's timing model and offered
// to the candidate pool (candidate_pool.h) by makespan: the one with the
// least makespan within B wins, so swap_remat is never slower than vdnn or
// than its remat algorithms at B.
// Unlike Capuchin it plans offline from the graph's costs, not from a
// profiled first iteration, and it recomputes whole schedules of a remat
// algorithm rather than single tensors.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "algorithms/common/candidate_pool.h"
#include "algorithms/offload/idle_spans.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

struct SwapRematOptions {
  std::vector<std::string> remat;
  int levels;
  int64_t lookahead;
};

const Options<SwapRematOptions> kOptions(
    ListOption(&SwapRematOptions::remat,
               {.name = "remat",
                .type = ParamSpec::Type::kList,
                .default_value = "checkpoint_last+chen_greedy+chen_sqrtn+"
                                 "dp_approx+dtr+revolve+rotor+twremat",
                .description = "remat-only algorithms planned at the "
                               "internal budgets, '+'-separated",
                .check_item = [](const std::string& name) -> std::string {
                  for (const AlgorithmInfo* info : AllAlgorithms()) {
                    if (info->name == name) {
                      return name == "swap_remat" ? "cannot use itself"
                                                  : std::string();
                    }
                  }
                  return "not a registered algorithm (remat list)";
                }}),
    IntOption(&SwapRematOptions::levels, "levels", 6,
              "internal budgets from the budget to the NoRemat peak", 1),
    LookaheadOption(&SwapRematOptions::lookahead));

class SwapRemat : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    graph_ = &graph;
    request_ = &request;
    options_ = kOptions.Read(request.params);
    pool_.emplace(graph, request.budget_bytes,
                  CandidatePoolOptions{
                      .objective = CandidatePoolOptions::Objective::kMakespan,
                      .timing = &request.timing});
    const int64_t budget = request.budget_bytes;
    const int64_t top = NoRematPeak(graph);
    const Schedule plain = InsertFrees(graph, NoRematOrder(graph));
    WithOffloadsWithin(plain, "noremat");
    for (const char* policy : {"policy=conv", "policy=all"}) {
      for (const char* wait : {"wait=true", "wait=false"}) {
        RunBase("vdnn", {policy, wait}, kUnboundedBudget,
                /*add_offloads=*/false);
      }
    }
    if (budget < top) {
      const std::vector<int64_t> internal =
          BudgetGrid(budget, top, options_.levels);
      for (int64_t inner : internal) {
        if (inner >= top) continue;  // NoRemat, done above
        for (const std::string& name : options_.remat) {
          RunBase(name, {}, inner, /*add_offloads=*/true);
        }
      }
    }
    CandidatePool::Candidate answer = pool_->TakeBest();
    AlgorithmOutput out = AlgorithmOutput::Found(
        std::move(answer.schedule), answer.note.get<std::string>());
    if (request.deadline.Expired()) out.status = Status::kTimeout;
    return out;
  }

  // Runs algorithm `name` with `params` at `inner` bytes and considers its
  // schedule, with offloads added when `add_offloads`.
  void RunBase(const std::string& name, const std::vector<std::string>& params,
               int64_t inner, bool add_offloads) {
    const double seconds = request_->deadline.SecondsLeft();
    if (seconds < 1e-3) return;
    const SubSolution solved =
        SubSolverOf(*request_).Solve(*graph_, name, params, inner,
                                     std::min(seconds, 1e9), &request_->timing);
    if (!solved.simulation || !solved.simulation->valid) return;
    const std::string label =
        inner == kUnboundedBudget
            ? fmt::format("{}:{}", name, fmt::join(params, ","))
            : fmt::format("{} at {} bytes", name, inner);
    if (add_offloads) {
      WithOffloadsWithin(*solved.output.schedule, label);
    } else {
      pool_->Offer(*solved.output.schedule, label);
    }
  }

  // Offers `base` and, with and without waiting for each offload,
  // `base` with the fewest of its idle spans offloaded (in the order of
  // the file comment) that fit the budget.
  void WithOffloadsWithin(const Schedule& base, const std::string& label) {
    pool_->Offer(base, label);
    const SimulationResult& sim = pool_->last();
    if (!sim.valid || sim.peak_bytes <= request_->budget_bytes) return;
    for (bool wait : {false, true}) FewestOffloads(base, label, wait);
  }

  void FewestOffloads(const Schedule& base, const std::string& label,
                      bool wait) {
    std::vector<IdleSpan> spans =
        LongestIdleSpans(*graph_, base, [](NodeId) { return true; });
    const TimingModel& timing = request_->timing;
    auto hidden = [&](const IdleSpan& s) {
      return 2 * timing.TransferTime(*graph_, graph_->mem(s.value)) <=
             static_cast<double>(s.idle_cost);
    };
    std::stable_sort(spans.begin(), spans.end(),
                     [&](const IdleSpan& a, const IdleSpan& b) {
                       if (hidden(a) != hidden(b)) return hidden(a);
                       return graph_->mem(a.value) > graph_->mem(b.value);
                     });
    auto peak_with = [&](size_t k) {
      const Schedule s = WithOffloads(
          base, std::span<const IdleSpan>(spans.data(), k), Lookahead(), wait);
      return Simulate(*graph_, s, {.timing = &timing}).peak_bytes;
    };
    if (peak_with(spans.size()) > request_->budget_bytes) return;
    // The fewest that fit: none offloaded does not (WithOffloadsWithin).
    const auto fewest = static_cast<size_t>(
        BisectKnob(0, static_cast<int64_t>(spans.size()), [&](int64_t k) {
          return peak_with(static_cast<size_t>(k)) > request_->budget_bytes;
        }).hi);
    pool_->Offer(
        WithOffloads(base, std::span<const IdleSpan>(spans.data(), fewest),
                     Lookahead(), wait),
        fmt::format("{} with {} values offloaded{}", label, fewest,
                    wait ? ", waiting for each" : ""));
  }

  int64_t Lookahead() const { return options_.lookahead; }

  const Graph* graph_ = nullptr;
  const SolveRequest* request_ = nullptr;
  SwapRematOptions options_;           // of the solve under way
  std::optional<CandidatePool> pool_;  // of the solve under way
};

const bool kRegistered = RegisterAlgorithm({
    .name = "swap_remat",
    .description = "Recomputation and offloading together: the split of the "
                   "saving between them searched for the least makespan",
    .citation = "after Peng et al., Capuchin: Tensor-based GPU Memory "
                "Management for Deep Learning, ASPLOS 2020",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<SwapRemat>(); },
});

}  // namespace
}  // namespace remat
