// TwRemat against its performance goals:
//   - decomposition (min-fill) plus separator hierarchy of a 10^5-node
//     training graph in under 10 s: BM_Decompose, BM_Hierarchy;
//   - schedule generation at >= 10^7 events/s: BM_Generate (events/s);
//   - growth of decomposition time, schedule length and peak with n:
//     BM_Growth, one row per graph, e.g.
//       build/bench/micro/twremat_bench --benchmark_filter=Growth
// Wall time on a shared machine can exceed CPU time; the goals are about
// the latter.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>

#include "algorithms/twremat/separator_hierarchy.h"
#include "algorithms/twremat/tree_decomposition.h"
#include "algorithms/twremat/twremat.h"
#include "model/graph_source.h"
#include "model/simulator.h"

namespace remat {
namespace {

// Cached: generating a 10^5-node graph is not what is measured.
const Graph& CachedGraph(const std::string& spec) {
  static std::map<std::string, Graph> cache;
  auto it = cache.find(spec);
  if (it == cache.end()) it = cache.emplace(spec, LoadGraph(spec)).first;
  return it->second;
}

void BM_Decompose(benchmark::State& state, const std::string& spec,
                  EliminationOrder order) {
  const Graph& graph = CachedGraph(spec);
  int32_t width = 0;
  for (auto _ : state) {
    auto td = DecomposeByElimination(graph, order);
    width = td->width();
    benchmark::DoNotOptimize(td);
  }
  state.counters["nodes"] = graph.num_nodes();
  state.counters["width"] = width;
}
BENCHMARK_CAPTURE(BM_Decompose, chain_1e5_min_fill, "chain:n=50000",
                  EliminationOrder::kMinFill)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decompose, chain_1e5_min_degree, "chain:n=50000",
                  EliminationOrder::kMinDegree)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decompose, resnet_1e5_min_fill,
                  "resnet:depth=14000,image=32", EliminationOrder::kMinFill)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decompose, transformer_1e5_min_fill,
                  "transformer:layers=3700", EliminationOrder::kMinFill)
    ->Unit(benchmark::kMillisecond);

void BM_Hierarchy(benchmark::State& state, const std::string& spec) {
  const Graph& graph = CachedGraph(spec);
  const TreeDecomposition td =
      *DecomposeByElimination(graph, EliminationOrder::kMinFill);
  int32_t height = 0;
  for (auto _ : state) {
    SeparatorHierarchy hier(graph, td);
    height = hier.height();
    benchmark::DoNotOptimize(hier);
  }
  state.counters["bags"] = td.num_bags();
  state.counters["height"] = height;
}
BENCHMARK_CAPTURE(BM_Hierarchy, chain_1e5, "chain:n=50000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, resnet_1e5, "resnet:depth=14000,image=32")
    ->Unit(benchmark::kMillisecond);

void BM_Generate(benchmark::State& state, const std::string& spec) {
  const Graph& graph = CachedGraph(spec);
  const TreeDecomposition td =
      *DecomposeByElimination(graph, EliminationOrder::kMinFill);
  const SeparatorHierarchy hier(graph, td);
  int64_t events = 0;
  for (auto _ : state) {
    TwRematSchedule r = GenerateTwRemat(graph, hier, {});
    events += static_cast<int64_t>(r.schedule.size());
    benchmark::DoNotOptimize(r);
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events),
                                                  benchmark::Counter::kIsRate);
  state.counters["events"] =
      static_cast<double>(events) / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(BM_Generate, chain_1e4, "chain:n=5000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, chain_1e5, "chain:n=50000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, resnet_1e5, "resnet:depth=14000,image=32")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, transformer_1e5, "transformer:layers=3700")
    ->Unit(benchmark::kMillisecond);

// One row of the growth table: decomposition (and hierarchy) time, and the
// full-depth schedule's length and peak against NoRemat's.
void BM_Growth(benchmark::State& state, const std::string& spec) {
  const Graph& graph = CachedGraph(spec);
  double decompose_seconds = 0;
  int64_t length = 0, peak = 0;
  int32_t width = 0, height = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const TreeDecomposition td =
        *DecomposeByElimination(graph, EliminationOrder::kMinFill);
    const SeparatorHierarchy hier(graph, td);
    decompose_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    TwRematSchedule r = GenerateTwRemat(graph, hier, {});
    const SimulationResult sim = Simulate(graph, r.schedule);
    length = sim.length;
    peak = sim.peak_bytes;
    width = td.width();
    height = hier.height();
  }
  const std::vector<NodeId> plain = NoRematOrder(graph);
  state.counters["nodes"] = graph.num_nodes();
  state.counters["width"] = width;
  state.counters["height"] = height;
  state.counters["decompose_s"] = decompose_seconds;
  state.counters["length"] = static_cast<double>(length);
  state.counters["length_ratio"] =
      static_cast<double>(length) / static_cast<double>(plain.size());
  state.counters["peak"] = static_cast<double>(peak);
  state.counters["noremat_peak"] = static_cast<double>(NoRematPeak(graph));
}
// Chains of 10^2 .. 10^5 nodes (n forward nodes give 2n + 1), and ResNets
// (CIFAR layout, 6k+2 layers, about 7 nodes per layer) of the same sizes.
#define REMAT_GROWTH(label, spec)           \
  BENCHMARK_CAPTURE(BM_Growth, label, spec) \
      ->Iterations(1)                       \
      ->Unit(benchmark::kMillisecond)
REMAT_GROWTH(chain_1e2, "chain:n=50");
REMAT_GROWTH(chain_1e3, "chain:n=500");
REMAT_GROWTH(chain_1e4, "chain:n=5000");
REMAT_GROWTH(chain_1e5, "chain:n=50000");
REMAT_GROWTH(resnet_1e2, "resnet:depth=14,image=32");
REMAT_GROWTH(resnet_1e3, "resnet:depth=140,image=32");
REMAT_GROWTH(resnet_1e4, "resnet:depth=1400,image=32");
REMAT_GROWTH(resnet_1e5, "resnet:depth=14000,image=32");

}  // namespace
}  // namespace remat
