// Solving a staged model (checkmate_model.h) with COIN-OR CBC: the one
// wiring that checkmate_milp and moccasin share (warm start, MIP start,
// standby answer, time limit, threads, preprocessing, and reading the
// solution back into a schedule).
#pragma once

#include <string>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "harness/algorithm.h"
#include "harness/graph.h"

namespace remat {

// The schedule class a solve is exact in, for its messages: "staged
// schedules" for checkmate_milp, Moccasin's for moccasin.
struct StagedMilpClass {
  std::string name;
  // 0: no limit; else each value is computed at most this many times.
  int max_computes = 0;
};

// Refuses as RefuseCheckmateRequest does, builds the model in the order of
// BestStagedStart and solves it with CBC until the request's deadline. The
// result is optimal within `schedule_class` when CBC proves it; its bound
// is reported as staged_lower_bound_cost, never as a bound on other
// algorithms.
AlgorithmOutput SolveStagedMilp(const Graph& graph, const SolveRequest& request,
                                const StagedMilpClass& schedule_class);
// The same from a warm start and model already built (BestStagedStart).
AlgorithmOutput SolveStagedMilp(const SolveRequest& request,
                                const StagedMilpClass& schedule_class,
                                StagedStart staged_start);

// The parameters of SolveStagedMilp (preprocess, cost_target, threads).
std::vector<ParamSpec> CbcParams();

}  // namespace remat
