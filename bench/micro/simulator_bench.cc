// Throughput of the simulator and of the native JSON reader (goals:
// >= 50 million events per second on one core; a 10^5-node graph read in
// under 0.5 s).
#include <benchmark/benchmark.h>

#include <sstream>

#include "harness/runner.h"
#include "model/graph_json.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

// checkpoint_last on a chain: quadratic in n, so n = 1000 gives ~0.5 M
// computes and as many frees, with reads of live inputs at every compute.
// The second argument asks for the critical path (as every reported
// schedule does; the simulations inside algorithms do not).
void BM_SimulateCheckpointLastChain(benchmark::State& state) {
  Graph graph = LoadGraph("chain:n=" + std::to_string(state.range(0)));
  Attempt attempt = RunAlgorithm(graph, FindAlgorithm("checkpoint_last"),
                                 Params::Parse({}, FindAlgorithm(
                                     "checkpoint_last").params, "bench"),
                                 kUnboundedBudget, 0);
  const Schedule& schedule = *attempt.output.schedule;
  const SimulationOptions options{.critical_path = state.range(1) != 0};
  for (auto _ : state) {
    SimulationResult result = Simulate(graph, schedule, options);
    benchmark::DoNotOptimize(result.peak_bytes);
  }
  state.counters["events"] = static_cast<double>(schedule.size());
  state.counters["events_per_second"] = benchmark::Counter(
      static_cast<double>(schedule.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimulateCheckpointLastChain)
    ->ArgsProduct({{1000, 2000}, {0, 1}})
    ->ArgNames({"n", "critical_path"})
    ->Unit(benchmark::kMillisecond);

// A schedule with transfers (vdnn, every forward value offloaded) takes
// the timeline's streams and its sort of memory changes.
void BM_SimulateOffloadingSchedule(benchmark::State& state) {
  Graph graph = LoadGraph("resnet:depth=" + std::to_string(state.range(0)) +
                          ",batch=8,image=64");
  const AlgorithmInfo& vdnn = FindAlgorithm("vdnn");
  Attempt attempt = RunAlgorithm(
      graph, vdnn, Params::Parse({"policy=all"}, vdnn.params, "bench"),
      kUnboundedBudget, 0);
  const Schedule& schedule = *attempt.output.schedule;
  for (auto _ : state) {
    SimulationResult result =
        Simulate(graph, schedule, {.critical_path = true});
    benchmark::DoNotOptimize(result.makespan);
  }
  state.counters["events"] = static_cast<double>(schedule.size());
  state.counters["events_per_second"] = benchmark::Counter(
      static_cast<double>(schedule.size()),
      benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimulateOffloadingSchedule)->Arg(50)->Arg(152)
    ->Unit(benchmark::kMillisecond);

void BM_ReadNativeJson(benchmark::State& state) {
  // A chain training graph of 10^5 nodes: 50,000 forward + loss + 50,000
  // backward, written and parsed back.
  Graph graph = LoadGraph("chain:n=" + std::to_string(state.range(0) / 2));
  std::ostringstream out;
  WriteGraphJson(out, graph);
  const std::string text = out.str();
  for (auto _ : state) {
    Graph parsed = ParseGraphJson(text, "bench");
    benchmark::DoNotOptimize(parsed.num_nodes());
  }
  state.counters["nodes"] = graph.num_nodes();
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_ReadNativeJson)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remat
