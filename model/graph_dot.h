// Graphviz rendering of a graph: forward nodes as boxes, backward as
// ellipses, the loss as a diamond, each labelled with its name and size.
#pragma once

#include <iosfwd>

#include "model/graph.h"

namespace remat {

void WriteGraphDot(std::ostream& out, const Graph& graph);

}  // namespace remat
