// Where graphs come from: files (in any registered format) and generator
// specs such as "chain:n=16,mem=4". And where they go: `remat graph
// convert` writes any registered output format.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "model/graph.h"

namespace remat {

struct GraphFormat {
  std::string name;  // e.g. "json", "remat2", "kusumoto"
  std::string description;
  // True if this format reads the file; `head` holds its first 4 KiB.
  std::function<bool(const std::string& path, const std::string& head)> sniff;
  std::function<Graph(const std::string& path)> read;      // may be empty
  std::function<void(std::ostream&, const Graph&)> write;  // may be empty
};

bool RegisterGraphFormat(GraphFormat format);
std::vector<const GraphFormat*> AllGraphFormats();

// A file path (format chosen by its content) or a generator spec. Throws
// InputError naming the file or spec, also for a graph with no nodes or
// no target (which the builder accepts: nothing to compute).
Graph LoadGraph(const std::string& spec);

// Writes `graph` in the named format; throws InputError for an unknown one.
void WriteGraph(std::ostream& out, const Graph& graph,
                const std::string& format);

}  // namespace remat
