// TwRemat: tree decompositions, the separator hierarchy, the recursion and
// its knobs, checked against the bounds of docs/algorithms.md, "twremat".
#include "algorithms/twremat/twremat.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "algorithms/twremat/separator_hierarchy.h"
#include "algorithms/twremat/tree_decomposition.h"
#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/liveness.h"
#include "model/registry.h"
#include "model/simulator.h"
#include "test_support.h"

namespace remat {
namespace {

// A random (partial) k-tree, oriented from older to newer nodes: treewidth
// at most k. Each new node reads a random k-clique — all of it, or for a
// partial k-tree a random non-empty subset.
Graph RandomKTree(int32_t n, int32_t k, uint64_t seed, bool partial = true) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  GraphBuilder b("k-tree");
  std::vector<std::vector<NodeId>> cliques;
  std::vector<NodeId> first;
  for (NodeId v = 0; v <= k && v < n; ++v) {
    b.add(NodeKind::kForward, uniform(1, 8), uniform(1, 5), first);
    first.push_back(v);
  }
  for (NodeId drop = 0; drop <= k && n > k; ++drop) {
    std::vector<NodeId> clique;
    for (NodeId v = 0; v <= k; ++v) {
      if (v != drop) clique.push_back(v);
    }
    cliques.push_back(clique);
  }
  for (NodeId v = k + 1; v < n; ++v) {
    const std::vector<NodeId> clique =
        cliques[uniform(0, static_cast<int64_t>(cliques.size()) - 1)];
    std::vector<NodeId> inputs;
    for (NodeId u : clique) {
      if (!partial || uniform(0, 2) > 0) inputs.push_back(u);
    }
    if (inputs.empty()) inputs.push_back(clique[0]);
    NodeSpec spec;
    spec.id = v;
    spec.mem = uniform(1, 8);
    spec.cost = uniform(1, 5);
    spec.workspace = uniform(0, 3);
    spec.inputs = inputs;
    b.add_node(spec);
    for (size_t i = 0; i < clique.size(); ++i) {
      std::vector<NodeId> next = clique;
      next[i] = v;
      cliques.push_back(next);
    }
  }
  return std::move(b).Build();
}

// The textbook greedy elimination, recomputing every key at every step:
// the reference for the incremental implementation's order.
std::vector<NodeId> NaiveEliminationOrder(const Graph& graph,
                                          EliminationOrder order) {
  const int32_t n = graph.num_nodes();
  std::vector<std::set<NodeId>> adj(n);
  for (NodeId v = 0; v < n; ++v) {
    for (NodeId u : graph.inputs(v)) {
      adj[v].insert(u);
      adj[u].insert(v);
    }
  }
  std::set<NodeId> alive;
  for (NodeId v = 0; v < n; ++v) alive.insert(v);
  std::vector<NodeId> result;
  while (true) {
    int64_t edges = 0;
    for (NodeId v : alive) edges += static_cast<int64_t>(adj[v].size());
    const auto r = static_cast<int64_t>(alive.size());
    if (edges / 2 == r * (r - 1) / 2) break;
    std::tuple<int64_t, int64_t, NodeId> best = {INT64_MAX, 0, 0};
    for (NodeId v : alive) {
      int64_t fill = 0;
      if (order == EliminationOrder::kMinFill) {
        for (NodeId a : adj[v]) {
          for (NodeId b : adj[v]) fill += a < b && !adj[a].contains(b);
        }
      }
      best = std::min(best, {fill, static_cast<int64_t>(adj[v].size()), v});
    }
    const NodeId v = std::get<2>(best);
    for (NodeId a : adj[v]) {
      adj[a].erase(v);
      for (NodeId b : adj[v]) {
        if (a != b) adj[a].insert(b);
      }
    }
    adj[v].clear();
    alive.erase(v);
    result.push_back(v);
  }
  return result;
}

TreeDecomposition Decompose(
    const Graph& graph, EliminationOrder order = EliminationOrder::kMinFill) {
  std::optional<TreeDecomposition> td = DecomposeByElimination(graph, order);
  EXPECT_TRUE(td.has_value());
  return *td;
}

std::vector<std::string> GraphSpecs() {
  std::vector<std::string> specs = testing::FixtureGraphSpecs();
  specs.push_back("chain:n=100");
  return specs;
}

TEST(TreeDecompositionTest, ValidOnEveryFixtureAndRandomGraph) {
  for (const auto& spec : GraphSpecs()) {
    const Graph graph = LoadGraph(spec);
    for (auto order :
         {EliminationOrder::kMinFill, EliminationOrder::kMinDegree}) {
      EXPECT_EQ(CheckTreeDecomposition(graph, Decompose(graph, order)), "")
          << spec;
    }
  }
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Graph graph = RandomKTree(60, 1 + seed % 4, seed);
    for (auto order :
         {EliminationOrder::kMinFill, EliminationOrder::kMinDegree}) {
      EXPECT_EQ(CheckTreeDecomposition(graph, Decompose(graph, order)), "")
          << seed;
    }
  }
}

