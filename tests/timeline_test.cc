// The simulator's timeline (docs/model.md, "Time and offloading"): makespans,
// critical paths and transfers against answers worked out by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "harness/runner.h"
#include "harness/sweep.h"
#include "model/errors.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

using testing::GraphFromNodes;
using E = Event;

// a -> {b, c} -> d with costs 10, 5, 5, 1: the longest path is 16.
Graph Diamond() {
  return GraphFromNodes(R"([
    {"id": 0, "mem": 4, "cost": 10, "inputs": []},
    {"id": 1, "mem": 2, "cost": 5, "inputs": [0]},
    {"id": 2, "mem": 2, "cost": 5, "inputs": [0]},
    {"id": 3, "mem": 1, "cost": 1, "inputs": [1, 2]}])");
}

// A chain a -> b -> c of 4-byte values costing 2 each, and d reading
// `d_inputs`.
Graph Chain4(const char* d_inputs) {
  return GraphFromNodes(fmt::format(R"([
    {{"id": 0, "mem": 4, "cost": 2, "inputs": []}},
    {{"id": 1, "mem": 4, "cost": 2, "inputs": [0]}},
    {{"id": 2, "mem": 4, "cost": 2, "inputs": [1]}},
    {{"id": 3, "mem": 4, "cost": 2, "inputs": [{}]}}])",
                                    d_inputs));
}

// d reads a, as a backward step reads a forward value: a is worth
// offloading while b and c are computed.
Graph Skip4() { return Chain4("0, 2"); }

// The simulation with the critical path, which every report asks for.
SimulationResult Timed(const Graph& graph, const Schedule& schedule,
                       SimulationOptions options = {}) {
  options.critical_path = true;
  return Simulate(graph, schedule, options);
}

// One byte per second and one cost unit per second: copying a 4-byte value
// takes 4 time units, twice a compute of Chain4.
TimingModel SlowLink() {
  TimingModel timing;
  timing.link = ParseLink("1:0");
  timing.compute_rate = 1;
  return timing;
}

TEST(Timeline, WithoutTransfersTimeIsCostAndLanesFollowTheLongestPath) {
  Graph g = Diamond();
  SimulationResult r = Timed(
      g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2), E::Free(0),
                  E::Compute(3)});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.makespan, 21);
  // b and c run side by side after a: 10 + 5 + 1.
  EXPECT_EQ(r.critical_path, 16);
  EXPECT_EQ(LongestPathCost(g), 16);
  EXPECT_DOUBLE_EQ(r.parallelism, 21.0 / 16.0);
  EXPECT_EQ(r.transfer_bytes, 0);
  EXPECT_EQ(r.stall, 0);
}

TEST(Timeline, ACheckpointChainHasNoParallelism) {
  // d reads b and c. Free b and recompute it from a: the recompute waits
  // for the memory the free released, so even on unlimited lanes nothing
  // overlaps.
  Graph g = Chain4("1, 2");
  SimulationResult r = Timed(
      g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2), E::Free(1),
                  E::Compute(1), E::Compute(3)});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.cost, 10);
  EXPECT_EQ(r.critical_path, 10);
  EXPECT_EQ(r.parallelism, 1);
}

TEST(Timeline, AFreeGatesLaterComputesOnUnlimitedLanes) {
  // a -> b1 -> b2 and a -> c1 -> c2 -> d: c1 comes after b1's free in the
  // schedule, so it waits for b2 (b1's last reader) though no value links
  // them: the critical path (1 + 4 x 2 + 1 = 10) exceeds the longest path
  // (1 + 2 x 2 + 1 = 6). The schedule's memory reuse serializes the
  // branches.
  Graph g = GraphFromNodes(R"([
    {"id": 0, "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "mem": 1, "cost": 2, "inputs": [0]},
    {"id": 2, "mem": 1, "cost": 2, "inputs": [1]},
    {"id": 3, "mem": 1, "cost": 2, "inputs": [0]},
    {"id": 4, "mem": 1, "cost": 2, "inputs": [3]},
    {"id": 5, "mem": 1, "cost": 1, "inputs": [2, 4]}])");
  SimulationResult r = Timed(
      g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2), E::Free(1),
                  E::Compute(3), E::Compute(4), E::Compute(5)});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(LongestPathCost(g), 6);
  EXPECT_EQ(r.critical_path, 10);
  // Without the free the branches overlap.
  r = Timed(g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2),
                           E::Compute(3), E::Compute(4), E::Compute(5)});
  EXPECT_EQ(r.critical_path, 6);
}

