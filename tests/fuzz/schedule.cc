// Schedule text (model/schedule.h) against a graph of 16 nodes, and the
// simulator's timeline on what parses (offloads, prefetches and waits over
// a link slow enough that copies overlap compute).
#include "model/schedule.h"

#include <sstream>

#include "model/graph_source.h"
#include "model/simulator.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const remat::Graph graph = remat::LoadGraph("chain:n=8");  // 17
  static const remat::TimingModel timing = [] {
    remat::TimingModel t;
    t.link = remat::ParseLink("1:0.5");
    t.compute_rate = 1;
    t.host_budget_bytes = 3;
    return t;
  }();
  std::istringstream in{std::string(remat::fuzz::Text(data, size))};
  std::vector<int64_t> lines;
  return remat::fuzz::Accept([&] {
    const remat::Schedule schedule =
        remat::ParseScheduleText(in, "fuzz", 16, &lines);
    remat::Simulate(graph, schedule, {.timing = &timing, .critical_path = true});
  });
}