TEST(TreeDecompositionTest, IncrementalOrderMatchesRecomputingEveryStep) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const Graph graph = RandomKTree(40, 1 + seed % 5, seed);
    for (auto order :
         {EliminationOrder::kMinFill, EliminationOrder::kMinDegree}) {
      EXPECT_EQ(Decompose(graph, order).elimination_order,
                NaiveEliminationOrder(graph, order))
          << "seed " << seed;
    }
  }
}

TEST(TreeDecompositionTest, WidthOfKnownGraphs) {
  // A chain's training graph is a ladder (f_i - f_i+1, g_i - g_i+1, f_i -
  // g_i): treewidth 2, and min-fill finds it.
  EXPECT_EQ(Decompose(LoadGraph("chain:n=50")).width(), 2);
  // A single path: width 1. A complete DAG on 6 nodes: one bag, width 5.
  GraphBuilder path("path"), complete("complete");
  std::vector<NodeId> all;
  for (NodeId v = 0; v < 6; ++v) {
    path.add(NodeKind::kForward, 1, 1,
             v == 0 ? std::vector<NodeId>{} : std::vector<NodeId>{v - 1});
    complete.add(NodeKind::kForward, 1, 1, all);
    all.push_back(v);
  }
  EXPECT_EQ(Decompose(std::move(path).Build()).width(), 1);
  const TreeDecomposition k6 = Decompose(std::move(complete).Build());
  EXPECT_EQ(k6.width(), 5);
  EXPECT_EQ(k6.num_bags(), 1);
  // A k-tree is chordal with largest clique k + 1: some vertex always has
  // fill 0, so min-fill finds a perfect elimination order of width exactly
  // k. (On partial k-trees greedy min-fill may exceed k; it is a heuristic.)
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const int32_t k = 1 + static_cast<int32_t>(seed % 4);
    EXPECT_EQ(Decompose(RandomKTree(200, k, seed, false)).width(), k) << seed;
  }
}

TEST(TreeDecompositionTest, CheckerFindsBrokenDecompositions) {
  // The path 0 -> 1 -> 2.
  GraphBuilder b("path");
  b.add(NodeKind::kForward, 1, 1, {});
  b.add(NodeKind::kForward, 1, 1, {0});
  b.add(NodeKind::kForward, 1, 1, {1});
  const Graph graph = std::move(b).Build();
  auto make = [](std::vector<std::vector<NodeId>> bags,
                 std::vector<int32_t> parent) {
    TreeDecomposition td;
    for (const auto& bag : bags) {
      td.bag_vertices.insert(td.bag_vertices.end(), bag.begin(), bag.end());
      td.bag_offsets.push_back(static_cast<int64_t>(td.bag_vertices.size()));
    }
    td.parent = std::move(parent);
    return td;
  };
  EXPECT_EQ(CheckTreeDecomposition(graph, make({{0, 1}, {1, 2}}, {1, -1})), "");
  EXPECT_NE(CheckTreeDecomposition(graph, make({{0}, {1, 2}}, {1, -1})), "");
  EXPECT_NE(CheckTreeDecomposition(graph, make({{0, 1}, {2}}, {1, -1})), "");
  // Node 1's bags {0, 1} and {1, 2} are joined only through {0}.
  EXPECT_NE(
      CheckTreeDecomposition(graph, make({{0, 1}, {0}, {1, 2}}, {1, -1, 1})),
      "");
  EXPECT_NE(CheckTreeDecomposition(graph, make({{0, 1}, {1, 2}}, {-1, -1})),
            "");
  EXPECT_NE(CheckTreeDecomposition(graph, make({{0, 1}, {1, 2}}, {1, 0})), "");
}

