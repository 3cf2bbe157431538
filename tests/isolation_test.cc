// Algorithms marked `isolate` run in child processes (harness/isolation.h):
// their answers come back whole, a crash becomes one error point while the
// rest of the sweep goes on, and a child that ignores its time limit is
// answered for by its watchdog, or killed. The algorithms below are registered
// in this binary only, which is why checkmate_milp (whose warm start runs every
// registered heuristic) is not run here.
#include "harness/isolation.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include "harness/runner.h"
#include "harness/sweep.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

// The plain schedule plus every field a child has to send back.
class PlainWithFigures : public Algorithm {
  AlgorithmOutput Run(const Graph& graph, const SolveRequest&) override {
    AlgorithmOutput out = AlgorithmOutput::Found(
        InsertFrees(graph, NoRematOrder(graph)), "plain, from a child");
    out.lower_bound_cost = BaseCost(graph);
    out.optimal = true;
    out.extra["pid"] = static_cast<int64_t>(getpid());
    return out;
  }
};

class Aborts : public Algorithm {
  AlgorithmOutput Run(const Graph&, const SolveRequest&) override {
    std::abort();
  }
};

// Stands by the plain schedule, then ignores its deadline, as CBC does in
// its root node.
class IgnoresDeadline : public Algorithm {
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    if (request.standby) {
      request.standby->Offer(AlgorithmOutput::Found(
          InsertFrees(graph, NoRematOrder(graph)), "the plain schedule"));
    }
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return AlgorithmOutput::NoSchedule(Status::kTimeout, "woke up");
  }
};

// Ignores its deadline and offers nothing to stand by.
class IgnoresDeadlineQuietly : public Algorithm {
  AlgorithmOutput Run(const Graph&, const SolveRequest&) override {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return AlgorithmOutput::NoSchedule(Status::kTimeout, "woke up");
  }
};

// Overruns its deadline by half a second, then answers nothing.
class Overruns : public Algorithm {
  AlgorithmOutput Run(const Graph&, const SolveRequest&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return AlgorithmOutput::NoSchedule(Status::kTimeout, "overran");
  }
};

// A process that cannot run at all, its watchdog included.
class Stops : public Algorithm {
  AlgorithmOutput Run(const Graph&, const SolveRequest&) override {
    raise(SIGSTOP);
    return AlgorithmOutput::NoSchedule(Status::kTimeout, "continued");
  }
};

// Says how much of its time limit it was given.
class TellsItsTimeLeft : public Algorithm {
  AlgorithmOutput Run(const Graph&, const SolveRequest& request) override {
    AlgorithmOutput out =
        AlgorithmOutput::NoSchedule(Status::kInfeasible, "told its time");
    out.extra["seconds_left"] = request.deadline.SecondsLeft();
    return out;
  }
};

// Refuses a graph of more than 3 nodes before its process starts (there,
// it would abort).
std::optional<AlgorithmOutput> RefuseLargeGraphs(const Graph& graph,
                                                 const SolveRequest&) {
  if (graph.num_nodes() <= 3) return std::nullopt;
  return AlgorithmOutput::NoSchedule(Status::kTooLarge, "more than 3 nodes");
}

const bool kRegistered =
    RegisterAlgorithm(
        {.name = "test_isolated_time_left",
         .description = "test only: reports its time left, isolated",
         .isolate = true,
         .create = [] { return std::make_unique<TellsItsTimeLeft>(); }}) &&
    RegisterAlgorithm(
        {.name = "test_isolated_refuser",
         .description = "test only: refuses more than 3 nodes, else aborts",
         .isolate = true,
         .refuse = RefuseLargeGraphs,
         .create = [] { return std::make_unique<Aborts>(); }}) &&
    RegisterAlgorithm(
        {.name = "test_isolated_plain",
         .description = "test only: the plain schedule, isolated",
         .isolate = true,
         .create = [] { return std::make_unique<PlainWithFigures>(); }}) &&
    RegisterAlgorithm({.name = "test_isolated_abort",
                       .description = "test only: aborts, isolated",
                       .isolate = true,
                       .create = [] { return std::make_unique<Aborts>(); }}) &&
    RegisterAlgorithm(
        {.name = "test_isolated_hang",
         .description = "test only: sleeps 60 s whatever its deadline",
         .isolate = true,
         .create = [] { return std::make_unique<IgnoresDeadline>(); }}) &&
    RegisterAlgorithm(
        {.name = "test_hang_quietly",
         .description = "test only: sleeps 60 s whatever its deadline, "
                        "standing by nothing",
         .create = [] { return std::make_unique<IgnoresDeadlineQuietly>(); }}) &&
    RegisterAlgorithm(
        {.name = "test_overrun",
         .description = "test only: sleeps 0.5 s whatever its deadline",
         .create = [] { return std::make_unique<Overruns>(); }}) &&
    RegisterAlgorithm(
        {.name = "test_isolated_stop",
         .description = "test only: stops its own process (SIGSTOP)",
         .isolate = true,
         .create = [] { return std::make_unique<Stops>(); }});

