// How long the layer-level generators take to build large training graphs,
// including GraphBuilder's checks and topological sort. The bar: a
// graph of 10^6 nodes in seconds.
//   build-gen/bench/micro/generators_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <string>

#include "model/graph_source.h"

namespace remat {
namespace {

void BM_Generate(benchmark::State& state, const std::string& spec) {
  int64_t nodes = 0;
  for (auto _ : state) {
    Graph g = LoadGraph(spec);
    nodes = g.num_nodes();
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes_per_second"] =
      benchmark::Counter(static_cast<double>(nodes),
                         benchmark::Counter::kIsIterationInvariantRate);
}

// 36,000 encoder layers of 14 operations: 1,008,002 nodes.
BENCHMARK_CAPTURE(BM_Generate, transformer_1M,
                  std::string("transformer:layers=36000,d_model=64,heads=4,"
                              "seq=64,batch=1"))
    ->Unit(benchmark::kMillisecond);
// CIFAR ResNet of 9n+2 = 166,664 layers (n = 18,518 bottlenecks per stage):
// about 1.1 million nodes.
BENCHMARK_CAPTURE(BM_Generate, resnet_1M,
                  std::string("resnet:depth=166664,batch=1,image=32,"
                              "block=bottleneck"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, lstm_1M,
                  std::string("lstm:steps=62500,hidden=64,batch=1"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, random_layered_1M,
                  std::string("random_layered:n=1000000,seed=1,width=0.02"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Generate, resnet50, std::string("resnet:depth=50"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remat