TEST(Timeline, AReadOfTheLastValueRaisesItsLastUseWhateverComesNext) {
  // a (1) -> b (5) and a -> c (2) -> d (1); e (1) -> f (1). b reads only
  // a, the value computed just before it, so a's last use becomes b's end
  // (6); the free of a gates what follows by it, whether another reader
  // of a or another compute comes between.
  Graph g = GraphFromNodes(R"([
    {"id": 0, "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "mem": 1, "cost": 5, "inputs": [0]},
    {"id": 2, "mem": 1, "cost": 2, "inputs": [0]},
    {"id": 3, "mem": 1, "cost": 1, "inputs": [2]},
    {"id": 4, "mem": 1, "cost": 1, "inputs": []},
    {"id": 5, "mem": 1, "cost": 1, "inputs": [4]}])");
  // c runs beside b (1 to 3); d waits for a's free, so for b: 6 + 1.
  SimulationResult r =
      Timed(g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2),
                        E::Free(0), E::Compute(3)});
  EXPECT_EQ(r.critical_path, 7);
  // e runs at 0 to 1; f waits for a's free: 6 + 1.
  r = Timed(g, Schedule{E::Compute(0), E::Compute(1), E::Compute(4),
                        E::Free(0), E::Compute(5)});
  EXPECT_EQ(r.critical_path, 7);
  // Without a's free, d and f overlap b: b's end (6) is the path.
  r = Timed(g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2),
                        E::Compute(3), E::Compute(4), E::Compute(5)});
  EXPECT_EQ(r.critical_path, 6);
}

TEST(Timeline, ARefusedComputeLeavesTheCriticalPathOfTheEventsBefore) {
  // d reads b and c, and c was freed: d is refused, and b's last use is
  // its own end (10 + 5), not d's (16), though b is live and d reads it.
  Graph g = Diamond();
  SimulationResult r =
      Timed(g, Schedule{E::Compute(0), E::Compute(1), E::Compute(2), E::Free(2),
                        E::Compute(3)});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 4);
  EXPECT_EQ(r.critical_path, 15);
  EXPECT_DOUBLE_EQ(r.parallelism, 20.0 / 15.0);
  // c is refused after a's free; the gate holds b's end.
  r = Timed(g,
            Schedule{E::Compute(0), E::Compute(1), E::Free(0), E::Compute(2)});
  EXPECT_EQ(r.error_index, 3);
  EXPECT_EQ(r.critical_path, 15);
}

