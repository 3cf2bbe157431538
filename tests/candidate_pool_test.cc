// The candidate policy's one order and the knob bisection
// (algorithms/common/candidate_pool.h).
#include "algorithms/common/candidate_pool.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/simulator.h"

namespace remat {
namespace {

// Schedules of chain:n=16 (unit sizes and costs) with known figures.
struct ChainSchedules {
  Graph graph = LoadGraph("chain:n=16");
  // Every node once, freed as early as legal: cost 33, peak 18.
  Schedule lean = InsertFrees(graph, NoRematOrder(graph));
  // The same computes never freed: cost 33, a higher peak.
  Schedule unfreed;
  // The first value computed twice (the first instance freed at once):
  // cost 34, peak 18.
  Schedule redundant;
  // Reads a value never computed.
  Schedule invalid = {Event::Compute(graph.targets().front())};

  ChainSchedules() {
    std::vector<NodeId> order = NoRematOrder(graph);
    for (NodeId v : order) unfreed.push_back(Event::Compute(v));
    order.insert(order.begin(), order.front());
    redundant = InsertFrees(graph, order);
  }
};

TEST(CandidatePool, TheFiguresTheTestsRelyOn) {
  ChainSchedules s;
  const SimulationResult lean = Simulate(s.graph, s.lean);
  const SimulationResult unfreed = Simulate(s.graph, s.unfreed);
  const SimulationResult redundant = Simulate(s.graph, s.redundant);
  EXPECT_EQ(lean.cost, 33);
  EXPECT_EQ(lean.peak_bytes, 18);
  EXPECT_EQ(unfreed.cost, 33);
  EXPECT_GT(unfreed.peak_bytes, 18);
  EXPECT_EQ(redundant.cost, 34);
  EXPECT_EQ(redundant.peak_bytes, 18);
  EXPECT_FALSE(Simulate(s.graph, s.invalid).valid);
}

TEST(CandidatePool, FittingBeatsNotFittingThenCheaperThenLowerPeak) {
  ChainSchedules s;
  CandidatePool pool(s.graph, 18);
  EXPECT_FALSE(pool.Offer(s.unfreed, "unfreed"));
  EXPECT_EQ(pool.note(), "unfreed");
  EXPECT_TRUE(pool.Offer(s.redundant, "redundant"));
  EXPECT_EQ(pool.note(), "redundant");
  EXPECT_TRUE(pool.Offer(s.lean, "lean"));
  EXPECT_EQ(pool.note(), "lean");
  EXPECT_TRUE(pool.fits());

  // Of two that fit at the same cost, the lower peak.
  CandidatePool unbounded(s.graph, kUnboundedBudget);
  unbounded.Offer(s.unfreed, "unfreed");
  unbounded.Offer(s.lean, "lean");
  EXPECT_EQ(unbounded.note(), "lean");
}

TEST(CandidatePool, NotFittingLowerPeakThenCheaper) {
  ChainSchedules s;
  CandidatePool pool(s.graph, 1);
  pool.Offer(s.unfreed, "unfreed");
  pool.Offer(s.redundant, "redundant");
  EXPECT_EQ(pool.note(), "redundant");
  pool.Offer(s.lean, "lean");
  EXPECT_EQ(pool.note(), "lean");
  EXPECT_FALSE(pool.fits());
  EXPECT_EQ(pool.peak_bytes(), 18);
}

TEST(CandidatePool, ACompleteTieKeepsTheFirstOffer) {
  ChainSchedules s;
  for (int64_t budget : {int64_t{18}, int64_t{1}}) {
    CandidatePool pool(s.graph, budget);
    pool.Offer(s.lean, "first");
    pool.Offer(s.lean, "second");
    EXPECT_EQ(pool.note(), "first") << budget;
    EXPECT_EQ(pool.offered(), 2);
  }
}

TEST(CandidatePool, MakespanObjectiveRanksByMakespan) {
  ChainSchedules s;
  CandidatePool pool(s.graph, kUnboundedBudget,
                     {.objective = CandidatePoolOptions::Objective::kMakespan});
  pool.Offer(s.redundant, "redundant");
  pool.Offer(s.lean, "lean");
  EXPECT_EQ(pool.note(), "lean");
  EXPECT_LT(pool.best().simulation.makespan,
            Simulate(s.graph, s.redundant).makespan);
}

TEST(CandidatePool, InvalidSchedulesAreSkippedOrABug) {
  ChainSchedules s;
  CandidatePool pool(s.graph, kUnboundedBudget);
  EXPECT_FALSE(pool.Offer(s.invalid, "invalid"));
  EXPECT_TRUE(pool.empty());
  EXPECT_FALSE(pool.last().valid);
  pool.Offer(s.lean, "lean");
  pool.Offer(s.invalid, "invalid");
  EXPECT_EQ(pool.note(), "lean");

  CandidatePool strict(s.graph, kUnboundedBudget, {.invalid_is_bug = true});
  EXPECT_THROW(strict.Offer(s.invalid), std::logic_error);
}

TEST(CandidatePool, TakeReportsTheKeptScheduleWithItsNote) {
  ChainSchedules s;
  CandidatePool pool(s.graph, 18);
  pool.Offer(s.lean, {{"knob", 3}});
  AlgorithmOutput out = pool.Take(Status::kTimeout, "best so far");
  EXPECT_EQ(out.status, Status::kTimeout);
  EXPECT_EQ(*out.schedule, s.lean);
  EXPECT_EQ(out.message, "best so far");
  EXPECT_EQ(out.extra["knob"], 3);
  EXPECT_TRUE(pool.empty());
}

TEST(BisectKnob, FindsTheLastValueThatHoldsWithoutEvaluatingTheEnds) {
  std::vector<int64_t> asked;
  const KnobBracket b = BisectKnob(0, 100, [&](int64_t k) {
    asked.push_back(k);
    return k <= 37;
  });
  EXPECT_EQ(b.lo, 37);
  EXPECT_EQ(b.hi, 38);
  for (int64_t k : asked) {
    EXPECT_GT(k, 0);
    EXPECT_LT(k, 100);
  }
  EXPECT_LE(asked.size(), 7u);
}

TEST(BisectKnob, StopsAfterMaxStepsOrWhenToldTo) {
  int calls = 0;
  auto holds = [&](int64_t k) {
    ++calls;
    return k <= 37;
  };
  KnobBracket b = BisectKnob(0, 1024, holds, {}, 3);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(b.hi - b.lo, 128);
  calls = 0;
  b = BisectKnob(0, 1024, holds, [&] { return calls < 2; });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(b.hi - b.lo, 256);
  calls = 0;
  b = BisectKnob(5, 6, holds);
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace remat
