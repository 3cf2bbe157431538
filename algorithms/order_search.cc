// order_search — the base cost wherever an order fits: a search for an
// order that computes each needed value once and peaks within the budget.
//
// docs/algorithms.md, "order_search". Every schedule computes each needed
// node at least once, so a schedule that computes each exactly once costs
// the base cost, the least any schedule can: where such a schedule fits,
// it is optimal, whatever the class of the method that proves optima. How
// much memory it needs depends only on the order: each value is live from
// its compute to its last reader's. The NoRemat peak is that of one order
// (Kahn's); other orders peak lower, on graphs with parallel branches by
// more than the budgets at which the staged methods recompute
// (Checkmate's random layered graph of 100 nodes fits 80% of its NoRemat
// peak without recomputing, where checkmate_milp had proven 1.0006x the
// base cost optimal in the stage order it took from the other
// heuristics).
//
// The search itself, over the sets of values computed so far, is
// common/compute_once_order.h's: complete, so where it ends without an
// order none exists (infeasible; a schedule that recomputes may still
// fit).
#include <fmt/format.h>

#include <vector>

#include "algorithms/common/compute_once_order.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

const Options<OrderSearchOptions> kOptions(
    IntOption(&OrderSearchOptions::memory_mib, "memory_mib",
              OrderSearchOptions{}.memory_mib,
              "MiB for the sets the search remembers; past it the search "
              "gives up (too_large)",
              1),
    IntOption(&OrderSearchOptions::restart_states, "restart_states",
              OrderSearchOptions{}.restart_states,
              "sets the first run may search before the search starts "
              "again in another order, each run 1.5 times the last's, "
              "keeping the dead ends found (0: one run)",
              0),
    DoubleOption(&OrderSearchOptions::jitter, "jitter",
                 OrderSearchOptions{}.jitter,
                 "in the runs after the first, each compute is tried as if "
                 "it left up to this many mean values more live, at random",
                 0),
    IntOption(&OrderSearchOptions::seed, "seed", OrderSearchOptions{}.seed,
              "seed of the runs' orders", 0));

class OrderSearch : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const OrderSearchOptions options = kOptions.Read(request.params);
    const int64_t budget = request.budget_bytes;
    // NoRemat's own order, where it fits, needs no search.
    std::vector<NodeId> order = NoRematOrder(graph);
    Schedule schedule = InsertFrees(graph, order);
    if (Simulate(graph, schedule).peak_bytes <= budget) {
      return AlgorithmOutput::Found(std::move(schedule),
                                    "NoRemat's order fits");
    }
    const OrderSearchResult search =
        SearchComputeOnceOrder(graph, budget, options, request.deadline);
    AlgorithmOutput out = [&] {
      switch (search.found) {
        case OrderSearchResult::Found::kOrder:
          return AlgorithmOutput::Found(
              InsertFrees(graph, search.order),
              fmt::format("an order computing each value once fits ({} "
                          "sets searched)",
                          search.states));
        case OrderSearchResult::Found::kNone:
          return AlgorithmOutput::NoSchedule(
              Status::kInfeasible,
              fmt::format("no order computing each value once fits ({} "
                          "sets searched, all); one that recomputes may",
                          search.states));
        case OrderSearchResult::Found::kGaveUp:
          break;
      }
      if (request.deadline.Expired()) {
        return AlgorithmOutput::NoSchedule(
            Status::kTimeout,
            fmt::format("deadline reached after {} sets", search.states));
      }
      return AlgorithmOutput::NoSchedule(
          Status::kTooLarge,
          fmt::format("the sets remembered outgrew memory_mib={} ({} sets "
                      "searched)",
                      options.memory_mib, search.states));
    }();
    out.extra["states"] = search.states;
    out.extra["restarts"] = search.restarts;
    return out;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "order_search",
    .description =
        "The base cost wherever it fits: a search over the sets of values "
        "computed for an order that computes each value once within the "
        "budget, or a proof that none does",
    .citation = "rematbench (docs/algorithms.md, order_search)",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<OrderSearch>(); },
});

}  // namespace
}  // namespace remat
