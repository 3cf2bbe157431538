// Chen et al.'s checkpointing and revolve against numbers derived by hand
// from their formulas (never from a run of the code), and every schedule
// they return on the fixture and peer graphs checked by the simulator.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "algorithms/checkpointing/checkpoint_candidates.h"
#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "tests/test_support.h"

namespace remat {
namespace {

const std::vector<std::string> kAlgorithms = {"chen_sqrtn", "chen_greedy",
                                              "chen_recursive", "revolve"};

using testing::Solve;

Graph Chain(int64_t n, int64_t mem = 1, int64_t cost = 1) {
  return LoadGraph(fmt::format("chain:n={},mem={},cost={}", n, mem, cost));
}

// C(n, k) for the small arguments the formulas below need.
int64_t Binomial(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  __int128 c = 1;
  for (int64_t i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return static_cast<int64_t>(c);
}

// docs/algorithms.md, revolve: t(l, s) = r*l - C(s + r, r - 1) with r the least
// integer such that C(s + r, s) >= l.
int64_t GriewankT(int64_t l, int64_t s) {
  int64_t r = 0;
  while (Binomial(s + r, s) < l) ++r;
  return r * l - Binomial(s + r, r - 1);
}

// The optimal cost on chain:n=N (unit sizes) at budget B >= 3.
int64_t OptimalChainCost(int64_t n, int64_t budget) {
  return n + 1 + GriewankT(n + 1, budget - 2);
}

TEST(RevolveFormula, MatchesTheSpecifiedNumbersForN16) {
  const int64_t expected[] = {153, 67, 53, 47, 44, 43};
  for (int64_t b = 3; b <= 8; ++b) {
    EXPECT_EQ(OptimalChainCost(16, b), expected[b - 3]) << b;
  }
  EXPECT_EQ(OptimalChainCost(16, 17), 34);
  EXPECT_EQ(OptimalChainCost(16, 18), 33);
}

TEST(Revolve, ReachesTheOptimalCostOnUniformChainsAtEveryBudget) {
  for (int64_t n : {1, 2, 3, 5, 12, 16, 33, 100, 1000}) {
    const Graph g = Chain(n);
    // Beyond N + 2 slots nothing is recomputed: check a few budgets past it.
    for (int64_t b = 3; b <= n + 6; ++b) {
      const SolveResult r = Solve("revolve", g, b);
      ASSERT_EQ(r.status, Status::kFeasible) << "n=" << n << " B=" << b;
      ASSERT_EQ(r.cost, OptimalChainCost(n, b)) << "n=" << n << " B=" << b;
      ASSERT_LE(r.peak_bytes, b);
    }
  }
}

TEST(Revolve, SlotsParameterGivesTheBinomialCostAndPeak) {
  // s slots (one holding the free input) keep s - 1 states, plus the two
  // values of a step and the gradient in flight: peak s + 2.
  const int64_t n = 200;
  const Graph g = Chain(n);
  for (int64_t s = 1; s <= n + 1; ++s) {
    const SolveResult r =
        Solve("revolve", g, kUnboundedBudget, {"slots=" + std::to_string(s)});
    ASSERT_EQ(r.cost, n + 1 + GriewankT(n + 1, s)) << s;
    ASSERT_EQ(r.peak_bytes, std::min(s + 2, n + 2)) << s;
  }
}

TEST(Revolve, ScalesWithMemAndCost) {
  const Graph g = Chain(16, 3, 2);
  for (int64_t b = 3; b <= 8; ++b) {
    const SolveResult r = Solve("revolve", g, 3 * b);
    EXPECT_EQ(r.status, Status::kFeasible);
    EXPECT_EQ(r.cost, 2 * OptimalChainCost(16, b)) << b;
  }
}

TEST(Revolve, BelowTheLowerBoundReturnsItsSmallestPeakAsInfeasible) {
  const SolveResult r = Solve("revolve", Chain(16), 2);
  EXPECT_EQ(r.status, Status::kInfeasible);
  EXPECT_TRUE(r.has_schedule);
  EXPECT_EQ(r.peak_bytes, 3);
  EXPECT_EQ(r.cost, OptimalChainCost(16, 3));
  EXPECT_NE(r.message.find("no slot count fits"), std::string::npos);
}

TEST(Revolve, RefusesScheduleOverMaxComputes) {
  // One slot on chain:n=1000 recomputes 1001*1000/2 times.
  const SolveResult r =
      Solve("revolve", Chain(1000), 3, {"max_computes=100000"});
  EXPECT_EQ(r.status, Status::kTooLarge);
  EXPECT_FALSE(r.has_schedule);
}

TEST(Revolve, ExpiredDeadlineIsATimeout) {
  const SolveResult r = Solve("revolve", Chain(1000), 10, {}, 1e-9);
  EXPECT_EQ(r.status, Status::kTimeout);
}

// Chen's sqrt(n) on chain:n=N, all N forward values candidates, s =
// floor(sqrt(N)): checkpoints f_s, f_2s, ..., f_ms (m = floor(N/s)); each of
// the m segments recomputes its s - 1 inner values once, the last q = N - ms
// values are not recomputed. Peak: stage j holds j - 1 checkpoints, s - 1
// recomputed values and two gradients (j + s, largest at j = m); the
// backward of the last segment starts with m checkpoints, its q values, the
// loss and g_N (m + q + 2).
struct SqrtChain {
  int64_t s, m, q;
  explicit SqrtChain(int64_t n, int64_t step)
      : s(step), m(n / step), q(n - (n / step) * step) {}
  int64_t cost(int64_t n) const { return 2 * n + 1 + m * (s - 1); }
  int64_t peak() const { return m + std::max(s, q + 2); }
};

int64_t FloorSqrt(int64_t k) {
  int64_t s = 0;
  while ((s + 1) * (s + 1) <= k) ++s;
  return s;
}

TEST(ChenSqrtN, KeepsSqrtNCheckpointsForOneExtraForwardPass) {
  for (int64_t n : {4, 10, 16, 50, 99, 100, 1000}) {
    const SqrtChain expect(n, FloorSqrt(n));
    for (const char* candidates : {"candidates=ap", "candidates=all"}) {
      const SolveResult r =
          Solve("chen_sqrtn", Chain(n), kUnboundedBudget, {candidates});
      EXPECT_EQ(r.status, Status::kFeasible);
      EXPECT_EQ(r.extra["candidates"], n) << n;
      EXPECT_EQ(r.extra["checkpoints"], expect.m) << n;
      EXPECT_EQ(r.cost, expect.cost(n)) << n;
      EXPECT_LE(r.cost - (2 * n + 1), n) << "at most one extra forward pass";
      EXPECT_EQ(r.peak_bytes, expect.peak()) << n;
    }
  }
  const SolveResult r = Solve("chen_sqrtn", Chain(100, 5, 7), kUnboundedBudget);
  EXPECT_EQ(r.cost, 7 * SqrtChain(100, 10).cost(100));
  EXPECT_EQ(r.peak_bytes, 5 * SqrtChain(100, 10).peak());
}

TEST(ChenSqrtN, SpeedSelectionKeepsConvolutionAndMatmulOutputs) {
  // in -> conv -> relu -> matmul -> relu2 -> loss, backward g_x of each x
  // reading x and the gradient of its consumer. Speed mode keeps conv and
  // matmul: relu is recomputed once (its stage runs from conv), so is the
  // input (the first segment is recomputed from the graph's input), relu2
  // sits in the last segment. Forward 6 + backward 5 + 2.
  const Graph g = testing::GraphFromNodes(R"([
    {"id": 0, "name": "in", "op": "input", "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "name": "c", "op": "conv2d", "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 2, "name": "r", "op": "relu", "mem": 1, "cost": 1, "inputs": [1]},
    {"id": 3, "name": "m", "op": "matmul", "mem": 1, "cost": 1, "inputs": [2]},
    {"id": 4, "name": "r2", "op": "relu", "mem": 1, "cost": 1, "inputs": [3]},
    {"id": 5, "name": "l", "kind": "loss", "mem": 1, "cost": 1, "inputs": [4]},
    {"id": 6, "kind": "backward", "grad_of": 4, "mem": 1, "cost": 1, "inputs": [4, 5]},
    {"id": 7, "kind": "backward", "grad_of": 3, "mem": 1, "cost": 1, "inputs": [3, 6]},
    {"id": 8, "kind": "backward", "grad_of": 2, "mem": 1, "cost": 1, "inputs": [2, 7]},
    {"id": 9, "kind": "backward", "grad_of": 1, "mem": 1, "cost": 1, "inputs": [1, 8]},
    {"id": 10, "kind": "backward", "grad_of": 0, "mem": 1, "cost": 1, "inputs": [0, 9]}])");
  const SolveResult r =
      Solve("chen_sqrtn", g, kUnboundedBudget, {"select=speed"});
  EXPECT_EQ(r.status, Status::kFeasible);
  EXPECT_EQ(r.extra["checkpoints"], 2);
  EXPECT_EQ(r.cost, 13);
  // The chain has no convolutions: nothing is kept, and it says so.
  const SolveResult none =
      Solve("chen_sqrtn", Chain(9), kUnboundedBudget, {"select=speed"});
  EXPECT_EQ(none.cost, 19);
  EXPECT_NE(none.message.find("nothing is checkpointed"), std::string::npos);
}

// The most times any node is computed in `algorithm`'s schedule.
int64_t MostComputesOfANode(const std::string& algorithm, const Graph& graph,
                            std::vector<std::string> params) {
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  const Attempt attempt =
      RunAlgorithm(graph, info, Params::Parse(params, info.params, algorithm),
                   kUnboundedBudget, 0);
  std::vector<int64_t> computes(graph.num_nodes(), 0);
  int64_t most = 0;
  for (const Event& e : attempt.output.schedule.value()) {
    if (e.op == Event::Op::kCompute) most = std::max(most, ++computes[e.node]);
  }
  return most;
}

TEST(ChenSqrtN, SpeedModeRecomputesEachValueOnceAcrossSkipConnections) {
  // A residual stream: a_i = add(c_i, a_(i-1)) with c_i = conv(a_(i-1)),
  // a_0 = in. The backward of a conv reads its input; that of an add reads
  // nothing. Speed mode keeps c1, c2, c3: segments {in, c1}, {a1, c2},
  // {a2, c3}, {a3, l}; stages 4 (g6), 3 (g5, g4), 2 (g3, g2), 1 (g1, g0).
  // Stage 3 reads a2, whose recomputation needs a1 and in (not
  // checkpoints): 3 recomputes. Stage 2 reads a1 and stage 1 reads in: kept
  // since stage 3, not recomputed again. Forward 8 + 3 + backward 7 = 18;
  // dropping them after each stage would recompute in and a1 again
  // (2 + 1 more, 21), in four times in all.
  const Graph g = testing::GraphFromNodes(R"([
    {"id": 0, "name": "in", "op": "input", "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "name": "c1", "op": "conv2d", "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 2, "name": "a1", "op": "add", "mem": 1, "cost": 1, "inputs": [1, 0]},
    {"id": 3, "name": "c2", "op": "conv2d", "mem": 1, "cost": 1, "inputs": [2]},
    {"id": 4, "name": "a2", "op": "add", "mem": 1, "cost": 1, "inputs": [3, 2]},
    {"id": 5, "name": "c3", "op": "conv2d", "mem": 1, "cost": 1, "inputs": [4]},
    {"id": 6, "name": "a3", "op": "add", "mem": 1, "cost": 1, "inputs": [5, 4]},
    {"id": 7, "name": "l", "kind": "loss", "mem": 1, "cost": 1, "inputs": [6]},
    {"id": 8, "kind": "backward", "grad_of": 6, "mem": 1, "cost": 1, "inputs": [7]},
    {"id": 9, "kind": "backward", "grad_of": 5, "mem": 1, "cost": 1, "inputs": [4, 8]},
    {"id": 10, "kind": "backward", "grad_of": 4, "mem": 1, "cost": 1, "inputs": [9, 8]},
    {"id": 11, "kind": "backward", "grad_of": 3, "mem": 1, "cost": 1, "inputs": [2, 10]},
    {"id": 12, "kind": "backward", "grad_of": 2, "mem": 1, "cost": 1, "inputs": [11, 10]},
    {"id": 13, "kind": "backward", "grad_of": 1, "mem": 1, "cost": 1, "inputs": [0, 12]},
    {"id": 14, "kind": "backward", "grad_of": 0, "mem": 1, "cost": 1, "inputs": [13, 12]}])");
  const SolveResult r =
      Solve("chen_sqrtn", g, kUnboundedBudget, {"select=speed"});
  EXPECT_EQ(r.status, Status::kFeasible);
  EXPECT_EQ(r.extra["checkpoints"], 3);
  EXPECT_EQ(r.cost, 18);
  EXPECT_EQ(MostComputesOfANode("chen_sqrtn", g, {"select=speed"}), 2);
}

// Speed mode's schedule is valid and computes no node more than twice.
void CheckSpeedMode(const Graph& graph, const std::string& label) {
  const SolveResult r =
      Solve("chen_sqrtn", graph, kUnboundedBudget, {"select=speed"});
  if (r.status == Status::kUnsupported) return;
  EXPECT_TRUE(r.valid) << label << ": " << r.message;
  EXPECT_LE(MostComputesOfANode("chen_sqrtn", graph, {"select=speed"}), 2)
      << label;
}

TEST(ChenSqrtN, SpeedModeComputesEveryNodeAtMostTwice) {
  for (const char* spec :
       {"resnet:depth=56,batch=1,image=32", "resnet:depth=18,batch=1,image=64",
        "unet:levels=4,base=8,batch=1,image=188,padding=valid",
        "transformer:layers=2,seq=16,batch=1", "pspnet:image=64,batch=1"}) {
    CheckSpeedMode(LoadGraph(spec), spec);
  }
}

TEST(ChenGreedy, FixedThresholdKeepsEveryBPlusOneth) {
  // Unit memory: the running sum first exceeds b at the (b+1)-th value.
  for (int64_t b : {1, 3, 7, 20}) {
    const SqrtChain expect(100, b + 1);
    const SolveResult r = Solve("chen_greedy", Chain(100), kUnboundedBudget,
                                {"threshold=" + std::to_string(b)});
    EXPECT_EQ(r.extra["checkpoints"], expect.m) << b;
    EXPECT_EQ(r.cost, expect.cost(100)) << b;
    EXPECT_EQ(r.peak_bytes, expect.peak()) << b;
  }
}

TEST(ChenGreedy, SearchFindsTheCheapestPlanThatFits) {
  // chain:n=100. b = 0 keeps all (x = 100, y = 1): next b = sqrt(50) -> 7;
  // b = 7 keeps 12 (y = 8): sqrt(48) -> 6; b = 6 keeps 14 (y = 7):
  // sqrt(49) = 7. Grid: from the smallest y (1) to 7 sqrt 2 = 9.9 in 6
  // steps of 1: b = 2..7. Peaks (SqrtChain with s = b + 1): b=7: 20,
  // b=6: 21, b=5: 22, b=4: 25, b=3: 29, b=2: 36; b=0 keeps everything.
  const Graph g = Chain(100);
  SolveResult r = Solve("chen_greedy", g, kUnboundedBudget);
  EXPECT_EQ(r.cost, 201);  // b = 0: no recomputation
  r = Solve("chen_greedy", g, 25);
  EXPECT_EQ(r.status, Status::kFeasible);
  EXPECT_EQ(r.cost, SqrtChain(100, 5).cost(100));  // b = 4: 281, cheapest
  r = Solve("chen_greedy", g, 20);
  EXPECT_EQ(r.status, Status::kFeasible);
  EXPECT_EQ(r.cost, SqrtChain(100, 8).cost(100));
  r = Solve("chen_greedy", g, 19);
  EXPECT_EQ(r.status, Status::kInfeasible);
  EXPECT_EQ(r.peak_bytes, 20);
  EXPECT_NE(r.message.find("no threshold tried fits"), std::string::npos);
}

// Split in halves: T(1) = 0, T(L) = k + T(L - k) + T(k) with k = floor(L/2)
// forward steps to reverse L steps; the nesting holds ceil(log2 L) states.
int64_t BisectionT(int64_t l) {
  if (l <= 1) return 0;
  const int64_t k = l / 2;
  return k + BisectionT(l - k) + BisectionT(k);
}

TEST(ChenRecursive, LogarithmicMemoryForNLogNRecomputation) {
  for (int64_t n : {1, 2, 7, 16, 100, 1000, 4000}) {
    const SolveResult r = Solve("chen_recursive", Chain(n), kUnboundedBudget);
    EXPECT_EQ(r.status, Status::kFeasible);
    EXPECT_EQ(r.cost, n + 1 + BisectionT(n + 1)) << n;
    const auto depth =
        static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(n + 1))));
    EXPECT_LE(r.peak_bytes, depth + 3) << n;
    EXPECT_LE(r.cost, 2 * n + 1 + n * depth) << n;
  }
}