// Random schedules, illegal events among them, against the timeline's
// definition written out plainly: every mode of the simulator (with or
// without the critical path, with or without the memory at each event)
// gives the same figures and errors, and the critical path, the memory at
// each event, the peak, cost and length are the definition's (of the
// events before the illegal one, where there is one).
// Odd trials mostly compute a reader of the last compute's value and often
// free a compute's only input right after it, as recomputed runs do: the
// simulator applies those pairs of events in a loop of their own.
TEST(Timeline, EveryModeAgreesWithThePlainDefinitionOnRandomSchedules) {
  std::mt19937 rng(32);
  for (const char* spec : {"resnet:depth=18,batch=2,image=32", "unet",
                           "chain:n=12"}) {
    const Graph g = LoadGraph(spec);
    const int32_t n = g.num_nodes();
    for (int trial = 0; trial < 40; ++trial) {
      SCOPED_TRACE(fmt::format("{} trial {}", spec, trial));
      // The plain definition, applied while the schedule is drawn.
      std::vector<int64_t> ready(n, -1), last_use(n, -1);
      int64_t gate = 0, critical_path = 0, prefix_critical_path = 0;
      // The memory model's figures of the legal prefix.
      std::vector<int64_t> memory_at_event;
      int64_t live = 0, peak = 0, cost = 0, length = 0;
      Schedule schedule;
      int64_t legal_prefix = -1;
      auto free_value = [&](NodeId u) {
        schedule.push_back(Event::Free(u));
        gate = std::max(gate, last_use[u]);
        ready[u] = -1;
        if (legal_prefix < 0) {
          live -= g.mem(u);
          memory_at_event.push_back(live);
        }
      };
      const bool runs = trial % 2 == 1;
      NodeId previous = -1;  // the last compute
      for (int step = 0; step < 4 * n; ++step) {
        NodeId v = static_cast<NodeId>(rng() % n);
        if (runs && previous >= 0 && !g.consumers(previous).empty() &&
            rng() % 4 != 0) {
          const auto readers = g.consumers(previous);
          v = readers[rng() % readers.size()];
        }
        const bool inputs_live =
            std::ranges::all_of(g.inputs(v), [&](NodeId u) {
              return ready[u] >= 0;
            });
        if (ready[v] >= 0 && rng() % 2 == 0) {
          free_value(v);
        } else if (ready[v] < 0 && inputs_live) {
          schedule.push_back(Event::Compute(v));
          if (legal_prefix < 0) {
            memory_at_event.push_back(live + g.mem(v) + g.workspace(v));
            peak = std::max(peak, memory_at_event.back());
            live += g.mem(v);
            cost += g.cost(v);
            ++length;
          }
          int64_t start = gate;
          for (NodeId u : g.inputs(v)) start = std::max(start, ready[u]);
          const int64_t end = start + g.cost(v);
          for (NodeId u : g.inputs(v)) {
            last_use[u] = std::max(last_use[u], end);
          }
          ready[v] = last_use[v] = end;
          critical_path = std::max(critical_path, end);
          previous = v;
          if (runs && g.inputs(v).size() == 1 && rng() % 2 == 0) {
            free_value(g.inputs(v)[0]);
          }
        } else if (trial % 4 == 3 && legal_prefix < 0) {
          // One illegal event, the rest of the schedule after it.
          legal_prefix = static_cast<int64_t>(schedule.size());
          prefix_critical_path = critical_path;
          schedule.push_back(ready[v] >= 0 ? Event::Compute(v)
                                           : Event::Free(v));
        }
      }
      std::vector<SimulationResult> modes;
      for (const bool path : {false, true}) {
        for (const bool record : {false, true}) {
          modes.push_back(Simulate(
              g, schedule, {.record_timeline = record, .critical_path = path}));
        }
      }
      for (const SimulationResult& r : modes) {
        EXPECT_EQ(r.valid, modes[0].valid);
        EXPECT_EQ(r.error, modes[0].error);
        EXPECT_EQ(r.error_index, modes[0].error_index);
        EXPECT_EQ(r.peak_bytes, modes[0].peak_bytes);
        EXPECT_EQ(r.cost, modes[0].cost);
        EXPECT_EQ(r.length, modes[0].length);
        EXPECT_EQ(r.makespan, modes[0].makespan);
      }
      // Without an illegal event, only a target never computed (random
      // schedules seldom reach the loss) makes the schedule invalid.
      EXPECT_EQ(modes[0].error_index,
                legal_prefix >= 0 ? legal_prefix
                : modes[0].valid  ? -1
                                  : static_cast<int64_t>(schedule.size()))
          << modes[0].error;
      EXPECT_EQ(modes[0].error.empty(), modes[0].valid);
      EXPECT_EQ(modes[1].memory_at_event, memory_at_event);
      EXPECT_EQ(modes[3].memory_at_event, memory_at_event);
      EXPECT_EQ(static_cast<int64_t>(memory_at_event.size()),
                legal_prefix < 0 ? static_cast<int64_t>(schedule.size())
                                 : legal_prefix);
      EXPECT_EQ(modes[0].peak_bytes, peak);
      EXPECT_EQ(modes[0].cost, cost);
      EXPECT_EQ(modes[0].length, length);
      EXPECT_TRUE(modes[0].memory_at_event.empty());
      for (const SimulationResult* r : {&modes[2], &modes[3]}) {
        EXPECT_EQ(r->critical_path,
                  static_cast<double>(legal_prefix < 0 ? critical_path
                                                       : prefix_critical_path));
        EXPECT_EQ(r->parallelism, modes[2].parallelism);
      }
    }
  }
}

