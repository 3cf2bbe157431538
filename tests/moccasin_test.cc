// moccasin: known answers on chains, where binomial checkpointing (the
// revolve formula) is the optimum over all schedules and its repetition
// number r says how often a value is recomputed; and the relation to
// checkmate_milp, whose staged class contains moccasin's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/graph_source.h"
#include "harness/registry.h"
#include "harness/runner.h"
#include "harness/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

SolveResult Solve(const Graph& graph, const std::string& algorithm,
                  int64_t budget, std::vector<std::string> params = {}) {
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  const Attempt attempt = RunAlgorithm(
      graph, info, Params::Parse(params, info.params, algorithm), budget, 60);
  return Judge(attempt, budget);
}

int64_t Binomial(int64_t a, int64_t b) {
  if (b < 0 || b > a) return 0;
  int64_t c = 1;
  for (int64_t i = 1; i <= b; ++i) c = c * (a - b + i) / i;
  return c;
}

// Griewank and Walther's binomial checkpointing on chain:n=N with `budget`
// (s = budget - 2 checkpoint slots, l = n + 1 steps): the repetition
// number r, the least with C(s + r, s) >= l, is the most times an optimal
// schedule computes a step (1: no recomputation), and the optimal cost is
// n + 1 + r l - C(s + r, r - 1).
struct Revolve {
  int64_t repetitions, cost;
};
Revolve RevolveOptimum(int64_t n, int64_t budget) {
  const int64_t l = n + 1, s = budget - 2;
  int64_t r = 0;
  while (Binomial(s + r, s) < l) ++r;
  return {r, n + 1 + r * l - Binomial(s + r, r - 1)};
}

TEST(Moccasin, EqualsRevolveWhereTwoComputesSuffice) {
  int checked = 0;
  for (int n = 4; n <= 6; ++n) {
    const Graph g = LoadGraph(fmt::format("chain:n={}", n));
    for (int64_t budget = 3; budget <= n + 2; ++budget) {
      const Revolve revolve = RevolveOptimum(n, budget);
      if (revolve.repetitions > 2) continue;
      const SolveResult moccasin = Solve(g, "moccasin", budget);
      ASSERT_EQ(moccasin.status, Status::kFeasible) << moccasin.message;
      EXPECT_TRUE(moccasin.optimal);
      EXPECT_EQ(moccasin.cost, revolve.cost) << "n=" << n << " b=" << budget;
      EXPECT_EQ(moccasin.extra["staged_lower_bound_cost"], moccasin.cost);
      EXPECT_FALSE(moccasin.lower_bound_cost.has_value());
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);
}

// chain:n=4 at budget 3 has one checkpoint slot: every optimal schedule
// computes a forward value 4 times, and no schedule fits with fewer (the
// gradient of f_i needs f_i, which only the input's chain rebuilds).
TEST(Moccasin, ProvesTheCapInfeasibleAndLiftsIt) {
  const Graph g = LoadGraph("chain:n=4");
  const Revolve revolve = RevolveOptimum(4, 3);
  ASSERT_GT(revolve.repetitions, 2);
  const SolveResult capped = Solve(g, "moccasin", 3);
  EXPECT_EQ(capped.status, Status::kInfeasible) << capped.message;
  const SolveResult lifted = Solve(
      g, "moccasin", 3, {fmt::format("computations={}", revolve.repetitions)});
  ASSERT_EQ(lifted.status, Status::kFeasible) << lifted.message;
  EXPECT_TRUE(lifted.optimal);
  EXPECT_EQ(lifted.cost, revolve.cost);
}

// Moccasin's class is the staged class with a cap. In the same stage
// order (the graph's here: by default each stages in the order of its own
// warm start, which the cap can change) it is never cheaper than
// checkmate_milp, and equal to it once the cap cannot bind.
TEST(Moccasin, NeverBelowCheckmateMilpEqualUncapped) {
  for (const std::string& spec :
       {std::string("chain:n=6"),
        testing::SourceDir() + "/tests/fixtures/diamond.json",
        testing::SourceDir() + "/tests/fixtures/skip_connections.json"}) {
    const Graph g = LoadGraph(spec);
    const int64_t lb = MemoryLowerBound(g);
    const int64_t peak = NoRematPeak(g);
    const int64_t step = std::max<int64_t>(1, (peak - lb) / 4);
    for (int64_t budget = lb; budget <= peak; budget += step) {
      const std::string order = "stage_order=graph";
      const SolveResult milp = Solve(g, "checkmate_milp", budget, {order});
      const SolveResult capped = Solve(g, "moccasin", budget, {order});
      const SolveResult uncapped =
          Solve(g, "moccasin", budget,
                {order, fmt::format("computations={}", g.num_nodes())});
      ASSERT_EQ(milp.status, Status::kFeasible) << spec << " " << budget;
      ASSERT_EQ(uncapped.status, Status::kFeasible) << spec << " " << budget;
      EXPECT_EQ(uncapped.cost, milp.cost) << spec << " " << budget;
      if (capped.status == Status::kFeasible) {
        EXPECT_GE(capped.cost, milp.cost) << spec << " " << budget;
      } else {
        EXPECT_EQ(capped.status, Status::kInfeasible) << capped.message;
      }
    }
  }
}

}  // namespace
}  // namespace remat