// U-Net in miniature: the input x and the labels y both start the forward
// graph, the encoder output e1 skips to the decoder, and the loss reads y.
// Every value after x has a read skipping over it (e1 into d1, y into the
// loss), so x, which nothing precedes, is the only articulation point.
Graph SkipEverywhere() {
  return testing::GraphFromNodes(R"([
    {"id": 0, "name": "x", "mem": 1, "cost": 1, "inputs": []},
    {"id": 1, "name": "y", "mem": 1, "cost": 1, "inputs": []},
    {"id": 2, "name": "e1", "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 3, "name": "e2", "mem": 1, "cost": 1, "inputs": [2]},
    {"id": 4, "name": "d2", "mem": 1, "cost": 1, "inputs": [3]},
    {"id": 5, "name": "d1", "mem": 1, "cost": 1, "inputs": [4, 2]},
    {"id": 6, "name": "loss", "kind": "loss", "mem": 1, "cost": 1, "inputs": [5, 1]},
    {"id": 7, "kind": "backward", "grad_of": 5, "mem": 1, "cost": 1, "inputs": [5, 6]},
    {"id": 8, "kind": "backward", "grad_of": 4, "mem": 1, "cost": 1, "inputs": [4, 7]},
    {"id": 9, "kind": "backward", "grad_of": 3, "mem": 1, "cost": 1, "inputs": [3, 8]},
    {"id": 10, "kind": "backward", "grad_of": 2, "mem": 1, "cost": 1, "inputs": [2, 9, 7]}])");
}