TEST(Timeline, NoRematFollowsTheLongestPathOnChainsAndDiamonds) {
  for (const char* spec : {"chain:n=12", "chain:n=5,mem=3,cost=7"}) {
    Graph g = LoadGraph(spec);
    SimulationResult r = Timed(g, InsertFrees(g, NoRematOrder(g)));
    EXPECT_EQ(r.critical_path, LongestPathCost(g)) << spec;
    // A chain's training graph is one path: no parallelism either.
    EXPECT_EQ(r.critical_path, r.cost) << spec;
  }
  Graph g = Diamond();
  EXPECT_EQ(Timed(g, InsertFrees(g, NoRematOrder(g))).critical_path,
            LongestPathCost(g));
}

TEST(Timeline, RevolveOnAChainTakesItsCostOnUnlimitedLanes) {
  Graph g = LoadGraph("chain:n=20");
  const AlgorithmInfo& revolve = FindAlgorithm("revolve");
  const Params params = Params::Parse({}, revolve.params, revolve.name);
  for (int64_t budget :
       BudgetGrid(MemoryLowerBound(g), NoRematPeak(g), /*count=*/5)) {
    Attempt attempt = RunAlgorithm(g, revolve, params, budget, 20);
    ASSERT_TRUE(attempt.simulation && attempt.simulation->valid);
    const SimulationResult& r = *attempt.simulation;
    EXPECT_EQ(r.critical_path, r.cost) << "budget " << budget;
    EXPECT_EQ(r.makespan, r.cost) << "budget " << budget;
  }
}

// Offload a after b reads it, prefetch it back before d; c is computed
// from b meanwhile. With SlowLink: a ends at 2, its copy runs 2..6; b runs
// 2..4, c 4..6.
Schedule OffloadA(bool prefetch_early) {
  Schedule s = {E::Compute(0), E::Compute(1), E::Offload(0)};
  if (prefetch_early) s.push_back(E::Prefetch(0));
  s.push_back(E::Compute(2));
  if (!prefetch_early) s.push_back(E::Prefetch(0));
  s.push_back(E::Compute(3));
  return s;
}

TEST(Timeline, APrefetchHiddenUnderComputeCostsNoTime) {
  // Issued before c, the prefetch could start when b ends (4), but a's
  // copy to the host ends at 6: prefetch 6..10, d waits from 6 to 10.
  const TimingModel slow = SlowLink();
  Graph g = Skip4();
  SimulationResult r = Timed(g, OffloadA(true), {.timing = &slow});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.makespan, 12);
  EXPECT_EQ(r.stall, 4);
  // With a link ten times faster (a copy takes 0.4) the prefetch (from
  // 4 to 4.4) hides under c (4..6): time is cost again.
  TimingModel fast = slow;
  fast.link = ParseLink("10:0");
  r = Timed(g, OffloadA(true), {.timing = &fast});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_DOUBLE_EQ(r.makespan, 8);
  EXPECT_DOUBLE_EQ(r.stall, 0);
  EXPECT_EQ(r.transfer_bytes, 8);
  EXPECT_EQ(r.host_peak_bytes, 4);
}

