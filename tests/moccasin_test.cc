// moccasin with solver=cbc and solver=highs (the MILP on either solver),
// solver=cpsat (the interval model on CP-SAT) and solver=auto (CP-SAT, or
// without ortools the interval model on Gecode first, then the MILP):
// known answers on chains, where binomial checkpointing (the
// revolve formula) is the optimum over all schedules and its repetition
// number r says how often a value is recomputed; the relation to
// checkmate_milp, whose staged class contains moccasin's; and Gecode's
// answers, where its search ends, equal to CBC's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include "algorithms/checkmate/moccasin_cpsat.h"
#include "algorithms/common/compute_once_order.h"
#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::Solve;

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

// Sets an environment variable for its lifetime. REMAT_CPSAT_PYTHON
// empty: CP-SAT is not found.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* saved = std::getenv(name)) saved_ = saved;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (saved_) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

// Runs each test with solver=cbc, solver=highs, solver=cpsat, solver=auto
// (CP-SAT) and solver=auto without ortools (Gecode, then HiGHS).
class Moccasin : public ::testing::TestWithParam<std::string> {
 protected:
  SolveResult SolveMoccasin(const Graph& graph, int64_t budget,
                            std::vector<std::string> params = {}) {
    if (GetParam() == "auto_without_cpsat") {
      const ScopedEnv none("REMAT_CPSAT_PYTHON", "");
      params.push_back("solver=auto");
      return Solve("moccasin", graph, budget, std::move(params));
    }
    params.push_back("solver=" + GetParam());
    return Solve("moccasin", graph, budget, std::move(params));
  }
};