// Two transformer blocks in miniature: each makes a constant of its own
// (m1, m2: an attention mask, no inputs) and a statistic only its backward
// reads (r1, r2: a normalization's saved mean). Neither is read across a
// block's output, so x0, x1 and x2 are articulation points; a view of the
// graph that ties every input-less value to one source and every value
// without forward readers to one sink found none.
Graph BlocksWithConstantsAndSavedStatistics() {
  return testing::GraphFromNodes(R"([
    {"id": 0, "name": "x0", "mem": 4, "cost": 1, "inputs": []},
    {"id": 1, "name": "m1", "mem": 1, "cost": 1, "inputs": []},
    {"id": 2, "name": "r1", "mem": 1, "cost": 1, "inputs": [0]},
    {"id": 3, "name": "x1", "mem": 4, "cost": 1, "inputs": [0, 1]},
    {"id": 4, "name": "m2", "mem": 1, "cost": 1, "inputs": []},
    {"id": 5, "name": "r2", "mem": 1, "cost": 1, "inputs": [3]},
    {"id": 6, "name": "x2", "mem": 4, "cost": 1, "inputs": [3, 4]},
    {"id": 7, "name": "loss", "kind": "loss", "mem": 1, "cost": 1, "inputs": [6]},
    {"id": 8, "kind": "backward", "grad_of": 6, "mem": 4, "cost": 1, "inputs": [5, 7]},
    {"id": 9, "kind": "backward", "grad_of": 3, "mem": 4, "cost": 1, "inputs": [2, 8]}])");
}

