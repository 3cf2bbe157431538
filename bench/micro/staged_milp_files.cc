// The staged MILP as files, to compare MILP solvers on the very model
// checkmate_milp and moccasin solve (bench/studies/solver_choice.py):
//
//   staged_milp_files write GRAPH BUDGET_BYTES PREFIX [C]
//     builds the model as checkmate_milp does with its defaults (warm start
//     from the staged heuristics, staged in the incumbent's order; C > 0:
//     moccasin's rows, each value computed at most C times) and writes
//     PREFIX.mps, PREFIX.start.sol (the warm start as a HiGHS solution
//     file, absent when no heuristic fits once staged) and PREFIX.json;
//   staged_milp_files count GRAPH
//     prints the model's size in the graph's order (CountCheckmateModel),
//     without building it;
//   staged_milp_files cbc PREFIX SECONDS THREADS
//     solves PREFIX.mps with CBC from PREFIX.start.sol, with the settings
//     of staged_milp.cc (preprocessing off, wall-clock limit), and prints
//     one JSON line: status, objective, bound, gap, seconds.
#include <Cbc_C_Interface.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "algorithms/checkmate/checkmate_model.h"
#include "algorithms/checkmate/milp_files.h"
#include "harness/runner.h"
#include "model/algorithm.h"
#include "model/graph_source.h"
#include "model/params.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

int Write(const std::string& graph_spec, int64_t budget,
          const std::string& prefix, int max_computes) {
  const Graph graph = LoadGraph(graph_spec);
  const std::string owner = max_computes > 0 ? "moccasin" : "checkmate_milp";
  SolveRequest request;
  request.budget_bytes = budget;
  // The warm start runs the heuristics as the runner would.
  request.sub_solver = &RunnerSubSolver();
  // The staged options as both algorithms declare them, at their defaults.
  const Options<CheckmateOptions> options(CheckmateOptionFields(
      owner, std::string("checkmate_lp+") + kStagedHeuristics, kMilpLimits));
  request.params = Params::Parse({}, options.Specs(), owner);
  // The warm start gets what it gets in a 60 s solve: a quarter of it.
  request.deadline = Deadline::In(60);
  const auto started = std::chrono::steady_clock::now();
  StagedStart start = BestStagedStart(
      graph, request, options.Read(request.params), max_computes);
  const double warm_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  const CheckmateModel& model = start.model;
  {
    std::ofstream mps(prefix + ".mps");
    WriteMps(model, mps);
  }
  nlohmann::json meta = {{"graph", graph_spec},
                         {"budget_bytes", budget},
                         {"max_computes", max_computes},
                         {"columns", model.num_cols()},
                         {"rows", model.num_rows()},
                         {"nonzeros", model.values().size()},
                         {"cost_scale", model.cost_scale()},
                         {"stage_order", start.order_source},
                         {"warm_start_seconds", warm_seconds}};
  std::optional<std::vector<double>> x;
  if (start.incumbent) x = model.PointOf(start.incumbent->schedule);
  if (x) {
    std::ofstream sol(prefix + ".start.sol");
    WriteHighsStart(model, *x, sol);
    double objective = 0;
    for (int c = 0; c < model.num_cols(); ++c) {
      objective += model.objective()[c] * (*x)[c];
    }
    meta["start_objective"] = objective;
    meta["start_algorithm"] = start.incumbent->algorithm;
  } else {
    meta["start_objective"] = nullptr;
  }
  std::ofstream(prefix + ".json") << meta.dump(1) << "\n";
  return 0;
}

int Count(const std::string& graph_spec) {
  const Graph graph = LoadGraph(graph_spec);
  const std::vector<NodeId> order = NoRematOrder(graph);
  const CheckmateModelSize size = CountCheckmateModel(graph, order);
  std::cout << nlohmann::json{{"needed_nodes", order.size()},
                              {"cols", size.cols},
                              {"rows", size.rows},
                              {"nonzeros", size.nonzeros}}
                   .dump()
            << "\n";
  return 0;
}

int SolveCbc(const std::string& prefix, double seconds, int threads) {
  Cbc_Model* cbc = Cbc_newModel();
  if (Cbc_readMps(cbc, (prefix + ".mps").c_str()) != 0) {
    std::cerr << "cannot read " << prefix << ".mps\n";
    return 2;
  }
  std::ifstream sol(prefix + ".start.sol");
  if (sol) {
    const HighsSolution start = ReadHighsSolution(sol, Cbc_getNumCols(cbc));
    if (start.x) {
      std::vector<int> cols(start.x->size());
      for (size_t i = 0; i < cols.size(); ++i) cols[i] = static_cast<int>(i);
      Cbc_setMIPStartI(cbc, static_cast<int>(cols.size()), cols.data(),
                       start.x->data());
    }
  }
  Cbc_setLogLevel(cbc, 0);
  Cbc_setParameter(cbc, "log", "0");
  Cbc_setParameter(cbc, "timeMode", "elapsed");
  Cbc_setParameter(cbc, "preprocess", "off");
  Cbc_setParameter(cbc, "threads", std::to_string(threads).c_str());
  Cbc_setMaximumSeconds(cbc, seconds);
  const auto started = std::chrono::steady_clock::now();
  Cbc_solve(cbc);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  nlohmann::json out = {{"solver", "cbc"}, {"seconds", took}};
  const bool optimal = Cbc_isProvenOptimal(cbc) != 0;
  if (Cbc_isProvenInfeasible(cbc)) {
    out["status"] = "infeasible";
  } else if (Cbc_bestSolution(cbc) == nullptr) {
    out["status"] = "no_solution";
  } else {
    const double objective = Cbc_getObjValue(cbc);
    const double bound = optimal ? objective : Cbc_getBestPossibleObjValue(cbc);
    out["status"] = optimal ? "optimal" : "time_limit";
    out["objective"] = objective;
    out["bound"] = bound;
    out["gap"] =
        objective > 0 ? std::max(0.0, (objective - bound) / objective) : 0.0;
  }
  if (!out.contains("bound")) out["bound"] = Cbc_getBestPossibleObjValue(cbc);
  std::cout << out.dump() << "\n";
  Cbc_deleteModel(cbc);
  return 0;
}

}  // namespace
}  // namespace remat

int main(int argc, char** argv) {
  const std::string usage =
      "usage: staged_milp_files write GRAPH BUDGET_BYTES PREFIX [C]\n"
      "       staged_milp_files count GRAPH\n"
      "       staged_milp_files cbc PREFIX SECONDS THREADS\n";
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && (argc == 5 || argc == 6)) {
      return remat::Write(argv[2], std::atoll(argv[3]), argv[4],
                          argc == 6 ? std::atoi(argv[5]) : 0);
    }
    if (mode == "count" && argc == 3) return remat::Count(argv[2]);
    if (mode == "cbc" && argc == 5) {
      return remat::SolveCbc(argv[2], std::atof(argv[3]), std::atoi(argv[4]));
    }
  } catch (const std::exception& e) {
    std::cerr << "staged_milp_files: " << e.what() << "\n";
    return 2;
  }
  std::cerr << usage;
  return 2;
}