TEST(Timeline, APrefetchIssuedLateStallsCompute) {
  // Issued after c, the prefetch starts when c ends (6); over the link
  // ten times faster it takes 0.4, and d waits that long.
  TimingModel fast = SlowLink();
  fast.link = ParseLink("10:0");
  SimulationResult r = Timed(Skip4(), OffloadA(false), {.timing = &fast});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_NEAR(r.stall, 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(r.makespan, 8.4);
  // Latency adds to every copy: 0.4 + 1 for the prefetch.
  fast.link = ParseLink("10:1");
  r = Timed(Skip4(), OffloadA(false), {.timing = &fast});
  EXPECT_DOUBLE_EQ(r.makespan, 9.4);
}

TEST(Timeline, AnOffloadHoldsItsMemoryUntilItsCopyEnds) {
  // With SlowLink a's copy ends at 6, so while c runs (4..6) a, b and c
  // are all on the device: 12 bytes, as without the offload; a prefetch
  // takes a's bytes again from its start.
  const TimingModel slow = SlowLink();
  Graph g = Skip4();
  Schedule s = {E::Compute(0), E::Compute(1), E::Offload(0), E::Compute(2),
                E::Prefetch(0), E::Compute(3)};
  SimulationResult r = Timed(g, s, {.timing = &slow});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.peak_bytes, 16);  // d's compute: a (prefetched), b, c, d
  s = {E::Compute(0), E::Compute(1), E::Offload(0), E::Compute(2)};
  Graph three = GraphFromNodes(R"([
    {"id": 0, "mem": 4, "cost": 2, "inputs": []},
    {"id": 1, "mem": 4, "cost": 2, "inputs": [0]},
    {"id": 2, "mem": 4, "cost": 2, "inputs": [1]}])");
  r = Timed(three, s, {.timing = &slow});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.peak_bytes, 12);
  EXPECT_EQ(r.makespan, 6);  // the copy (2..6) ends with c
  TimingModel fast = slow;
  // The copy (2..3) ends before c starts; the memory is released when
  // the compute stream reaches the offload (4), before c takes its own.
  fast.link = ParseLink("4:0");
  r = Timed(three, s, {.timing = &fast});
  EXPECT_EQ(r.peak_bytes, 8);
}

TEST(Timeline, AWaitFreesAnOffloadsMemoryForTheNextCompute) {
  // d reads only a. a's copy runs 2..6 while b runs 2..4; waiting for it
  // stalls the stream 2 units, and c then runs without a on the device.
  const TimingModel slow = SlowLink();
  Graph g = Chain4("0");
  Schedule s = {E::Compute(0), E::Compute(1), E::Offload(0), E::Wait(0),
                E::Compute(2), E::Free(1),    E::Free(2),    E::Prefetch(0),
                E::Compute(3)};
  SimulationResult r = Timed(g, s, {.timing = &slow});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.peak_bytes, 8);
  // c 6..8; the prefetch 8..12 then stalls d by 4 more.
  EXPECT_EQ(r.stall, 6);
  EXPECT_EQ(r.makespan, 14);
  // Without the wait c runs 4..6 while a's copy still holds its memory.
  s.erase(s.begin() + 3);
  r = Timed(g, s, {.timing = &slow});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.peak_bytes, 12);
  EXPECT_EQ(r.stall, 4);
  EXPECT_EQ(r.makespan, 12);
}

