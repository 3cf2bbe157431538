// Moccasin's retention-interval model as a constraint program on Gecode,
// the `solver=gecode` of the moccasin algorithm (moccasin.cc says which
// solver is the default and why).
#pragma once

#include "algorithms/checkmate/checkmate_model.h"
#include "harness/algorithm.h"
#include "harness/graph.h"

namespace remat {

struct CpAnswer {
  AlgorithmOutput output;
  // The search ended on exact sizes: `output` is optimal in the class, or
  // proves that none of the class fits.
  bool settled = false;
};

// Searches the staged schedules in `start`'s order that compute each value
// at most `computes` times for one cheaper than start.incumbent until
// `deadline`, and makes the cheapest found start.incumbent.
// `threads`: Gecode's search threads.
CpAnswer SolveMoccasinCp(const Graph& graph, const SolveRequest& request,
                         int computes, int threads, StagedStart& start,
                         const Deadline& deadline);

}  // namespace remat
