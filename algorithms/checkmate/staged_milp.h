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
#include "model/algorithm.h"

namespace remat {

// The schedule class a solve is exact in, for its messages: "staged
// schedules" for checkmate_milp, Moccasin's for moccasin.
struct StagedMilpClass {
  std::string name;
  // 0: no limit; else each value is computed at most this many times.
  int max_computes = 0;
};

// kAuto: CBC for a share of the time, then HiGHS (staged_milp.cc says
// when and why).
enum class MilpSolver { kCbc, kHighs, kAuto };
// "CBC", "HiGHS" or "CBC then HiGHS", for messages.
std::string_view MilpSolverName(MilpSolver solver);

// The options of SolveStagedMilp that checkmate_milp and moccasin share.
enum class CbcPreprocess { kAuto, kOn, kOff };
struct StagedMilpOptions {
  CbcPreprocess preprocess;
  int64_t cost_target;  // 0: minimize
  // Where a warm start fits and the model has more nonzeros than this
  // times the seconds left, the MILP solver is not run (0: always run):
  // the answer is the cheaper of the warm start and the LP relaxation's
  // roundings (lp_rounding.h), with the LP's bound.
  double settle_nonzeros_per_second;
  int threads;
};
// Their declaration: preprocess, cost_target, settle_nonzeros_per_second,
// threads.
std::vector<OptionField<StagedMilpOptions>> StagedMilpOptionFields();

// Solves the model of `staged_start` (BestStagedStart: the staged class,
// and so the MILP's optimum, depends on its stage order) with `solver`
// until the request's deadline, with the options `checkmate` and `milp`.
// The result is optimal within `schedule_class` when the solver proves it;
// its bound is reported as staged_lower_bound_cost, never as a bound on
// other algorithms. A solver that cannot run (HiGHS's executable missing)
// makes status error, with the reason.
AlgorithmOutput SolveStagedMilp(const Graph& graph,
                                const SolveRequest& request,
                                const CheckmateOptions& checkmate,
                                const StagedMilpOptions& milp,
                                const StagedMilpClass& schedule_class,
                                StagedStart staged_start, MilpSolver solver);

// The MILP solver by default, chosen by measurement (docs/algorithms.md,
// "Which MILP solver"; results/solver_choice/cpu.md): HiGHS proves the
// VGG19 optima at batch 379 that CBC leaves open (the Checkmate budget in
// 20 s, where CBC stood at a 3.1% gap after 300 s), and on the default
// corpus at 10 s it proved 9 points to CBC's 8 and bounded 4 more; CBC
// proves small models up to 39x sooner. Hence CBC first on small models.
inline constexpr MilpSolver kDefaultMilpSolver = MilpSolver::kAuto;
// checkmate_milp's `solver` option (auto, highs or cbc).
template <typename T>
OptionField<T> MilpSolverOption(MilpSolver T::*member) {
  return ChoiceOption(
      member, "solver", kDefaultMilpSolver,
      {{"auto", MilpSolver::kAuto},
       {"highs", MilpSolver::kHighs},
       {"cbc", MilpSolver::kCbc}},
      "MILP solver: auto (default: on models of at most 100,000 nonzeros "
      "CBC for a quarter of the time, at most 30 s, then HiGHS unless CBC "
      "settled it; HiGHS on larger ones), highs (HiGHS's executable in a child "
      "process, from "
      "highsbox in the project's Python environment, REMAT_HIGHS or PATH) "
      "or cbc (COIN-OR CBC in this process)");
}

}  // namespace remat