TEST(Timeline, MisusedTransfersAreIllegalWithTheirEvent) {
  const TimingModel slow = SlowLink();
  Graph g = Skip4();
  struct Case {
    Schedule schedule;
    int64_t index;
    const char* reason;
  };
  const Case cases[] = {
      {{E::Compute(0), E::Offload(0), E::Compute(1)},
       2,
       "input 0 ('n0') is offloaded and not prefetched"},
      {{E::Offload(0)}, 0, "offload 0: 'n0' is not live on the device"},
      {{E::Compute(0), E::Prefetch(0)}, 1, "prefetch 0: 'n0' is already live"},
      {{E::Prefetch(1)}, 0, "prefetch 1: 'n1' is not on the host"},
      {{E::Compute(0), E::Offload(0), E::Compute(0), E::Offload(0)},
       3,
       "already has a copy on the host"},
      // The copy to the host (2..6) is still running.
      {{E::Compute(0), E::Offload(0), E::Free(0)},
       2,
       "is mid-copy (its offload ends at 6"},
      {{E::Compute(0), E::Wait(0)},
       1,
       "wait 0: 'n0' has no offload to wait for"},
      {{E::Compute(0), E::Offload(0), E::Compute(0), E::Compute(1),
        E::Compute(2), E::Free(0), E::Prefetch(0), E::Free(0)},
       7,
       "is mid-copy (its prefetch ends at"},
  };
  for (const Case& c : cases) {
    SimulationResult r = Timed(g, c.schedule, {.timing = &slow});
    EXPECT_FALSE(r.valid);
    EXPECT_EQ(r.error_index, c.index) << r.error;
    EXPECT_NE(r.error.find(c.reason), std::string::npos) << r.error;
  }
}

TEST(Timeline, AHostBudgetBoundsOffloadedBytes) {
  TimingModel timing = SlowLink();
  timing.host_budget_bytes = 7;
  // a then b offloaded while both copies are on the host: 8 bytes.
  Schedule s = {E::Compute(0), E::Compute(1), E::Offload(0),
                E::Compute(2), E::Offload(1), E::Prefetch(1),
                E::Prefetch(0), E::Compute(3)};
  SimulationResult r = Timed(Skip4(), s, {.timing = &timing});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.error_index, 4);
  EXPECT_NE(r.error.find("over the host budget of 7"), std::string::npos)
      << r.error;
  timing.host_budget_bytes = 8;
  r = Timed(Skip4(), s, {.timing = &timing});
  EXPECT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.host_peak_bytes, 8);
}

TEST(Timeline, AFreeDropsTheHostCopyOfAValueNotOnTheDevice) {
  TimingModel fast = SlowLink();
  fast.link = ParseLink("100:0");
  SimulationResult r = Timed(
      Skip4(),
      Schedule{E::Compute(0), E::Offload(0), E::Compute(0), E::Compute(1),
               E::Compute(2), E::Compute(3), E::Free(0), E::Free(0)},
      {.timing = &fast});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.host_peak_bytes, 4);
}

TEST(Links, NamedAndNumeric) {
  EXPECT_EQ(ParseLink("pcie4").bytes_per_second, 25e9);
  EXPECT_EQ(ParseLink("pcie3").bytes_per_second, 12e9);
  EXPECT_EQ(ParseLink("nvlink-c2c").bytes_per_second, 450e9);
  EXPECT_EQ(DefaultLink().name, "pcie4");
  const Link custom = ParseLink("20e9:5e-6");
  EXPECT_EQ(custom.bytes_per_second, 20e9);
  EXPECT_EQ(custom.latency_seconds, 5e-6);
  for (const char* bad : {"", "pcie5", "0", "-1", "nan", "inf", "1e9:",
                          "1e9:-1", "1e9:x", " 1e9"}) {
    EXPECT_THROW(ParseLink(bad), InputError) << bad;
  }
  // 4 MB over 25 GB/s plus 10 us, in microseconds (an abstract unit).
  TimingModel timing;
  Graph g = LoadGraph("chain:n=2");
  EXPECT_DOUBLE_EQ(timing.TransferTime(g, 4'000'000), 170);
}

}  // namespace
}  // namespace remat