TEST(SeparatorHierarchyTest, BalancedAndEveryVertexOwnedOnce) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Graph graph = RandomKTree(300, 1 + seed % 3, seed);
    const TreeDecomposition td = Decompose(graph);
    const SeparatorHierarchy hier(graph, td);
    ASSERT_EQ(hier.num_nodes(), td.num_bags());
    EXPECT_LE(hier.height(),
              std::ceil(std::log2(static_cast<double>(td.num_bags()))) + 1);
    std::vector<int32_t> seen(graph.num_nodes(), 0);
    for (int32_t h = 0; h < hier.num_nodes(); ++h) {
      const int32_t size = hier.subtree_end(h) - h;
      for (int32_t child : hier.children(h)) {
        EXPECT_EQ(hier.parent(child), h);
        EXPECT_LE(2 * (hier.subtree_end(child) - child), size);
      }
      for (NodeId v : hier.bag(h)) {
        ++seen[v];
        EXPECT_EQ(hier.owner(v), h);
        EXPECT_TRUE(hier.Contains(h, v));
      }
      for (size_t i = 1; i < hier.bag(h).size(); ++i) {
        EXPECT_LT(graph.topo_rank(hier.bag(h)[i - 1]),
                  graph.topo_rank(hier.bag(h)[i]));
      }
    }
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      EXPECT_EQ(seen[v], 1);
      // The edges leave all(h) only towards the separators above h.
      const int32_t h = hier.owner(v);
      for (NodeId u : graph.inputs(v)) {
        const int32_t a = hier.owner(u);
        const bool ancestor = a <= h && h < hier.subtree_end(a);
        const bool descendant = h <= a && a < hier.subtree_end(h);
        EXPECT_TRUE(ancestor || descendant) << u << " -> " << v;
        if (descendant && a != h) {
          EXPECT_TRUE(hier.Contains(hier.ChildContaining(h, u), u));
        }
      }
    }
  }
}

struct Solved {
  AlgorithmOutput output;
  SimulationResult sim;
};

Solved Solve(const Graph& graph, std::vector<std::string> params,
             int64_t budget = kUnboundedBudget) {
  const AlgorithmInfo& info = FindAlgorithm("twremat");
  SolveRequest request;
  request.budget_bytes = budget;
  request.params = Params::Parse(params, info.params, "twremat");
  Solved s{info.create()->Solve(graph, request), {}};
  if (s.output.schedule) s.sim = Simulate(graph, *s.output.schedule);
  return s;
}

TEST(TwRematTest, EverySettingGivesAValidSchedule) {
  std::vector<std::string> specs = GraphSpecs();
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Graph graph = RandomKTree(80, 1 + seed % 3, seed);
    for (const auto& params :
         std::vector<std::vector<std::string>>{{},
                                               {"max_depth=1"},
                                               {"max_depth=3"},
                                               {"memory_limit=30"},
                                               {"elimination=min_degree"}}) {
      Solved s = Solve(graph, params);
      ASSERT_TRUE(s.output.schedule) << seed;
      EXPECT_TRUE(s.sim.valid) << seed << ": " << s.sim.error;
    }
  }
  for (const auto& spec : specs) {
    const Graph graph = LoadGraph(spec);
    for (int32_t depth = -1; depth <= 4; ++depth) {
      Solved s = Solve(graph, {fmt::format("max_depth={}", depth)});
      ASSERT_TRUE(s.output.schedule) << spec;
      EXPECT_TRUE(s.sim.valid) << spec << ": " << s.sim.error;
    }
  }
}

TEST(TwRematTest, DepthZeroIsNoRemat) {
  for (const auto& spec : GraphSpecs()) {
    const Graph graph = LoadGraph(spec);
    Solved s = Solve(graph, {"max_depth=0"});
    ASSERT_TRUE(s.output.schedule);
    EXPECT_EQ(*s.output.schedule, InsertFrees(graph, NoRematOrder(graph)))
        << spec;
  }
}

// docs/algorithms.md, "twremat": each call recurses into a child at most
// once per separator node it produces plus once more, and separators hold
// at most w + 1 nodes, so a node owned at hierarchy depth d is computed at
// most (w + 2)^d times.
TEST(TwRematTest, RecomputationsWithinTheDepthBound) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Graph graph = RandomKTree(150, 1 + seed % 3, seed);
    const TreeDecomposition td = Decompose(graph);
    const SeparatorHierarchy hier(graph, td);
    TwRematSchedule r = GenerateTwRemat(graph, hier, {});
    ASSERT_EQ(r.status, Status::kFeasible);
    std::vector<int64_t> times(graph.num_nodes(), 0);
    for (const Event& e : r.schedule)
      times[e.node] += e.op == Event::Op::kCompute;
    for (NodeId v = 0; v < graph.num_nodes(); ++v) {
      const double bound = std::pow(td.width() + 2, hier.depth(hier.owner(v)));
      EXPECT_LE(static_cast<double>(times[v]), bound) << v;
    }
  }
}

