// random_layered:n=N,seed=S[,width=..][,spread=..][,density=..][,skip=..]
// [,mem_min=..][,mem_max=..][,cost_max=..] — a random layered DAG shaped
// like the random_layered graphs of the Checkmate/Moccasin corpus (fitted
// to ../shared/peer-graphs/checkmate2020/random_layered_*.json): one
// source, one sink, layers in between, edges between adjacent layers, and
// a share of "skip" edges that jump further ahead.
//
// - Layer widths average 2 width sqrt(n) (the peer files' n=100, width=0.27
//   has 19 layers; n=1000, width=0.31 has 49) and vary uniformly by
//   +-spread of that average.
// - Each pair of nodes in adjacent layers is an edge with probability
//   `density`; then every node without an input (output) in the next
//   (previous) layer gets one at random, so the source reaches every node
//   and every node reaches the sink.
// - Skip edges, from a node to one at least two layers further, are added
//   until they are a fraction `skip` of all edges.
// - mem is uniform in [mem_min, mem_max], cost uniform in [1, cost_max]
//   (the source costs 0, as in the peer files).
// It is a plain DAG, not a training graph: every node is a forward value
// and the sink is the only target. Ids follow the layers, so they are a
// topological order. The random numbers come from SplitMix64 with our own
// range reduction, so a seed gives the same graph on every platform.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "graphs/generators/training_graph.h"
#include "model/errors.h"
#include "model/limits.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi].
  int64_t Between(int64_t lo, int64_t hi) {
    const auto range = static_cast<unsigned __int128>(hi - lo) + 1;
    return lo + static_cast<int64_t>((range * Next()) >> 64);
  }

 private:
  uint64_t state_;
};

// At most this many edges: the graph must stay small enough to analyse.
constexpr int64_t kMaxEdges = 50'000'000;

struct RandomLayeredOptions {
  int64_t n = 0;
  int64_t seed = 0;
  double width = 0;
  double spread = 0;
  double density = 0;
  double skip = 0;
  int64_t mem_min = 0;
  int64_t mem_max = 0;
  int64_t cost_max = 0;
};

const Options<RandomLayeredOptions> kOptions(
    IntOption(&RandomLayeredOptions::n, "n", 100, "number of nodes", 2),
    IntOption(&RandomLayeredOptions::seed, "seed", 0, "random seed"),
    DoubleOption(&RandomLayeredOptions::width, "width", 0.3,
                 "layer width / (2 sqrt(n)), in (0, 1]"),
    DoubleOption(&RandomLayeredOptions::spread, "spread", 0.75,
                 "relative variation of layer widths, [0, 1]"),
    DoubleOption(&RandomLayeredOptions::density, "density", 0.2,
                 "probability of an edge between adjacent layers, [0, 1]"),
    DoubleOption(&RandomLayeredOptions::skip, "skip", 0.14,
                 "fraction of edges that skip layers, [0, 0.99]"),
    BytesOption(&RandomLayeredOptions::mem_min, "mem_min", 10,
                "smallest node size"),
    BytesOption(&RandomLayeredOptions::mem_max, "mem_max", 7500,
                "largest node size"),
    IntOption(&RandomLayeredOptions::cost_max, "cost_max", 1000,
              "largest node cost", 1));

double Fraction(double value, const std::string& key, const std::string& spec,
                double lo, double hi) {
  if (!(value >= lo && value <= hi)) {
    throw InputError(
        fmt::format("{}: {}={} must be in [{}, {}]", spec, key, value, lo, hi));
  }
  return value;
}