TEST(Candidates, ArticulationPointsOfTheForwardGraph) {
  std::string why;
  const Graph unet = SkipEverywhere();
  auto fwd = PrepareCheckpointGraph(unet, why);
  ASSERT_TRUE(fwd) << why;
  EXPECT_EQ(ArticulationCandidates(unet, *fwd), (std::vector<NodeId>{0}));
  EXPECT_EQ(AllCandidates(unet, *fwd).size(), 6u);
  // The fixture's skip goes from conv1 into concat: conv1 (the only input)
  // and concat are cut points, pool, conv2 and up are not.
  const Graph skip =
      LoadGraph(testing::SourceDir() + "/tests/fixtures/skip_connections.json");
  fwd = PrepareCheckpointGraph(skip, why);
  ASSERT_TRUE(fwd) << why;
  EXPECT_EQ(ArticulationCandidates(skip, *fwd), (std::vector<NodeId>{0, 4}));
  const Graph chain = Chain(5);
  fwd = PrepareCheckpointGraph(chain, why);
  EXPECT_EQ(ArticulationCandidates(chain, *fwd),
            (std::vector<NodeId>{0, 1, 2, 3, 4}));
  const Graph blocks = BlocksWithConstantsAndSavedStatistics();
  fwd = PrepareCheckpointGraph(blocks, why);
  ASSERT_TRUE(fwd) << why;
  EXPECT_EQ(ArticulationCandidates(blocks, *fwd),
            (std::vector<NodeId>{0, 3, 6}));
}