// The memory bound of docs/algorithms.md, "twremat": peak <= (h + 1)
// (w + 1 + D) max mem + max workspace, with D the largest in-degree.
int64_t PeakBound(const Graph& graph) {
  const TreeDecomposition td = Decompose(graph);
  const SeparatorHierarchy hier(graph, td);
  int64_t max_mem = 0, max_ws = 0, max_in = 0;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    max_mem = std::max(max_mem, graph.mem(v));
    max_ws = std::max(max_ws, graph.workspace(v));
    max_in = std::max<int64_t>(max_in, graph.inputs(v).size());
  }
  return (hier.height() + 1) * (td.width() + 1 + max_in) * max_mem + max_ws;
}

TEST(TwRematTest, PeakWithinTheBoundOnSmallTreewidthGraphs) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Graph graph =
        RandomKTree(100 + 20 * static_cast<int32_t>(seed), 1 + seed % 3, seed);
    Solved s = Solve(graph, {});
    ASSERT_TRUE(s.sim.valid) << s.sim.error;
    EXPECT_LE(s.sim.peak_bytes, PeakBound(graph)) << seed;
  }
}

// On uniform chains of 2^k forward nodes the full-depth peak grows like
// log n: a least-squares fit peak = a + b log2 n leaves small residuals,
// and the peak stays within the bound above, while NoRemat's peak is
// exactly n + 2 (all n forward values, the loss and the last gradient).
TEST(TwRematTest, ChainPeakGrowsLogarithmically) {
  std::vector<double> xs, ys;
  for (int k = 1; k <= 10; ++k) {
    const int64_t n = int64_t{1} << k;
    const Graph graph = LoadGraph(fmt::format("chain:n={}", n));
    EXPECT_EQ(NoRematPeak(graph), n + 2);
    Solved s = Solve(graph, {});
    ASSERT_TRUE(s.sim.valid) << s.sim.error;
    EXPECT_LE(s.sim.peak_bytes, PeakBound(graph)) << n;
    xs.push_back(k);
    ys.push_back(static_cast<double>(s.sim.peak_bytes));
  }
  const double m = static_cast<double>(xs.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sx += xs[i];
    sy += ys[i];
    sxx += xs[i] * xs[i];
    sxy += xs[i] * ys[i];
  }
  const double b = (m * sxy - sx * sy) / (m * sxx - sx * sx);
  const double a = (sy - b * sx) / m;
  // Per doubling of n the hierarchy gains at most one level, which holds at
  // most w + 1 + D = 5 values of size 1.
  EXPECT_GT(b, 0);
  EXPECT_LE(b, 5);
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_LE(std::abs(a + b * xs[i] - ys[i]), 5) << "n = 2^" << xs[i];
  }
}

TEST(TwRematTest, MaxEventsStopsWithTooLarge) {
  const Graph graph = LoadGraph("chain:n=200");
  Solved s = Solve(graph, {"search=off", "max_events=100"});
  EXPECT_EQ(s.output.status, Status::kTooLarge);
  EXPECT_FALSE(s.output.schedule.has_value());
  EXPECT_NE(s.output.message.find("max_events=100"), std::string::npos);
}

TEST(TwRematTest, BudgetedSearch) {
  const Graph graph = LoadGraph("chain:n=64");
  const int64_t noremat = NoRematPeak(graph);
  const Solved full = Solve(graph, {});
  ASSERT_TRUE(full.sim.valid);
  // Enough memory: no recomputation at all.
  Solved roomy = Solve(graph, {}, noremat);
  EXPECT_EQ(roomy.sim.cost, BaseCost(graph));
  // In between: within the budget, and no dearer than full depth.
  const int64_t mid = (full.sim.peak_bytes + noremat) / 2;
  Solved between = Solve(graph, {}, mid);
  ASSERT_TRUE(between.sim.valid);
  EXPECT_LE(between.sim.peak_bytes, mid);
  EXPECT_LE(between.sim.cost, full.sim.cost);
  EXPECT_GT(between.sim.cost, BaseCost(graph));
  // Below what full depth reaches: its lowest-peak schedule, over budget.
  Solved tight = Solve(graph, {}, full.sim.peak_bytes - 1);
  ASSERT_TRUE(tight.sim.valid);
  EXPECT_EQ(tight.sim.peak_bytes, full.sim.peak_bytes);
}