Attempt RunNamed(const std::string& name, const Graph& graph, int64_t budget,
                 double timeout) {
  const AlgorithmInfo& info = FindAlgorithm(name);
  return RunAlgorithm(graph, info, Params::Parse({}, info.params, name), budget,
                      timeout);
}

TEST(Isolation, ChildAnswersWhole) {
  ASSERT_TRUE(IsolationEnabled());
  const Graph graph = LoadGraph("chain:n=6");
  const Attempt attempt =
      RunNamed("test_isolated_plain", graph, kUnboundedBudget, 30);
  ASSERT_EQ(attempt.output.status, Status::kFeasible) << attempt.output.message;
  EXPECT_NE(attempt.output.extra.at("pid").get<int64_t>(), getpid());
  ASSERT_TRUE(attempt.output.schedule.has_value());
  EXPECT_EQ(*attempt.output.schedule, InsertFrees(graph, NoRematOrder(graph)));
  EXPECT_EQ(attempt.output.message, "plain, from a child");
  EXPECT_EQ(attempt.output.lower_bound_cost, BaseCost(graph));
  EXPECT_TRUE(attempt.output.optimal);
  ASSERT_TRUE(attempt.simulation.has_value());
  EXPECT_TRUE(attempt.simulation->valid);
}

TEST(Isolation, CrashIsOneErrorPointAndTheSweepGoesOn) {
  SweepConfig config;
  config.graph_specs = {"chain:n=6", "chain:n=9"};
  config.algorithm_specs = {"test_isolated_abort", "test_isolated_plain",
                            "noremat"};
  config.budgets_per_graph = 3;
  config.threads = 2;
  config.timeout_seconds = 30;
  const nlohmann::json results = RunSweep(config);
  int crashed = 0, fine = 0;
  for (const auto& run : results["runs"]) {
    for (const auto& point : run["points"]) {
      if (run["algorithm"] == "test_isolated_abort") {
        EXPECT_EQ(point["status"], "error");
        EXPECT_NE(point["message"].get<std::string>().find("SIGABRT"),
                  std::string::npos)
            << point["message"];
        ++crashed;
      } else {
        EXPECT_NE(point["status"], "error") << point["message"];
        // Both plain schedules fit the largest budget (the NoRemat peak).
        if (&point == &run["points"].back()) {
          EXPECT_EQ(point["status"], "feasible");
          ++fine;
        }
      }
    }
  }
  EXPECT_EQ(crashed, 6);
  EXPECT_EQ(fine, 4);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

TEST(Isolation, WatchdogAnswersWithTheStandbyPastTheTimeLimit) {
  const Graph graph = LoadGraph("chain:n=4");
  const auto start = std::chrono::steady_clock::now();
  const SolveResult result =
      Judge(RunNamed("test_isolated_hang", graph, kUnboundedBudget, 0.5),
            kUnboundedBudget);
  const double seconds = SecondsSince(start);
  EXPECT_EQ(result.status, Status::kTimeout);
  EXPECT_NE(result.message.find("still running 2.0 s after its time limit"),
            std::string::npos)
      << result.message;
  EXPECT_NE(result.message.find("the plain schedule"), std::string::npos);
  ASSERT_TRUE(result.has_schedule);
  EXPECT_TRUE(result.valid);
  // The watchdog answers 2.5 s after the start, not the algorithm's 60 s
  // (generous: this is a bound on a loaded machine, not a timing).
  EXPECT_LT(seconds, 30);
}

TEST(Isolation, ChildThatCannotAnswerIsKilled) {
  const Graph graph = LoadGraph("chain:n=4");
  const auto start = std::chrono::steady_clock::now();
  const SolveResult result =
      Judge(RunNamed("test_isolated_stop", graph, kUnboundedBudget, 0.5),
            kUnboundedBudget);
  EXPECT_EQ(result.status, Status::kTimeout);
  EXPECT_NE(result.message.find("killed 5.0 s after its time limit"),
            std::string::npos)
      << result.message;
  EXPECT_FALSE(result.has_schedule);
  EXPECT_LT(SecondsSince(start), 30);
}

// An isolated algorithm's own quick refusal is made before the graph is
// sent to a process: checkmate_lp, checkmate_milp and moccasin took 4 to
// 8 s under --timeout 5 to refuse a 10^6-node graph as too_large, most of
// it writing, sending and reading the graph.
TEST(Isolation, QuickRefusalsAreMadeBeforeTheProcessStarts) {
  const Attempt refused = RunNamed(
      "test_isolated_refuser", LoadGraph("chain:n=4"), kUnboundedBudget, 30);
  EXPECT_EQ(refused.output.status, Status::kTooLarge) << refused.output.message;
  EXPECT_EQ(refused.output.message, "more than 3 nodes");
  // A graph it does not refuse goes to the process (which aborts).
  const Attempt solved = RunNamed("test_isolated_refuser",
                                  LoadGraph("chain:n=1"), kUnboundedBudget, 30);
  EXPECT_EQ(solved.output.status, Status::kError);
  EXPECT_NE(solved.output.message.find("SIGABRT"), std::string::npos)
      << solved.output.message;
}

// The child's time limit counts from the solve's start in the parent, so
// that writing, sending and reading the graph take from it; before, the
// child started its own clock once it had read the graph.
TEST(Isolation, TheChildsTimeLimitCountsFromTheSolvesStart) {
  const Graph graph = LoadGraph("chain:n=4");
  const AlgorithmInfo& info = FindAlgorithm("test_isolated_time_left");
  const Params params = Params::Parse({}, info.params, info.name);
  const auto now = std::chrono::steady_clock::now();
  const AlgorithmOutput late =
      RunIsolated(graph, info, params, kUnboundedBudget, /*timeout_seconds=*/60,
                  now - std::chrono::seconds(50));
  ASSERT_EQ(late.status, Status::kInfeasible) << late.message;
  // At most 10 s of the 60 were left; more would be the child's own clock
  // (an upper bound only: a loaded machine leaves less, never more).
  EXPECT_LE(late.extra.at("seconds_left").get<double>(), 10.0);
  EXPECT_GT(late.extra.at("seconds_left").get<double>(), 0.0);
  // A solve whose time ran out before the graph was sent gets no process.
  const AlgorithmOutput over =
      RunIsolated(graph, info, params, kUnboundedBudget, /*timeout_seconds=*/60,
                  now - std::chrono::seconds(61));
  EXPECT_EQ(over.status, Status::kTimeout) << over.message;
  EXPECT_NE(over.message.find("the time limit passed"), std::string::npos)
      << over.message;
}

// A staged solve whose later warm start overruns its share (an isolated
// one's process start under load, here a heuristic that sleeps) stands by
// the best start found before it: it answered nothing when its dtr start
// already fitted.
TEST(Isolation, AWarmStartThatHangsLeavesTheStartsBeforeIt) {
  const Graph graph = LoadGraph("chain:n=8");
  const AlgorithmInfo& info = FindAlgorithm("checkmate_milp");
  const Attempt attempt = RunAlgorithm(
      graph, info,
      Params::Parse({"warm_start=dtr+test_hang_quietly"}, info.params,
                    info.name),
      /*budget_bytes=*/4, /*timeout_seconds=*/1);
  ASSERT_EQ(attempt.output.status, Status::kTimeout) << attempt.output.message;
  ASSERT_TRUE(attempt.simulation.has_value()) << attempt.output.message;
  EXPECT_TRUE(attempt.simulation->valid);
  EXPECT_LE(attempt.simulation->peak_bytes, 4);
  EXPECT_NE(attempt.output.message.find("the best so far: dtr"),
            std::string::npos)
      << attempt.output.message;
}

// Where its warm start overran the limit, checkmate_lp's LP gets no time:
// it stops at once and its first iterate is rounded. A share of a time
// already passed was read as no limit, and the LP of this graph (2.5-8 s)
// ran until the watchdog stopped the process, with nothing to answer.
TEST(Isolation, CheckmateLpGetsNoTimeWhereItsWarmStartOverran) {
  const Graph graph = LoadGraph("resnet:depth=18,batch=8,image=64");
  const AlgorithmInfo& info = FindAlgorithm("checkmate_lp");
  const Attempt attempt = RunAlgorithm(
      graph, info,
      Params::Parse({"warm_start=test_overrun", "nonzeros_per_second=0"},
                    info.params, info.name),
      /*budget_bytes=*/9240576, /*timeout_seconds=*/0.3);
  EXPECT_NE(attempt.output.message.find(
                "LP stopped at its share of the time limit (0.0 s)"),
            std::string::npos)
      << attempt.output.message;
  EXPECT_TRUE(attempt.output.schedule.has_value()) << attempt.output.message;
}

}  // namespace
}  // namespace remat
