// Solving a staged model (checkmate_model.h) with a MILP solver, COIN-OR
// CBC in this process or HiGHS's executable in a child process
// (highs_process.h): the one wiring that checkmate_milp and moccasin share
// (warm start, MIP start, standby answer, time limit, threads, and reading
// the solution back into a schedule).
#pragma once

#include <string>
#include <string_view>
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

enum class MilpSolver { kCbc, kHighs };
// "CBC" or "HiGHS", for messages.
std::string_view MilpSolverName(MilpSolver solver);
// "cbc" -> kCbc, "highs" -> kHighs (the values of the solver parameters).
MilpSolver MilpSolverNamed(const std::string& name);

// Refuses as RefuseCheckmateRequest does, builds the model in the order of
// BestStagedStart and solves it with `solver` until the request's
// deadline. The result is optimal within `schedule_class` when the solver
// proves it; its bound is reported as staged_lower_bound_cost, never as a
// bound on other algorithms. A solver that cannot run (HiGHS's executable
// missing) makes status error, with the reason.
AlgorithmOutput SolveStagedMilp(const Graph& graph, const SolveRequest& request,
                                const StagedMilpClass& schedule_class,
                                MilpSolver solver);
// The same from a warm start and model already built (BestStagedStart).
AlgorithmOutput SolveStagedMilp(const SolveRequest& request,
                                const StagedMilpClass& schedule_class,
                                StagedStart staged_start, MilpSolver solver);

// The parameters of SolveStagedMilp (preprocess, cost_target, threads).
std::vector<ParamSpec> CbcParams();

// The MILP solver by default, chosen by measurement (docs/algorithms.md,
// "Which MILP solver"; results/solver_choice/cpu.md): HiGHS proves the
// VGG19 optima at batch 379 that CBC leaves open (the Checkmate budget in
// 20 s, where CBC stood at a 3.1% gap after 300 s), and on the default
// corpus at 10 s it proved 9 points to CBC's 8 and bounded 4 more; CBC is
// up to 3x faster on small models that both prove.
inline constexpr const char* kDefaultMilpSolver = "highs";
// checkmate_milp's `solver` parameter (highs or cbc).
ParamSpec MilpSolverParam();

}  // namespace remat
