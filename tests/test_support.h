// Helpers shared by the test suites: tiny graphs written inline, and the
// fixture graphs every registered algorithm is run on.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "harness/runner.h"
#include "model/graph.h"
#include "model/graph_json.h"
#include "model/graph_source.h"
#include "model/registry.h"

namespace remat::testing {

inline std::string SourceDir() { return REMAT_SOURCE_DIR; }

// Whether this run is CI's (CI=true), which must run every test: there a
// test that lacks what it needs fails instead of skipping.
inline bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace remat::testing

// Ends the test where it lacks what it needs (a data folder, an optional
// solver): skipped, with `why` (which may stream: `path << " not found"`),
// except under CI=true, where it fails.
#define REMAT_SKIP_UNLESS_CI(why)                        \
  do {                                                   \
    if (::remat::testing::UnderCi())                     \
      GTEST_FAIL() << "CI=true and " << why;             \
    else                                                 \
      GTEST_SKIP() << why << " (a failure under CI=true)"; \
  } while (0)

namespace remat::testing {

// Runs the registered `algorithm` through the runner, as a sweep does, with
// `params` at `budget`, and judges its answer. The time limit makes a test
// that hangs fail instead of stalling the suite (0: none).
inline SolveResult Solve(const std::string& algorithm, const Graph& graph,
                         int64_t budget, std::vector<std::string> params = {},
                         double timeout_seconds = 60) {
  const AlgorithmInfo& info = FindAlgorithm(algorithm);
  const Attempt attempt =
      RunAlgorithm(graph, info, Params::Parse(params, info.params, algorithm),
                   budget, timeout_seconds);
  return Judge(attempt, budget);
}

// Parses inline native JSON; `nodes` is the text of the "nodes" array.
inline Graph GraphFromNodes(const std::string& nodes,
                            int64_t static_bytes = 0) {
  return ParseGraphJson(
      "{\"format\": \"rematbench-graph\", \"version\": 1, \"name\": "
      "\"inline\", "
      "\"static_bytes\": " +
          std::to_string(static_bytes) + ", \"nodes\": " + nodes + "}",
      "inline");
}

// The graphs the conformance suite runs every algorithm on: generated
// chains and every committed fixture file.
inline std::vector<std::string> FixtureGraphSpecs() {
  std::vector<std::string> specs = {"chain:n=1", "chain:n=2", "chain:n=7",
                                    "chain:n=16,mem=3,cost=2"};
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() + "/tests/fixtures")) {
    if (entry.path().extension() == ".json") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  specs.insert(specs.end(), files.begin(), files.end());
  return specs;
}

// The training graph of a random forward DAG with `n` nodes, following
// docs/model.md: a loss reading every forward sink; the backward node of f
// reads the backward nodes of f's consumers (the loss itself for the loss)
// and, at random, f's inputs and/or f's output; it costs 2x f.
inline Graph RandomTrainingGraph(std::mt19937& rng, int n, double p) {
  GraphBuilder b("random_training");
  std::uniform_int_distribution<int64_t> mem(1, 4), cost(1, 5);
  std::bernoulli_distribution edge(p), coin(0.5);
  std::vector<int64_t> fcost(n);
  std::vector<std::vector<NodeId>> finputs(n), fconsumers(n + 1);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      if (edge(rng)) finputs[i].push_back(j);
    }
    fcost[i] = cost(rng);
    b.add(NodeKind::kForward, mem(rng), fcost[i], finputs[i]);
    for (NodeId j : finputs[i]) fconsumers[j].push_back(i);
  }
  std::vector<NodeId> sinks;
  for (int i = 0; i < n; ++i) {
    if (fconsumers[i].empty()) sinks.push_back(i);
  }
  const NodeId loss = b.add(NodeKind::kLoss, 1, 1, sinks, "loss");
  for (NodeId s : sinks) fconsumers[s].push_back(loss);
  std::vector<NodeId> grad(n + 1, kNoNode);
  grad[n] = loss;
  for (int f = n - 1; f >= 0; --f) {
    std::vector<NodeId> inputs;
    for (NodeId c : fconsumers[f]) inputs.push_back(grad[c]);
    const bool reads_inputs = coin(rng), reads_output = coin(rng);
    if (reads_inputs) {
      for (NodeId u : finputs[f]) inputs.push_back(u);
    }
    if (reads_output || (!reads_inputs && finputs[f].empty())) {
      inputs.push_back(f);
    }
    grad[f] = b.add(NodeKind::kBackward, mem(rng), 2 * fcost[f], inputs, "", f);
  }
  return std::move(b).Build();
}

// A training graph's star: a root read by `leaves` leaves, a
// loss reading them all, each leaf's gradient reading the loss and the
// leaf, and the root's gradient reading every leaf's. Every leaf and
// gradient is next to two hubs, which made several algorithms quadratic.
inline Graph TrainingStar(int32_t leaves) {
  GraphBuilder b("training_star");
  const NodeId root = b.add(NodeKind::kForward, 1, 1, {});
  std::vector<NodeId> forward, backward;
  for (int32_t i = 0; i < leaves; ++i) {
    forward.push_back(b.add(NodeKind::kForward, 1, 1, {root}));
  }
  const NodeId loss = b.add(NodeKind::kLoss, 1, 1, forward, "loss");
  for (NodeId leaf : forward) {
    backward.push_back(
        b.add(NodeKind::kBackward, 1, 1, {loss, leaf}, "", leaf));
  }
  b.add(NodeKind::kBackward, 1, 1, std::move(backward), "", root);
  return std::move(b).Build();
}

}  // namespace remat::testing
