// The solver models keep their own formulation of the memory rules (the
// MILP's rows, the interval model's cumulative constraint on Gecode); this
// suite checks them against the simulator, which applies the rules of
// model/memory_model.h (docs/model.md). On every fixture graph, at
// budgets from the memory lower bound to the NoRemat peak, the schedules
// that checkmate_milp and moccasin (solver=gecode) answer with, each
// simulated to its peak P, are points of the MILP at budget P and not at
// P - 1: the MILP counts the schedule's peak as the simulator does, neither
// more nor less. The interval model ends a value's interval at its last
// read, so it counts the schedule with each free moved there (the liveness
// pass over its computes, whose simulated peak is at most P): that
// schedule's intervals are a point of it at that peak and not one byte
// below.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/moccasin_cp.h"
#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

// The MILP (CheckmateModel::PointOf, which checks every row) at `budget`
// in the stage order of `schedule`'s first computes.
bool MilpAdmits(const Graph& graph, const Schedule& schedule, int64_t budget) {
  const std::optional<std::vector<NodeId>> order =
      FirstComputeOrder(graph, schedule);
  if (!order) return false;
  const CheckmateModel model(graph, budget, *order);
  return model.PointOf(schedule).has_value();
}

// The interval model at `budget`, in the same stage order.
bool IntervalsAdmit(const Graph& graph, const Schedule& schedule,
                    int64_t budget) {
  const std::optional<std::vector<NodeId>> order =
      FirstComputeOrder(graph, schedule);
  if (!order) return false;
  const CheckmateModel model(graph, budget, *order);
  const std::optional<RetentionIntervals> intervals =
      IntervalsOf(model, schedule);
  return intervals && IntervalModelAdmits(graph, model, *intervals, budget);
}

TEST(MemoryParity, SolverModelsCountTheSimulatorsPeak) {
  const struct {
    std::string algorithm;
    std::vector<std::string> params;
  } solvers[] = {{"checkmate_milp", {}}, {"moccasin", {"solver=gecode"}}};
  int checked = 0;
  for (const std::string& spec : testing::FixtureGraphSpecs()) {
    const Graph graph = LoadGraph(spec);
    const int64_t lower = MemoryLowerBound(graph);
    const int64_t peak = NoRematPeak(graph);
    for (const int64_t budget : BudgetGrid(lower, peak, 3)) {
      for (const auto& [name, params] : solvers) {
        const AlgorithmInfo& info = FindAlgorithm(name);
        const Attempt attempt = RunAlgorithm(
            graph, info, Params::Parse(params, info.params, name), budget,
            /*timeout_seconds=*/2);
        const std::string where =
            spec + " " + name + " at " + std::to_string(budget);
        if (!attempt.output.schedule) continue;  // infeasible or timed out
        ASSERT_TRUE(attempt.simulation && attempt.simulation->valid) << where;
        const Schedule& schedule = *attempt.output.schedule;
        const int64_t p = attempt.simulation->peak_bytes;
        EXPECT_TRUE(MilpAdmits(graph, schedule, p)) << where << " peak " << p;
        EXPECT_FALSE(MilpAdmits(graph, schedule, p - 1))
            << where << " peak " << p;
        std::vector<NodeId> computes;
        for (const Event& e : schedule) {
          if (e.op == Event::Op::kCompute) computes.push_back(e.node);
        }
        const SimulationResult tight =
            Simulate(graph, InsertFrees(graph, computes));
        ASSERT_TRUE(tight.valid) << where;
        const int64_t q = tight.peak_bytes;
        EXPECT_LE(q, p) << where;
        EXPECT_TRUE(IntervalsAdmit(graph, schedule, q))
            << where << " liveness peak " << q;
        EXPECT_FALSE(IntervalsAdmit(graph, schedule, q - 1))
            << where << " liveness peak " << q;
        ++checked;
      }
    }
  }
  // Both solvers answer on every fixture at the NoRemat peak at least.
  EXPECT_GE(checked, 2 * static_cast<int>(testing::FixtureGraphSpecs().size()));
}

}  // namespace
}  // namespace remat
