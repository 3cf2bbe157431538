// checkpoint_last — the memory end of every tradeoff curve.
//
// docs/algorithms.md, "checkpoint_last": keep no forward value
// between stages and recompute each needed forward value from the graph's
// inputs every time it is needed. A stage is one node that is not a forward
// value (the loss, each backward node), or a forward target. Stages run in
// topological order; before each stage, the forward values it reads are
// recomputed from scratch — the whole forward cone behind them, in
// topological order — and the shared liveness pass frees each value after
// its last use. Memory stays near the memory lower bound; cost is quadratic
// on a chain (sum over stages of the cone size). `checkpoint_all` is not
// registered: keeping every forward value until its gradient is exactly
// `noremat` in this memory model.
#include <fmt/format.h>

#include <algorithm>

#include "algorithms/common/forward_cone.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

struct CheckpointLastOptions {
  int64_t max_events;
};

const Options<CheckpointLastOptions> kOptions(
    IntOption(&CheckpointLastOptions::max_events, "max_events", 100000000,
              "refuse (too_large) schedules with more computes than this", 1));

class CheckpointLast : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph, const SolveRequest& request) override {
    const int64_t max_events = kOptions.Read(request.params).max_events;
    const std::vector<uint8_t> needed = NeededNodes(graph);
    auto is_forward = [&](NodeId v) {
      return graph.kind(v) == NodeKind::kForward;
    };
    std::vector<NodeId> computes;
    std::vector<int32_t> visited_in_stage(graph.num_nodes(), -1);
    std::vector<NodeId> cone, stack;
    int32_t stage = 0;
    for (NodeId s : graph.topological_order()) {
      if (!needed[s] || (is_forward(s) && !graph.is_target(s))) continue;
      if (request.deadline.Expired()) {
        return AlgorithmOutput::NoSchedule(Status::kTimeout,
                                           "deadline reached while building");
      }
      // The forward cone behind s: forward values reachable backwards from
      // s through forward values only.
      cone.clear();
      WalkForwardCone(graph, s, stage, visited_in_stage, stack, [&](NodeId u) {
        cone.push_back(u);
        return true;
      });
      std::sort(cone.begin(), cone.end(), [&](NodeId a, NodeId b) {
        return graph.topo_rank(a) < graph.topo_rank(b);
      });
      if (static_cast<int64_t>(computes.size() + cone.size()) >= max_events) {
        return AlgorithmOutput::NoSchedule(
            Status::kTooLarge,
            fmt::format("schedule would exceed max_events={} computes "
                        "(quadratic in the depth of the graph)",
                        max_events));
      }
      computes.insert(computes.end(), cone.begin(), cone.end());
      computes.push_back(s);
      ++stage;
    }
    return AlgorithmOutput::Found(InsertFrees(graph, computes));
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "checkpoint_last",
    .description = "Keep nothing between stages: recompute every forward "
                   "value from the inputs each time it is read",
    .citation = "trivial end of the tradeoff (docs/algorithms.md)",
    .exact = false,
    .uses_budget = false,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<CheckpointLast>(); },
});

}  // namespace
}  // namespace remat