TEST_P(Moccasin, EqualsRevolveWhereTwoComputesSuffice) {
  int checked = 0;
  for (int n = 4; n <= 6; ++n) {
    const Graph g = LoadGraph(fmt::format("chain:n={}", n));
    for (int64_t budget = 3; budget <= n + 2; ++budget) {
      const Revolve revolve = RevolveOptimum(n, budget);
      if (revolve.repetitions > 2) continue;
      const SolveResult moccasin = SolveMoccasin(g, budget);
      ASSERT_EQ(moccasin.status, Status::kFeasible) << moccasin.message;
      EXPECT_TRUE(moccasin.optimal);
      EXPECT_EQ(moccasin.cost, revolve.cost) << "n=" << n << " b=" << budget;
      EXPECT_EQ(moccasin.staged_lower_bound_cost, moccasin.cost);
      // A bound on every algorithm only at the base cost, which bounds all.
      EXPECT_EQ(moccasin.lower_bound_cost.has_value(),
                moccasin.cost == BaseCost(g));
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);
}

// chain:n=4 at budget 3 has one checkpoint slot: every optimal schedule
// computes a forward value 4 times, and no schedule fits with fewer (the
// gradient of f_i needs f_i, which only the input's chain rebuilds). With
// its default warm starts the answer is then a heuristic's schedule outside
// the class, at the optimum over all schedules (revolve's cost).
TEST_P(Moccasin, ProvesTheCapInfeasibleAndLiftsIt) {
  const Graph g = LoadGraph("chain:n=4");
  const Revolve revolve = RevolveOptimum(4, 3);
  ASSERT_GT(revolve.repetitions, 2);
  const SolveResult capped = SolveMoccasin(g, 3, {"warm_start=noremat"});
  EXPECT_EQ(capped.status, Status::kInfeasible) << capped.message;
  const SolveResult outside = SolveMoccasin(g, 3);
  ASSERT_EQ(outside.status, Status::kFeasible) << outside.message;
  EXPECT_FALSE(outside.optimal);
  EXPECT_EQ(outside.cost, revolve.cost);
  EXPECT_NE(outside.message.find("outside the class, fits where the class "
                                 "has no schedule"),
            std::string::npos)
      << outside.message;
  const SolveResult lifted = SolveMoccasin(
      g, 3, {fmt::format("computations={}", revolve.repetitions)});
  ASSERT_EQ(lifted.status, Status::kFeasible) << lifted.message;
  EXPECT_TRUE(lifted.optimal);
  EXPECT_EQ(lifted.cost, revolve.cost);
}

// Where no heuristic's schedule is staged within the budget in its own
// order, the model is staged in the compute-once order of least peak, not
// the graph's: on random_layered:n=20,seed=4 at 25,448 bytes (the least
// such peak is 26,096 and the NoRemat peak 32,826, so the class must
// recompute) its class's optimum, 8,072, is cheaper than the graph order's,
// 8,650, both proven.
TEST_P(Moccasin, StagesInTheLeastPeakOrderWhereNoHeuristicIs) {
  const Graph g = LoadGraph("random_layered:n=20,seed=4");
  ASSERT_EQ(NoRematPeak(g), 32826);
  const LeastPeakOrder order =
      FindLeastPeakOrder(g, OrderSearchOptions{}, Deadline::Never());
  ASSERT_EQ(order.peak_bytes, 26096);
  ASSERT_TRUE(order.least);
  const SolveResult graph_order =
      SolveMoccasin(g, 25448, {"stage_order=graph"});
  ASSERT_EQ(graph_order.status, Status::kFeasible) << graph_order.message;
  EXPECT_TRUE(graph_order.optimal) << graph_order.message;
  EXPECT_EQ(graph_order.cost, 8650);
  const SolveResult least = SolveMoccasin(g, 25448);
  ASSERT_EQ(least.status, Status::kFeasible) << least.message;
  EXPECT_TRUE(least.optimal) << least.message;
  EXPECT_EQ(least.extra.value("stage_order", ""), "least_peak");
  EXPECT_EQ(least.cost, 8072);
  EXPECT_LE(least.peak_bytes, 25448);
}

// stage_order=least_peak stages in that order whatever the warm starts: at
// the least peak, 26,096 bytes, the order's compute-once schedule is in
// the class, so the solver answers the base cost from noremat's start,
// which does not fit (its peak is 32,826); in the graph's order the class
// must recompute.
TEST_P(Moccasin, StageOrderLeastPeakIsTaken) {
  const Graph g = LoadGraph("random_layered:n=20,seed=4");
  const int64_t base = BaseCost(g);
  const SolveResult least =
      SolveMoccasin(g, 26096, {"stage_order=least_peak", "warm_start=noremat"});
  ASSERT_EQ(least.status, Status::kFeasible) << least.message;
  EXPECT_TRUE(least.optimal) << least.message;
  EXPECT_EQ(least.extra.value("stage_order", ""), "least_peak");
  EXPECT_EQ(least.cost, base);
  EXPECT_LE(least.peak_bytes, 26096);
  const SolveResult graph_order =
      SolveMoccasin(g, 26096, {"stage_order=graph", "warm_start=noremat"});
  ASSERT_EQ(graph_order.status, Status::kFeasible) << graph_order.message;
  EXPECT_EQ(graph_order.extra.value("stage_order", ""), "graph");
  EXPECT_GT(graph_order.cost, base);
}

// Where no warm start fits (here none has time to run) and reach_search is
// among them, reach_search runs once more with more time and memory, and
// its schedule, which computes a forward value more than twice, answers
// outside the class; without it in the list the class's proof stands.
TEST_P(Moccasin, ReachSearchIsTheLastResort) {
  const Graph g = LoadGraph("chain:n=4");
  const SolveResult last =
      SolveMoccasin(g, 3, {"warm_start=reach_search", "warm_start_seconds=0"});
  ASSERT_EQ(last.status, Status::kFeasible) << last.message;
  EXPECT_FALSE(last.optimal);
  EXPECT_TRUE(last.valid);
  EXPECT_LE(last.peak_bytes, 3);
  EXPECT_GE(last.cost, RevolveOptimum(4, 3).cost);
  EXPECT_EQ(last.extra["outside_class"].get<std::string>().rfind(
                "reach_search (memory_mib=", 0),
            0u)
      << last.message;
  const SolveResult none =
      SolveMoccasin(g, 3, {"warm_start=noremat", "warm_start_seconds=0"});
  EXPECT_EQ(none.status, Status::kInfeasible) << none.message;
}

// Moccasin's class is the staged class with a cap. In the same stage
// order (the graph's here: by default each stages in the order of its own
// warm start, which the cap can change) it is never cheaper than
// checkmate_milp, and equal to it once the cap cannot bind.
TEST_P(Moccasin, NeverBelowCheckmateMilpEqualUncapped) {
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
      const SolveResult milp = Solve("checkmate_milp", g, budget, {order});
      const SolveResult capped = SolveMoccasin(g, budget, {order});
      const SolveResult uncapped = SolveMoccasin(
          g, budget, {order, fmt::format("computations={}", g.num_nodes())});
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

INSTANTIATE_TEST_SUITE_P(Solvers, Moccasin,
                         ::testing::Values("cbc", "highs", "cpsat", "auto",
                                           "auto_without_cpsat"),
                         [](const auto& info) { return info.param; });

// Gecode alone answers the same model as CBC: wherever its search ends
// within a few seconds (its plain search proves infeasibility or deep
// recomputation slowly, hence solver=auto), it proves the same optimum or
// the same infeasibility, on graphs with branches and skips, at budgets
// from the memory lower bound to the NoRemat peak.
TEST(MoccasinSolvers, GecodeAgreesWithCbcWhereItEnds) {
  int settled = 0;
  for (const std::string& spec :
       {testing::SourceDir() + "/tests/fixtures/diamond.json",
        testing::SourceDir() + "/tests/fixtures/skip_connections.json",
        std::string("resnet:depth=18,batch=1,image=32"),
        std::string("random_layered:n=20,seed=3")}) {
    const Graph g = LoadGraph(spec);
    const int64_t lb = MemoryLowerBound(g);
    const int64_t peak = NoRematPeak(g);
    for (int step = 0; step <= 4; ++step) {
      const int64_t budget = lb + (peak - lb) * step / 4;
      const SolveResult gecode =
          Solve("moccasin", g, budget, {"solver=gecode"}, 2);
      if (gecode.status == Status::kTimeout) continue;
      const SolveResult cbc = Solve("moccasin", g, budget, {"solver=cbc"});
      ASSERT_EQ(gecode.status, cbc.status)
          << spec << " " << budget << ": " << gecode.message << " / "
          << cbc.message;
      ++settled;
      if (cbc.status != Status::kFeasible) continue;
      ASSERT_TRUE(cbc.optimal && gecode.optimal) << spec << " " << budget;
      EXPECT_EQ(gecode.cost, cbc.cost) << spec << " " << budget;
      EXPECT_LE(gecode.peak_bytes, budget);
    }
  }
  // 11 of the 20 end within 1 s here; fewer on a slow or loaded machine.
  EXPECT_GE(settled, 6);
}

// Without a budget (kUnboundedBudget) Gecode's memory scaling overflowed
// and Gecode refused the numbers ("Int::cumulative: Number out of limits"):
// the capacity is the most any moment can hold, so the answer
// is the NoRemat schedule's cost, proven, on graphs with small and with
// byte-sized values.
TEST(MoccasinSolvers, GecodeSolvesWithoutABudget) {
  for (const std::string& spec :
       {std::string("chain:n=10"), std::string("chain:n=10,mem=3"),
        std::string("resnet:depth=18,batch=1,image=32"),
        testing::SourceDir() + "/tests/fixtures/skip_connections.json"}) {
    const Graph g = LoadGraph(spec);
    const SolveResult gecode =
        Solve("moccasin", g, kUnboundedBudget, {"solver=gecode"}, 20);
    ASSERT_EQ(gecode.status, Status::kFeasible)
        << spec << ": " << gecode.message;
    EXPECT_EQ(gecode.cost, BaseCost(g)) << spec;
    EXPECT_TRUE(gecode.optimal) << spec << ": " << gecode.message;
  }
}

// CP-SAT answers the interval model as CBC answers the MILP of the same
// class: the same optimum, proven, with a schedule within the budget (the
// schedule is built from the intervals, free by free:
// ScheduleOfIntervals), on graphs with branches and skips.
TEST(MoccasinSolvers, CpSatAgreesWithCbc) {
  for (const std::string& spec :
       {testing::SourceDir() + "/tests/fixtures/diamond.json",
        testing::SourceDir() + "/tests/fixtures/skip_connections.json"}) {
    const Graph g = LoadGraph(spec);
    const int64_t lb = MemoryLowerBound(g);
    const int64_t peak = NoRematPeak(g);
    for (int step = 0; step <= 4; ++step) {
      const int64_t budget = lb + (peak - lb) * step / 4;
      const SolveResult cpsat =
          Solve("moccasin", g, budget, {"solver=cpsat"}, 20);
      const SolveResult cbc = Solve("moccasin", g, budget, {"solver=cbc"});
      ASSERT_EQ(cpsat.status, cbc.status)
          << spec << " " << budget << ": " << cpsat.message << " / "
          << cbc.message;
      if (cbc.status != Status::kFeasible) continue;
      ASSERT_TRUE(cbc.optimal && cpsat.optimal) << spec << " " << budget;
      EXPECT_EQ(cpsat.cost, cbc.cost) << spec << " " << budget;
      EXPECT_EQ(cpsat.staged_lower_bound_cost, cpsat.cost);
      EXPECT_LE(cpsat.peak_bytes, budget);
    }
  }
}

// Where no schedule at all fits (exact_search proves it), CP-SAT proves
// that none of its class does, within a second (at 22,707 bytes, 3/4 of
// the way from the memory lower bound to the NoRemat peak, HiGHS, CBC and
// Gecode gave no answer in 30 s: docs/algorithms.md). Where one fits,
// CP-SAT's class costs at least the optimum over all schedules.
TEST(MoccasinSolvers, CpSatProvesWhatExactSearchProves) {
  const Graph g = LoadGraph("random_layered:n=20,seed=3");
  const int64_t lb = MemoryLowerBound(g);
  const int64_t peak = NoRematPeak(g);
  int infeasible = 0;
  for (int step = 0; step <= 4; ++step) {
    const int64_t budget = lb + (peak - lb) * step / 4;
    const SolveResult exact = Solve("exact_search", g, budget, {}, 60);
    const SolveResult cpsat =
        Solve("moccasin", g, budget, {"solver=cpsat"}, 20);
    ASSERT_NE(exact.status, Status::kTimeout) << budget;
    if (exact.status == Status::kInfeasible) {
      EXPECT_EQ(cpsat.status, Status::kInfeasible)
          << budget << ": " << cpsat.message;
      ++infeasible;
    } else if (cpsat.status == Status::kFeasible) {
      EXPECT_GE(cpsat.cost, exact.cost) << budget;
      EXPECT_LE(cpsat.peak_bytes, budget);
    }
  }
  EXPECT_GE(infeasible, 3);
}

// Without ortools (REMAT_CPSAT_PYTHON empty) solver=cpsat is an error that
// says what to install, not a crash and not a schedule.
TEST(MoccasinSolvers, CpSatWithoutOrtoolsSaysWhy) {
  const ScopedEnv none("REMAT_CPSAT_PYTHON", "");
  const Graph g = LoadGraph("chain:n=6");
  const SolveResult r = Solve("moccasin", g, 6, {"solver=cpsat"});
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("ortools"), std::string::npos) << r.message;
}

// Where no warm start fits, CP-SAT first lowers the peak of the schedule
// that computes every value once, down to the budget, and searches for the
// cheapest from the schedule it reaches there. Where the class's least peak
// is above the budget, that minimum is the proof that none fits, and the
// answer names it.
TEST(MoccasinSolvers, CpSatLowersThePeakWhereNoWarmStartFits) {
  if (!FindCpSat()) REMAT_SKIP_UNLESS_CI("this build has no ortools");
  // 32632 bytes: the least peak of the class on this graph (below it, the
  // answer is infeasible); moccasin's greedy walk does not fit there, and
  // the only warm start asked for, noremat, fits at 44589 bytes.
  const Graph g = LoadGraph("random_layered:n=30,seed=1");
  const SolveResult r =
      Solve("moccasin", g, 32632, {"solver=cpsat", "warm_start=noremat"}, 60);
  EXPECT_EQ(r.status, Status::kFeasible) << r.message;
  EXPECT_TRUE(r.optimal) << r.message;
  EXPECT_LE(r.peak_bytes, 32632);
  EXPECT_NE(r.message.find("CP-SAT lowered the peak to the budget"),
            std::string::npos)
      << r.message;
  // Each value computed at most twice, a chain of 8 peaks at 5 units at
  // least.
  const SolveResult below = Solve("moccasin", LoadGraph("chain:n=8"), 4,
                                  {"solver=cpsat", "warm_start=noremat"}, 60);
  EXPECT_EQ(below.status, Status::kInfeasible) << below.message;
  EXPECT_NE(below.message.find("the least peak 5 bytes"), std::string::npos)
      << below.message;
}

// A CP-SAT process that overruns the deadline (here a script that only
// sleeps) leaves the warm start to the isolated process's watchdog, which
// answers with it 2 s past the limit rather than with nothing. One unit
// below the NoRemat peak, so that the warm start recomputes and CP-SAT
// runs (a start at the base cost needs no solver).
TEST(MoccasinSolvers, CpSatPastItsLimitLeavesTheWarmStart) {
  const std::string script = ::testing::TempDir() + "/sleeping_cpsat.py";
  {
    std::ofstream out(script);
    out << "import time\ntime.sleep(6)\n";
  }
  const Graph g = LoadGraph("chain:n=6");
  const int64_t budget = NoRematPeak(g) - 1;
  SolveResult r;
  {
    // No size limit: at 1 s CP-SAT's (100 literals a second) is within a
    // few literals of this chain's model, and refused it on a loaded
    // machine before the warm start this test is about.
    const ScopedEnv sleeping("REMAT_CPSAT_SCRIPT", script.c_str());
    r = Solve("moccasin", g, budget,
              {"solver=cpsat", "cpsat_literals_per_second=0"}, 1);
  }
  if (!FindCpSat()) REMAT_SKIP_UNLESS_CI("this build has no ortools");
  EXPECT_EQ(r.status, Status::kTimeout) << r.message;
  ASSERT_TRUE(r.has_schedule) << r.message;
  EXPECT_TRUE(r.valid);
  EXPECT_LE(r.peak_bytes, budget);
  EXPECT_NE(r.message.find("CP-SAT did not finish; warm start"),
            std::string::npos)
      << r.message;
}

// Without a time limit CP-SAT runs to its end (its child was once killed at
// once: the unbounded deadline's seconds overflowed the kill time).
TEST(MoccasinSolvers, CpSatWithoutATimeLimitAnswers) {
  if (!FindCpSat()) REMAT_SKIP_UNLESS_CI("this build has no ortools");
  const Graph g = LoadGraph("chain:n=5");
  const SolveResult r =
      Solve("moccasin", g, 5, {"solver=cpsat"}, /*timeout_seconds=*/0);
  EXPECT_EQ(r.status, Status::kFeasible) << r.message;
  EXPECT_TRUE(r.optimal) << r.message;
}

// solver=auto is CP-SAT where the build has ortools (chosen by measurement
// on the default corpus: docs/algorithms.md) and Gecode, then HiGHS, where
// it has not: both prove the same optimum, each naming its solver.
TEST(MoccasinSolvers, AutoIsCpSatWhereOrtoolsIsFound) {
  const Graph g = LoadGraph("chain:n=6");
  const int64_t budget = 5;
  const SolveResult with = Solve("moccasin", g, budget, {"solver=auto"});
  SolveResult without;
  {
    const ScopedEnv none("REMAT_CPSAT_PYTHON", "");
    without = Solve("moccasin", g, budget, {"solver=auto"});
  }
  ASSERT_EQ(without.status, Status::kFeasible) << without.message;
  EXPECT_EQ(without.message.find("CP-SAT"), std::string::npos)
      << without.message;
  if (!FindCpSat()) REMAT_SKIP_UNLESS_CI("this build has no ortools");
  ASSERT_EQ(with.status, Status::kFeasible) << with.message;
  EXPECT_NE(with.message.find("CP-SAT"), std::string::npos) << with.message;
  EXPECT_TRUE(with.optimal && without.optimal);
  EXPECT_EQ(with.cost, without.cost);
}

// Each solver is held to its own size limit, and the details say which
// solver ran and why: where solver=auto runs CP-SAT, the MILP solvers'
// limit (here lowered to 1 nonzero a second) does not refuse the request,
// CP-SAT's own (cpsat_literals_per_second) does; without CP-SAT, auto runs
// the MILP and its limit refuses.
TEST(MoccasinSolvers, AutoAppliesTheLimitOfTheSolverThatRuns) {
  const Graph g = LoadGraph("chain:n=8");
  const int64_t budget = 5;
  const std::vector<std::string> milp_limit = {"nonzeros_per_second=1"};
  SolveResult without;
  {
    const ScopedEnv none("REMAT_CPSAT_PYTHON", "");
    without = Solve("moccasin", g, budget, milp_limit, 10);
  }
  EXPECT_EQ(without.status, Status::kTooLarge) << without.message;
  EXPECT_NE(without.message.find("MILP solvers were measured"),
            std::string::npos)
      << without.message;
  EXPECT_EQ(without.extra.value("solver", ""), "gecode+milp");
  // Gecode alone is held to neither speed.
  const SolveResult gecode = Solve(
      "moccasin", g, budget,
      {"solver=gecode", "nonzeros_per_second=1", "cpsat_literals_per_second=1"},
      10);
  EXPECT_EQ(gecode.status, Status::kFeasible) << gecode.message;
  EXPECT_EQ(gecode.extra.value("solver", ""), "gecode");
  if (!FindCpSat()) REMAT_SKIP_UNLESS_CI("this build has no ortools");
  const SolveResult with = Solve("moccasin", g, budget, milp_limit, 10);
  EXPECT_EQ(with.status, Status::kFeasible) << with.message;
  EXPECT_EQ(with.extra.value("solver", ""), "cpsat");
  EXPECT_NE(with.extra.value("solver_choice", "").find("solver=auto: CP-SAT"),
            std::string::npos)
      << with.extra.dump();
  // 17 nodes x 2 intervals and 24 inputs x 4 literals: 130, over 4 x 10 s.
  const SolveResult over = Solve("moccasin", g, budget,
                                 {"cpsat_literals_per_second=4"}, 10);
  EXPECT_EQ(over.status, Status::kTooLarge) << over.message;
  EXPECT_NE(over.message.find("CP-SAT's interval model would have 130 "
                              "literals"),
            std::string::npos)
      << over.message;
}

// A heuristic whose schedule fits the budget but computes a value more
// than C times is no warm start of moccasin; the answer names it and says
// why (on Checkmate's random layered graphs twremat's schedule is the
// only one that fits, and is outside the class).
TEST(MoccasinWarmStart, NamesAFittingHeuristicOutsideItsClass) {
  const Graph g = LoadGraph("chain:n=16");
  const int64_t budget = 6;  // twremat fits, computing node 0 7 times
  const SolveResult twremat = Solve("twremat", g, budget);
  ASSERT_EQ(twremat.status, Status::kFeasible) << twremat.message;
  const SolveResult r =
      Solve("moccasin", g, budget, {"solver=gecode", "warm_start=twremat"}, 2);
  EXPECT_NE(r.message.find("fitting heuristics outside the class: twremat "
                           "(staged, it computes node"),
            std::string::npos)
      << r.message;
  // Allowed seven computes, the same schedule is the start.
  const SolveResult seven =
      Solve("moccasin", g, budget,
            {"solver=gecode", "warm_start=twremat", "computations=7"}, 2);
  EXPECT_EQ(seven.message.find("outside the class"), std::string::npos)
      << seven.message;
  ASSERT_TRUE(seven.has_schedule) << seven.message;
  EXPECT_LE(seven.cost, twremat.cost);
}

}  // namespace
}  // namespace remat