Graph GenerateRandomLayered(const RandomLayeredOptions& options,
                            const std::string& spec) {
  const int64_t n = options.n;
  CheckOpCount(spec, n);
  const double width = Fraction(options.width, "width", spec, 1e-9, 1);
  const double spread = Fraction(options.spread, "spread", spec, 0, 1);
  const double density = Fraction(options.density, "density", spec, 0, 1);
  const double skip = Fraction(options.skip, "skip", spec, 0, 0.99);
  const int64_t mem_min = options.mem_min;
  const int64_t mem_max = options.mem_max;
  if (mem_min > mem_max) {
    throw InputError(fmt::format("{}: mem_min={} exceeds mem_max={}", spec,
                                 mem_min, mem_max));
  }
  Random random(static_cast<uint64_t>(options.seed));

  // Layers: {0} (the source), the inner layers, {n-1} (the sink).
  const double mean_width =
      std::max(1.0, 2 * width * std::sqrt(static_cast<double>(n)));
  std::vector<NodeId> layer_start = {0, 1};
  while (layer_start.back() < n - 1) {
    const double scale = 1 + spread * (2 * random.Unit() - 1);
    const auto size = std::max<int64_t>(1, std::llround(mean_width * scale));
    layer_start.push_back(static_cast<NodeId>(
        std::min<int64_t>(n - 1, layer_start.back() + size)));
  }
  layer_start.push_back(static_cast<NodeId>(n));
  const auto layers = static_cast<int64_t>(layer_start.size()) - 1;
  std::vector<int64_t> layer_of(n);
  for (int64_t l = 0; l < layers; ++l) {
    std::fill(layer_of.begin() + layer_start[l],
              layer_of.begin() + layer_start[l + 1], l);
  }

  if (density * mean_width * static_cast<double>(n) > kMaxEdges) {
    throw InputError(fmt::format(
        "{}: would have about {:.0f} edges; at most {} are supported", spec,
        density * mean_width * static_cast<double>(n), kMaxEdges));
  }
  // Refused before the edges are drawn, which takes seconds at n = 10^6.
  const auto edges = static_cast<int64_t>((1 + skip) * density * mean_width *
                                          static_cast<double>(n));
  CheckMemory(GraphBytes(n, edges),
              fmt::format("{}: a graph of {} nodes and about {} edges", spec, n,
                          edges));
  std::vector<std::vector<NodeId>> inputs(n);
  std::vector<uint8_t> has_output(n, 0);
  auto add_edge = [&](NodeId u, NodeId v) {
    inputs[v].push_back(u);
    has_output[u] = 1;
  };
  // Pairs of adjacent-layer nodes passed over before the next edge: a
  // geometric gap, so that only the chosen pairs are visited.
  const double log_miss = std::log1p(-density);
  auto gap = [&]() -> double {
    if (density >= 1) return 0;
    if (density <= 0) return std::numeric_limits<double>::infinity();
    return std::floor(std::log(1 - random.Unit()) / log_miss);
  };
  int64_t adjacent_edges = 0;
  for (int64_t l = 0; l + 1 < layers; ++l) {
    const NodeId a = layer_start[l], b = layer_start[l + 1];
    const int64_t cols = layer_start[l + 2] - b;
    const auto pairs = static_cast<double>((b - a) * cols);
    for (double k = gap(); k < pairs; k += 1 + gap()) {
      const auto pair = static_cast<int64_t>(k);
      add_edge(static_cast<NodeId>(a + pair / cols),
               static_cast<NodeId>(b + pair % cols));
      ++adjacent_edges;
    }
    for (NodeId v = b; v < b + cols; ++v) {
      if (inputs[v].empty()) {
        add_edge(static_cast<NodeId>(random.Between(a, b - 1)), v);
        ++adjacent_edges;
      }
    }
    // A node without an output has no edge yet to any node of layer l+1.
    for (NodeId u = a; u < b; ++u) {
      if (!has_output[u]) {
        add_edge(u, static_cast<NodeId>(random.Between(b, b + cols - 1)));
        ++adjacent_edges;
      }
    }
  }

  // Skip edges start in a layer that has one at least two layers ahead.
  if (layers >= 3) {
    const auto wanted =
        std::llround(skip / (1 - skip) * static_cast<double>(adjacent_edges));
    if (adjacent_edges + wanted > kMaxEdges) {
      throw InputError(
          fmt::format("{}: would have {} edges; at most {} are supported", spec,
                      adjacent_edges + wanted, kMaxEdges));
    }
    const NodeId last_start = layer_start[layers - 2];
    int64_t added = 0;
    // Duplicates are redrawn; the attempt limit ends the loop on graphs too
    // small to hold that many distinct skip edges.
    for (int64_t attempt = 0; added < wanted && attempt < 20 * wanted + 100;
         ++attempt) {
      const auto u = static_cast<NodeId>(random.Between(0, last_start - 1));
      const auto v = static_cast<NodeId>(
          random.Between(layer_start[layer_of[u] + 2], n - 1));
      if (std::find(inputs[v].begin(), inputs[v].end(), u) == inputs[v].end()) {
        add_edge(u, v);
        ++added;
      }
    }
  }

  GraphBuilder b(spec);
  b.set_name(spec).set_units("bytes", "abstract");
  b.set_provenance({{"generator", spec}, {"layers", layers}});
  const int64_t cost_max = options.cost_max;
  for (NodeId v = 0; v < n; ++v) {
    NodeSpec node;
    node.id = v;
    node.name = fmt::format("v{}", v);
    node.mem = random.Between(mem_min, mem_max);
    node.cost = v == 0 ? 0 : random.Between(1, cost_max);
    node.inputs = std::move(inputs[v]);
    b.add_node(std::move(node));
  }
  return std::move(b).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "random_layered",
    .description = "random layered DAG like the Checkmate corpus's "
                   "(deterministic for a seed)",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateRandomLayered),
});

}  // namespace
}  // namespace remat::gen
