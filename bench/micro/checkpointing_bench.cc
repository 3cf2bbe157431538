// Solve time of Chen et al.'s methods and revolve on a chain with 10^5
// forward values (goals: under 1 s each including schedule
// generation, the greedy threshold search at most a few times that).
// Budgets are in units of one value (mem=1): 0 means unbounded.
//   build-chen/bench/micro/checkpointing_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

constexpr int64_t kForward = 100'000;

const Graph& BenchChain() {
  static const Graph graph = LoadGraph("chain:n=" + std::to_string(kForward));
  return graph;
}

void BM_Solve(benchmark::State& state, const std::string& algorithm) {
  const Graph& graph = BenchChain();
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  SolveRequest request;
  request.params = Params::Parse({}, info.params, algorithm);
  if (state.range(0) > 0) request.budget_bytes = state.range(0);
  int64_t length = 0;
  for (auto _ : state) {
    AlgorithmOutput output = info.create()->Solve(graph, request);
    length =
        output.schedule ? static_cast<int64_t>(output.schedule->size()) : -1;
    benchmark::DoNotOptimize(length);
  }
  state.counters["events"] = static_cast<double>(length);
}

BENCHMARK_CAPTURE(BM_Solve, chen_sqrtn, std::string("chen_sqrtn"))
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Solve, chen_recursive, std::string("chen_recursive"))
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Solve, chen_greedy, std::string("chen_greedy"))
    ->Arg(1000)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Solve, revolve, std::string("revolve"))
    ->Arg(100)
    ->Arg(1000)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remat
