// Reader and writer of the native graph format, version 1 (docs/formats.md,
// "Native graph JSON").
#pragma once

#include <iosfwd>
#include <string>

#include "model/graph.h"

namespace remat {

// Parses native JSON text; `source` names it in error messages. Throws
// InputError with the line of a syntax error or the offending node.
Graph ParseGraphJson(std::string_view text, const std::string& source);
Graph ReadGraphJsonFile(const std::string& path);

// Writes the graph so that ParseGraphJson gives it back unchanged. Optional
// fields are written only when they differ from their defaults.
void WriteGraphJson(std::ostream& out, const Graph& graph);

}  // namespace remat