TEST(Candidates, SkipConnectionsEverywhereAreReportedNotHidden) {
  // x alone cuts nothing off: every algorithm keeps the rest, and says
  // how far from the budget that leaves it.
  const Graph g = SkipEverywhere();
  const int64_t lb = MemoryLowerBound(g);
  for (const std::string& algorithm : kAlgorithms) {
    const SolveResult r = Solve(algorithm, g, lb);
    EXPECT_TRUE(r.valid) << algorithm;
    EXPECT_EQ(r.status, Status::kInfeasible) << algorithm;
    EXPECT_GT(r.peak_bytes, lb) << algorithm;
  }
}

TEST(Candidates, GraphsWithoutBackwardAreUnsupported) {
  const Graph g =
      LoadGraph(testing::SourceDir() + "/tests/fixtures/diamond.json");
  for (const std::string& algorithm : kAlgorithms) {
    const SolveResult r = Solve(algorithm, g, kUnboundedBudget);
    EXPECT_EQ(r.status, Status::kUnsupported) << algorithm;
    EXPECT_FALSE(r.message.empty());
  }
}

// Every schedule on every fixture and corpus graph, at budgets from the
// lower bound to the NoRemat peak, must be valid; a budget algorithm must
// fit whenever it says feasible, which Judge decides from the simulation.
void CheckEverySchedule(const Graph& graph, const std::string& label) {
  const int64_t lb = MemoryLowerBound(graph);
  const int64_t top = NoRematPeak(graph);
  for (const std::string& algorithm : kAlgorithms) {
    for (int64_t budget : {lb, (lb + top) / 2, top, kUnboundedBudget}) {
      const SolveResult r = Solve(algorithm, graph, budget);
      if (r.status == Status::kUnsupported) continue;
      EXPECT_TRUE(r.valid) << label << " " << algorithm << ": " << r.message;
      EXPECT_NE(r.status, Status::kError) << label << " " << algorithm;
    }
  }
  CheckSpeedMode(graph, label);
}

