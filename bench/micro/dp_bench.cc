// Speed of dp_exact and dp_approx on the authors' graphs (goals:
// exact DP on GoogLeNet and PSPNet under 3 s each, approximate DP on each
// of the seven graphs under 0.1 s, peak RSS under 4 GB). Each iteration is
// a cold solve (the lower sets are enumerated within it, the schedule is
// simulated) at a budget given by the second argument: up to 100, that
// percentage of the way from the memory lower bound to the NoRemat peak
// (50: the middle of the sweep's grid); 10000, the 10 GB the authors'
// timings used. max_rss_mb is the process's peak so far, an upper bound
// for the solve. The goals are for one run of the DP
// (strategy=time, third argument 0); the default strategy=auto (1) runs it
// up to three more times when the schedule's simulated peak exceeds the
// budget. Skips when ../shared/peer-graphs is absent.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <filesystem>

#include "algorithms/kusumoto/lower_sets.h"
#include "harness/runner.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

const char* const kGraphs[] = {"vgg19",    "unet",   "resnet50", "resnet152",
                               "densenet", "pspnet", "googlenet"};

void SolveColdly(benchmark::State& state, const char* algorithm) {
  const std::string path = std::string(REMAT_SOURCE_DIR) +
                           "/../shared/peer-graphs/kusumoto2019/cg_" +
                           kGraphs[state.range(0)] + ".txt";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("peer graphs absent");
    return;
  }
  state.SetLabel(kGraphs[state.range(0)]);
  Graph graph = LoadGraph(path);
  const int64_t low = MemoryLowerBound(graph), high = NoRematPeak(graph);
  const int64_t budget = state.range(1) <= 100
                             ? low + (high - low) * state.range(1) / 100
                             : state.range(1) * 1'000'000;
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  const Params params =
      Params::Parse({state.range(2) == 0 ? "strategy=time" : "strategy=auto"},
                    info.params, "bench");
  for (auto _ : state) {
    Attempt attempt = RunAlgorithm(graph, info, params, budget, 0);
    benchmark::DoNotOptimize(attempt.output.status);
    state.counters["lower_sets"] = attempt.output.extra.value("lower_sets", 0);
    // A quick "no strategy fits" is not a quick solve: show which it was.
    state.counters["found"] = attempt.output.schedule.has_value();
    state.counters["extra_time"] =
        attempt.output.extra.value("dp_extra_time", -1);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    state.counters["max_rss_mb"] = usage.ru_maxrss / 1024.0;
  }
}

void BM_DpApprox(benchmark::State& state) { SolveColdly(state, "dp_approx"); }
void BM_DpExact(benchmark::State& state) { SolveColdly(state, "dp_exact"); }

BENCHMARK(BM_DpApprox)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6}, {50, 100, 10000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
// PSPNet and GoogLeNet, the two the goals name, across the budget range.
BENCHMARK(BM_DpExact)
    ->ArgsProduct({{5, 6}, {20, 30, 40, 50, 60, 80, 100, 10000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remat
