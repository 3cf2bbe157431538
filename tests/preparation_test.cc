// Per-graph preparation (Algorithm::Prepare, PreparationSlot) and the
// warm_start parameter: shared work gives the same answers as unshared
// work, a slot shares one preparation and keeps no failed one, and warm
// starts come only from the algorithms named.
#include <gtest/gtest.h>

#include "harness/runner.h"
#include "model/errors.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

SolveRequest RequestFor(const AlgorithmInfo& info, int64_t budget,
                        std::vector<std::string> params = {}) {
  return {budget, Params::Parse(params, info.params, info.name),
          Deadline::Never()};
}

// Same schedule whether the solve prepares itself or gets a preparation
// made beforehand, at every budget of the grid.
TEST(Preparation, SharedPreparationGivesTheSameSchedules) {
  const Graph graph = LoadGraph("resnet:depth=20,batch=2,image=32");
  const int64_t low = MemoryLowerBound(graph), high = NoRematPeak(graph);
  for (const char* name : {"dp_exact", "dp_approx", "twremat"}) {
    const AlgorithmInfo& info = FindAlgorithm(name);
    std::unique_ptr<Algorithm> algorithm = info.create();
    std::shared_ptr<const void> prepared =
        algorithm->Prepare(graph, RequestFor(info, kUnboundedBudget));
    ASSERT_NE(prepared, nullptr) << name;
    for (int64_t budget = low; budget <= high; budget += (high - low) / 4) {
      SolveRequest cold = RequestFor(info, budget);
      SolveRequest warm = RequestFor(info, budget);
      warm.prepared = prepared;
      const AlgorithmOutput a = info.create()->Solve(graph, cold);
      const AlgorithmOutput b = algorithm->Solve(graph, warm);
      EXPECT_EQ(a.status, b.status) << name << " at " << budget;
      EXPECT_EQ(a.schedule, b.schedule) << name << " at " << budget;
      EXPECT_EQ(a.message, b.message) << name << " at " << budget;
    }
  }
}

TEST(Preparation, SlotSharesOnePreparationAcrossBudgets) {
  const Graph graph = LoadGraph("chain:n=32");
  const AlgorithmInfo& info = FindAlgorithm("twremat");
  PreparationSlot slot;
  std::unique_ptr<Algorithm> first = info.create(), second = info.create();
  auto a = slot.GetOrPrepare(*first, graph, RequestFor(info, 10));
  auto b = slot.GetOrPrepare(*second, graph, RequestFor(info, 20));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);  // the second solve did not prepare again
  slot.Release();
  auto c = slot.GetOrPrepare(*second, graph, RequestFor(info, 20));
  EXPECT_NE(c, nullptr);
  EXPECT_NE(c, a);
}

// Prepares only while its deadline has not passed, like every algorithm
// whose preparation is stopped by the time limit.
class PreparesInTime : public PreparedAlgorithm<int> {
 public:
  int preparations = 0;

 private:
  std::shared_ptr<const int> PrepareGraph(
      const Graph&, const SolveRequest& request) override {
    if (request.deadline.Expired()) return nullptr;
    return std::make_shared<const int>(++preparations);
  }
  AlgorithmOutput RunPrepared(const Graph& graph, const SolveRequest&,
                              const int* prepared) override {
    if (!prepared) return AlgorithmOutput::NoSchedule(Status::kTimeout, "late");
    return AlgorithmOutput::Found(InsertFrees(graph, NoRematOrder(graph)));
  }
};

// A preparation stopped by its deadline is not kept: the next solve, with
// time left, prepares again and succeeds.
TEST(Preparation, SlotKeepsNoPreparationThatRanOutOfTime) {
  const Graph graph = LoadGraph("chain:n=4");
  PreparesInTime algorithm;
  PreparationSlot slot;
  SolveRequest expired;
  expired.deadline = Deadline::In(1e-9);
  while (!expired.deadline.Expired()) {
  }
  EXPECT_EQ(slot.GetOrPrepare(algorithm, graph, expired), nullptr);
  EXPECT_EQ(algorithm.Solve(graph, expired).status, Status::kTimeout);
  auto prepared = slot.GetOrPrepare(algorithm, graph, SolveRequest{});
  ASSERT_NE(prepared, nullptr);
  EXPECT_EQ(slot.GetOrPrepare(algorithm, graph, SolveRequest{}), prepared);
  EXPECT_EQ(algorithm.preparations, 1);
}

TEST(Preparation, RunAlgorithmWithASlotMatchesOneWithout) {
  const Graph graph = LoadGraph("unet:levels=3,base=4,batch=1,image=32");
  const AlgorithmInfo& info = FindAlgorithm("dp_exact");
  const Params params = Params::Parse({}, info.params, info.name);
  PreparationSlot slot;
  const int64_t budget = NoRematPeak(graph);
  const Attempt with = RunAlgorithm(graph, info, params, budget, 60, &slot);
  const Attempt without = RunAlgorithm(graph, info, params, budget, 60);
  ASSERT_TRUE(with.simulation && without.simulation);
  EXPECT_EQ(with.simulation->cost, without.simulation->cost);
  EXPECT_EQ(with.simulation->peak_bytes, without.simulation->peak_bytes);
}

std::string ParseError(const std::string& algorithm,
                       const std::vector<std::string>& items) {
  try {
    Params::Parse(items, FindAlgorithm(algorithm).params, algorithm);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(WarmStart, ParameterNamesRegisteredAlgorithmsOtherThanItself) {
  EXPECT_EQ(ParseError("exact_search", {"warm_start=revolve+twremat"}), "");
  EXPECT_NE(ParseError("exact_search", {"warm_start=frobnicate"})
                .find("'frobnicate': not a registered algorithm"),
            std::string::npos);
  EXPECT_NE(ParseError("checkmate_lp", {"warm_start=noremat+checkmate_lp"})
                .find("cannot warm-start itself"),
            std::string::npos);
  EXPECT_NE(ParseError("exact_search", {"warm_start=noremat++revolve"}), "");
  EXPECT_NE(ParseError("exact_search", {"warm_start="}), "");
}

// The proven optimum is the same whatever the warm start (which only
// prunes), and the list used is recorded in the details.
TEST(WarmStart, TheOptimumDoesNotDependOnTheWarmStartAndIsRecorded) {
  const Graph graph = LoadGraph("chain:n=6");
  const AlgorithmInfo& info = FindAlgorithm("exact_search");
  std::vector<int64_t> costs;
  for (const char* list : {"warm_start=noremat", "warm_start=revolve",
                           "warm_start=checkpoint_last+noremat"}) {
    const Attempt attempt = RunAlgorithm(
        graph, info, Params::Parse({list}, info.params, info.name), 4, 60);
    ASSERT_TRUE(attempt.simulation && attempt.simulation->valid) << list;
    EXPECT_TRUE(attempt.output.optimal) << list;
    EXPECT_EQ(attempt.output.extra["warm_start"],
              std::string(list).substr(std::string("warm_start=").size()));
    costs.push_back(attempt.simulation->cost);
  }
  EXPECT_EQ(costs[0], costs[1]);
  EXPECT_EQ(costs[0], costs[2]);
}

}  // namespace
}  // namespace remat
