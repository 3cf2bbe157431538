// Checkmate's approximation (Jain et al., MLSys 2020, section 5): the
// staged model's LP relaxation solved by Clp and its keep decisions rounded
// into schedules, the cheapest that fits kept. checkmate_lp answers with
// it; the staged MILP (staged_milp.h) uses it where it runs no MILP solver,
// so that it never answers dearer than checkmate_lp given the same time.
#pragma once

#include <cstdint>
#include <optional>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/common/candidate_pool.h"
#include "model/algorithm.h"
#include "model/graph.h"

namespace remat {

struct LpRoundingOptions {
  // Budget fraction the LP is solved at again, to leave room for rounding.
  double lp_fraction = 0.9;
  // Randomized roundings tried besides the thresholds.
  int64_t random_roundings = 32;
  int64_t seed = 0;
};

struct RoundedLp {
  // The LP at the budget is infeasible: no staged schedule fits.
  bool infeasible = false;
  // The LP at the budget was solved: `lp_value` bounds every staged
  // schedule's cost. Else, where `best` is set, the LP stopped at its
  // share of the time and its last iterate was rounded.
  bool lp_solved = false;
  double lp_value = 0;  // cost units, not the model's scaled ones
  // The seconds the LP at the budget was given.
  double lp_seconds = 0;
  // An LP solution or last iterate was rounded (else Clp stopped without
  // one).
  bool rounded = false;
  // The cheapest rounding that fits, else the one of least peak.
  std::optional<CandidatePool::Candidate> best;
  bool fits = false;
  int offered = 0;
};

// Solves `model`'s relaxation at `budget_bytes`, then at lp_fraction of
// it, and rounds both by the paper's two-phase deterministic rounding
// (the keep decisions at thresholds, the cheapest recomputations for each)
// and its randomized rounding, until `deadline`. The LPs stop at shares of
// the time (lp_rounding.cc says which and why), so that roundings remain.
RoundedLp RoundRelaxation(const Graph& graph, const CheckmateModel& model,
                          int64_t budget_bytes, const Deadline& deadline,
                          const LpRoundingOptions& options);

// The LP value's bound on the model's integer objective, in cost units:
// the objective takes integer values of cost_scale, so it rounds up.
int64_t StagedBoundOf(const CheckmateModel& model, double lp_value);

}  // namespace remat