TEST(TwRematTest, ExpiredDeadlineIsATimeoutWithAFallback) {
  const Graph graph = LoadGraph("chain:n=64");
  const AlgorithmInfo& info = FindAlgorithm("twremat");
  SolveRequest request;
  request.budget_bytes = 20;
  request.params = Params::Parse({}, info.params, "twremat");
  request.deadline = Deadline::In(1e-9);  // In(0) means no deadline
  request.sub_solver = &RunnerSubSolver();  // the fallback runs others
  EXPECT_FALSE(DecomposeByElimination(graph, EliminationOrder::kMinFill,
                                      request.deadline));
  // Never nothing (no method may look broken): the decomposition stops at
  // once, and a schedule that needs none comes back instead.
  const AlgorithmOutput out = info.create()->Solve(graph, request);
  EXPECT_EQ(out.status, Status::kTimeout);
  ASSERT_TRUE(out.schedule);
  EXPECT_TRUE(Simulate(graph, *out.schedule).valid);
  const std::string fallback = out.extra.value("fallback", "");
  EXPECT_TRUE(fallback == "noremat" || fallback == "checkpoint_last")
      << out.extra.dump();
}

// One hub and `leaves` leaves reading it (`fan_in`: one sink reading them
// all instead).
Graph Star(int32_t leaves, bool fan_in) {
  GraphBuilder builder(fan_in ? "fan_in" : "star");
  std::vector<NodeId> all;
  if (!fan_in) builder.add(NodeKind::kForward, 1, 1, {});
  for (int32_t i = 0; i < leaves; ++i) {
    all.push_back(
        builder.add(NodeKind::kForward, 1, 1,
                    fan_in ? std::vector<NodeId>{} : std::vector<NodeId>{0}));
  }
  if (fan_in) builder.add(NodeKind::kForward, 1, 1, std::move(all));
  return std::move(builder).Build();
}

// twremat --timeout 5 on a star of 10^6 leaves once ran 685 s: the
// initial fill-in counts walked the hub's list once per leaf, with no
// deadline. Now leaves cost nothing there and the deadline is checked.
TEST(TreeDecompositionTest, StarsAndFanInsEndByTheirDeadline) {
  for (bool fan_in : {false, true}) {
    const Graph small = Star(30, fan_in);
    for (auto order :
         {EliminationOrder::kMinFill, EliminationOrder::kMinDegree}) {
      const TreeDecomposition td = Decompose(small, order);
      EXPECT_EQ(CheckTreeDecomposition(small, td), "");
      EXPECT_EQ(td.width(), 1);
      EXPECT_EQ(td.elimination_order, NaiveEliminationOrder(small, order));
    }
    const Graph big = Star(300000, fan_in);
    const auto start = std::chrono::steady_clock::now();
    DecomposeByElimination(big, EliminationOrder::kMinFill, Deadline::In(0.5));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    // Generous for a loaded machine; before, minutes.
    EXPECT_LT(seconds, 10) << (fan_in ? "fan-in" : "star");
  }
}

// Each leaf of a training star is next to two hubs (the root
// and the loss), and each gradient to two more; the fill-in counts and
// the eliminations walked those hubs' lists once per leaf: 3*10^5 leaves
// ran into graph info's 30 s limit and gave no treewidth. Hubs' lists are
// now looked up in, not walked.
TEST(TreeDecompositionTest, TrainingStarsTakeLinearTime) {
  // The checker is quadratic on hubs: the small star is checked, the
  // big one timed.
  const Graph small = testing::TrainingStar(30);
  for (auto order :
       {EliminationOrder::kMinFill, EliminationOrder::kMinDegree}) {
    const TreeDecomposition td = Decompose(small, order);
    EXPECT_EQ(CheckTreeDecomposition(small, td), "");
    EXPECT_EQ(td.width(), 3);
    EXPECT_EQ(td.elimination_order, NaiveEliminationOrder(small, order));
  }
  const Graph big = testing::TrainingStar(300000);
  const auto start = std::chrono::steady_clock::now();
  const std::optional<TreeDecomposition> td =
      DecomposeByElimination(big, EliminationOrder::kMinFill);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(td.has_value());
  EXPECT_EQ(td->width(), 3);
  EXPECT_LT(seconds, 10);  // generous for a loaded machine; before, minutes
}

TEST(TwRematTest, TreewidthIsAGraphProperty) {
  const auto properties = AllGraphProperties();
  auto it = std::find_if(properties.begin(), properties.end(), [](auto* p) {
    return p->name == "treewidth_upper_bound";
  });
  ASSERT_NE(it, properties.end());
  EXPECT_EQ((*it)->compute(LoadGraph("chain:n=30")), 2);
}

}  // namespace
}  // namespace remat
