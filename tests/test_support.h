// Helpers shared by the test suites: tiny graphs written inline, and the
// fixture graphs every registered algorithm is run on.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/graph.h"
#include "harness/graph_json.h"
#include "harness/graph_source.h"

namespace remat::testing {

inline std::string SourceDir() { return REMAT_SOURCE_DIR; }

// Parses inline native JSON; `nodes` is the text of the "nodes" array.
inline Graph GraphFromNodes(const std::string& nodes,
                            int64_t static_bytes = 0) {
  return ParseGraphJson(
      "{\"format\": \"rematbench-graph\", \"version\": 1, \"name\": \"inline\", "
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

}  // namespace remat::testing
