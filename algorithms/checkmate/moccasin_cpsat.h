// Moccasin's retention-interval model on OR-Tools' CP-SAT, the solver the
// Moccasin paper used: `solver=cpsat` of the moccasin algorithm. The model
// is moccasin_cp.cc's (the same class, positions and constraints), with
// exact 64-bit bytes and costs. CP-SAT is reachable only through Python
// (the package index's `ortools` has no headers and no executable; Debian
// has none), so this side writes the model as CP-SAT's protocol buffer in
// text format and python/rematbench/moccasin_cpsat.py solves it in a child
// process (child_process.h) with the build's Python, which has `ortools`
// from python/requirements.txt.
#pragma once

#include <optional>
#include <string>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/moccasin_cp.h"
#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

// The Python interpreter and script that solve with CP-SAT:
// $REMAT_CPSAT_PYTHON (an empty value: none) else the build's Python when
// it had `ortools` at configure; $REMAT_CPSAT_SCRIPT else the source
// tree's python/rematbench/moccasin_cpsat.py. nullopt without either.
struct CpSatProgram {
  std::string python, script;
};
std::optional<CpSatProgram> FindCpSat();

// The size of the interval model of `graph` (its needed nodes) with
// `computes` intervals per value: its intervals and the literals that say
// which interval of an input covers a compute, n x C + edges x C^2. It
// grows with the edges, where the MILP's nonzeros grow with n^2.
int64_t CountIntervalModel(const Graph& graph, int computes);

// The default of moccasin's cpsat_literals_per_second: a model larger than
// this x the seconds left is too_large for CP-SAT. Measured: at 10 s on the
// default corpus CP-SAT found no schedule cheaper than its warm start (none
// at all at 23 of 40 points) on the graphs of 1,128 literals and more
// (ResNet-18, 138 nodes, and larger), and answered on those of 898 and less
// (the U-Nets, the Transformer); at 60 s it answered Checkmate's ResNet-50
// (3,710), at 600 s the random layered graph of 1,000 nodes (25,500) and
// the PyTorch ResNet-50 export (docs/algorithms.md, results/moccasin_scale).
inline constexpr double kCpSatLiteralsPerSecond = 100;

// Solves the staged schedules in `start`'s order that compute each value at
// most `computes` times within `budget_bytes` on CP-SAT with `threads` workers
// until `deadline`, from start.incumbent as its hint, and makes the cheaper of
// its answer and the incumbent start.incumbent. Without an incumbent, CP-SAT
// first lowers the peak of the schedule that computes every value once and
// frees it after its last reader, down to the budget, and starts from the
// solution it reaches there. `settled`: CP-SAT proved the answer optimal in
// the class, or that none fits (its least peak is over the budget).
CpAnswer SolveMoccasinCpSat(const Graph& graph, int64_t budget_bytes,
                            int computes, int threads, StagedStart& start,
                            const Deadline& deadline);

}  // namespace remat
