// A schedule of Moccasin's class built without a solver: moccasin's start
// when no heuristic of its warm start fits inside the class (on
// Checkmate's random layered graphs of 250 to 1,000 nodes none does, and
// CP-SAT then searched from an infeasible hint).
#pragma once

#include <cstdint>
#include <optional>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/common/warm_start.h"
#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

// The default bound on each rule's walks (GreedyIntervalStart).
inline constexpr int kMaxRepairWalks = 300;

// The cheapest of a few greedy walks over `model`'s positions (stage by
// stage, node by node) that each compute every value at most `computes`
// times and hold it for one interval per compute, as the interval model
// does (moccasin_cp.h): each stage computes its node after recomputing the
// inputs it no longer holds (and theirs); where a compute would go over
// `budget_bytes`, the walk ends the interval of a held value that it can
// compute again at its next read (each walk ranks them by its own rule: the
// furthest next read among those whose recompute holds no input longer,
// the most bytes x stages saved net of the inputs' longer holds, or that
// per unit of recompute cost; where none of those is left, any value that
// can be computed again, with its inputs), and a value is freed after its
// last read once nothing can need it again. A rule's walk that meets a
// compute it cannot fit is walked again, up to `max_walks` walks by each
// rule (after each rule's first, only until `deadline`), with one more
// value kept from eviction and free until the stage it failed at: one that
// might have let it fit there (held there but computed `computes` times
// already, recomputed there, or the missing input of a held value that
// cannot be computed again), the largest not tried; kept while the walks
// fail no sooner, undone when they fail sooner (a bounded local search on
// the failing stage, in the manner of iterated repair). Each schedule is
// checked by the simulator; nullopt when no walk fits.
std::optional<Incumbent> GreedyIntervalStart(
    const Graph& graph, const CheckmateModel& model, int64_t budget_bytes,
    int computes, const Deadline& deadline = Deadline::Never(),
    int max_walks = kMaxRepairWalks);

}  // namespace remat