TEST(SegmentSchedules, ValidOnEveryFixtureAndCorpusGraph) {
  std::vector<std::string> specs = testing::FixtureGraphSpecs();
  specs.push_back("chain:n=64,mem=4MiB,cost=100");
  for (const std::string& spec : specs)
    CheckEverySchedule(LoadGraph(spec), spec);
  CheckEverySchedule(BlocksWithConstantsAndSavedStatistics(),
                     "blocks with constants and saved statistics");
}

TEST(SegmentSchedules, ValidOnEveryPeerGraph) {
  const std::filesystem::path dir =
      testing::SourceDir() + "/../shared/peer-graphs";
  if (!std::filesystem::exists(dir)) REMAT_SKIP_UNLESS_CI("no " << dir);
  std::set<std::string> formats;
  for (const GraphFormat* format : AllGraphFormats()) {
    formats.insert(format->name);
  }
  const std::pair<const char*, const char*> corpora[] = {
      {"kusumoto2019", "kusumoto"}, {"checkmate2020", "checkmate"}};
  int checked = 0;
  for (const auto& [folder, format] : corpora) {
    if (!formats.contains(format)) continue;  // importer not built
    std::vector<std::string> files;
    for (const auto& entry :
         std::filesystem::directory_iterator(dir / folder)) {
      files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      CheckEverySchedule(LoadGraph(file), file);
      ++checked;
    }
  }
  if (checked == 0) REMAT_SKIP_UNLESS_CI("no peer-graph importer is built");
}

}  // namespace
}  // namespace remat
