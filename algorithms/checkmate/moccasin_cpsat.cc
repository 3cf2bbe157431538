// Moccasin's interval model on CP-SAT in a child process
// (moccasin_cpsat.h).
#include "algorithms/checkmate/moccasin_cpsat.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "algorithms/checkmate/child_process.h"
#include "harness/simulator.h"

// The build's defaults, which the environment overrides; the Python only
// where the build found one with ortools (CMakeLists.txt).
#ifndef REMAT_CPSAT_PYTHON_DEFAULT
#define REMAT_CPSAT_PYTHON_DEFAULT ""
#endif
#ifndef REMAT_CPSAT_SCRIPT_DEFAULT
#define REMAT_CPSAT_SCRIPT_DEFAULT ""
#endif

namespace remat {
namespace {

using Json = nlohmann::json;

bool IsFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// The retention intervals of `schedule` on the positions of `model`'s
// stages, node by node in stage order: CP-SAT's hint. A compute out of the
// stage order lands where the order puts it, so a hint need not be a
// solution.
Json HintOf(const CheckmateModel& model, const Schedule& schedule) {
  const int n = static_cast<int>(model.order().size());
  std::vector<int> stage_of(
      1 + *std::max_element(model.order().begin(), model.order().end()), -1);
  for (int k = 0; k < n; ++k) stage_of[model.order()[k]] = k;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> spans(n);
  std::vector<int> open(n, -1);  // index in spans[k] of k's live interval
  int stage = -1;
  for (const Event& e : schedule) {
    if (e.node >= static_cast<NodeId>(stage_of.size())) continue;
    const int k = stage_of[e.node];
    if (k < 0) continue;
    if (e.op == Event::Op::kCompute) {
      stage = std::max(stage, k);
      const int64_t p = IntervalPosition(stage, std::min(k, stage));
      for (int u : model.inputs()[k]) {
        if (open[u] >= 0) {
          spans[u][open[u]].second = std::max(spans[u][open[u]].second, p);
        }
      }
      open[k] = static_cast<int>(spans[k].size());
      spans[k].emplace_back(p, p);
    } else if (e.op == Event::Op::kFree) {
      open[k] = -1;
    }
  }
  Json hint = Json::array();
  for (const auto& s : spans) {
    Json node = Json::array();
    for (auto [a, b] : s) node.push_back({a, b});
    hint.push_back(std::move(node));
  }
  return hint;
}

// Every value computed at its own stage and held to its last reader's
// first compute: the hint when no warm start fits.
Json OnceHint(const CheckmateModel& model) {
  Json hint = Json::array();
  const int n = static_cast<int>(model.order().size());
  for (int i = 0; i < n; ++i) {
    int last = i;
    for (int k : model.consumers()[i]) last = std::max(last, k);
    hint.push_back(Json::array(
        {Json::array({IntervalPosition(i, i), IntervalPosition(last, last)})}));
  }
  return hint;
}

// The environment variable `name`'s value where it is set, else `fallback`.
std::string EnvironmentOr(const char* name, const char* fallback) {
  const char* given = std::getenv(name);
  return given != nullptr ? given : fallback;
}

}  // namespace

std::optional<CpSatProgram> FindCpSat() {
  const CpSatProgram program{
      .python = EnvironmentOr("REMAT_CPSAT_PYTHON", REMAT_CPSAT_PYTHON_DEFAULT),
      .script =
          EnvironmentOr("REMAT_CPSAT_SCRIPT", REMAT_CPSAT_SCRIPT_DEFAULT)};
  if (program.python.empty() || access(program.python.c_str(), X_OK) != 0 ||
      !IsFile(program.script)) {
    return std::nullopt;
  }
  return program;
}

CpAnswer SolveMoccasinCpSat(const Graph& graph, int64_t budget_bytes,
                            int computes, int threads, StagedStart& start,
                            const Deadline& deadline) {
  const std::optional<CpSatProgram> program = FindCpSat();
  if (!program) {
    return {AlgorithmOutput::NoSchedule(
                Status::kError,
                "CP-SAT was not found: it needs a Python with ortools "
                "(python/requirements.txt; REMAT_CPSAT_PYTHON) and "
                "python/rematbench/moccasin_cpsat.py (REMAT_CPSAT_SCRIPT)"),
            false};
  }
  const CheckmateModel& model = start.model;
  std::optional<Incumbent>& incumbent = start.incumbent;
  const int n = static_cast<int>(model.order().size());
  const int64_t cost_scale = model.cost_scale();
  Json nodes = Json::array();
  int64_t total_mem = 0, max_workspace = 0;
  for (int k = 0; k < n; ++k) {
    total_mem += model.mem_bytes()[k];
    max_workspace = std::max(max_workspace, model.workspace_bytes()[k]);
    nodes.push_back({{"id", model.order()[k]},
                     {"mem", model.mem_bytes()[k]},
                     {"workspace", model.workspace_bytes()[k]},
                     {"cost", graph.cost(model.order()[k]) / cost_scale},
                     {"inputs", model.inputs()[k]},
                     {"consumers", model.consumers()[k]}});
  }
  // No moment holds more than every value once and one workspace.
  const int64_t capacity = std::min(budget_bytes, total_mem + max_workspace);
  // Python's start and the model's construction come out of the limit: the
  // script gives CP-SAT what is left of `seconds` when it starts solving.
  const double seconds = std::max(0.0, deadline.SecondsLeft() - 0.2);
  const Json problem = {{"computes", computes},
                        {"capacity", capacity},
                        {"seconds", seconds},
                        {"workers", threads},
                        {"nodes", std::move(nodes)},
                        {"hint", incumbent ? HintOf(model, incumbent->schedule)
                                           : OnceHint(model)}};
  TempDir dir("remat-cpsat-");
  if (dir.path().empty()) {
    return {AlgorithmOutput::NoSchedule(
                Status::kError, "cannot create a temporary folder for CP-SAT"),
            false};
  }
  const std::string problem_file = dir.path() + "/problem.json";
  const std::string answer_file = dir.path() + "/answer.json";
  {
    std::ofstream out(problem_file);
    out << problem;
    if (!out) {
      return {
          AlgorithmOutput::NoSchedule(
              Status::kError,
              fmt::format("cannot write CP-SAT's problem in {}", dir.path())),
          false};
    }
  }
  const ChildRun child = RunChild(
      "CP-SAT", {program->python, program->script, problem_file, answer_file},
      {"PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"}, dir.path(), seconds);
  auto failed = [&](std::string why) {
    return CpAnswer{AlgorithmOutput::NoSchedule(Status::kError, std::move(why)),
                    false};
  };
  if (!child.error.empty()) return failed(child.error);
  if (child.exit_status != 0) {
    return failed(fmt::format("{} {} exited with status {}: {}",
                              program->python, program->script,
                              child.exit_status, LastLine(child.log)));
  }
  Json answer;
  try {
    std::ifstream in(answer_file);
    answer = Json::parse(in);
  } catch (const std::exception& e) {
    return failed(fmt::format("unreadable CP-SAT answer: {}", e.what()));
  }
  const std::string status = answer.value("status", "");
  const bool optimal = status == "OPTIMAL";
  const bool infeasible = status == "INFEASIBLE";
  // Every schedule computes each value once at least: CP-SAT's bound is
  // below that until its presolve ends.
  int64_t base_cost = 0;
  for (NodeId v : model.order()) base_cost += graph.cost(v) / cost_scale;
  const double bound =
      std::max(answer.value("bound", 0.0), static_cast<double>(base_cost));
  const std::string how = fmt::format("CP-SAT {} in {:.1f} s, bound {:.0f}",
                                      status, answer.value("seconds", 0.0),
                                      bound * static_cast<double>(cost_scale));
  if (status == "MODEL_INVALID") {
    return failed(fmt::format("CP-SAT refused the model ({})", how));
  }
  bool improved = false;
  if (!answer["intervals"].is_null()) {
    Schedule schedule;
    try {
      RetentionIntervals intervals(n);
      for (int i = 0; i < n; ++i) {
        for (const Json& span : answer["intervals"].at(i)) {
          intervals[i].emplace_back(span.at(0).get<int64_t>(),
                                    span.at(1).get<int64_t>());
        }
      }
      schedule = ScheduleOfIntervals(model, intervals);
    } catch (const std::exception& e) {
      return failed(fmt::format("CP-SAT's intervals: {}", e.what()));
    }
    const SimulationResult simulated = Simulate(graph, schedule);
    if (!simulated.valid || simulated.peak_bytes > budget_bytes) {
      return failed(fmt::format(
          "CP-SAT's schedule {} (the interval model and the simulator "
          "disagree)",
          simulated.valid ? fmt::format("peaks at {} bytes, over the budget",
                                        simulated.peak_bytes)
                          : simulated.error));
    }
    const int64_t cost = simulated.cost;
    if (!incumbent || cost < incumbent->cost) {
      incumbent = Incumbent{std::move(schedule), cost, "moccasin (CP-SAT)"};
      improved = true;
    }
  }
  if (!incumbent) {
    return {AlgorithmOutput::NoSchedule(
                infeasible ? Status::kInfeasible : Status::kTimeout,
                fmt::format("{} ({})",
                            infeasible ? "no schedule of its class fits "
                                         "(other schedules may)"
                                       : "no schedule found within the time "
                                         "limit",
                            how)),
            infeasible};
  }
  // Proven optimal: CP-SAT's answer, or the incumbent when CP-SAT's costs
  // the same (the simulator's cost is the objective's, times cost_scale).
  const bool settled =
      optimal &&
      (improved ||
       incumbent->cost <= answer.value("objective", int64_t{0}) * cost_scale);
  const char* outcome =
      settled ? "optimal among staged schedules computing each value at "
                "most C times"
              : "time limit before proving optimality";
  std::string message =
      improved ? fmt::format("{} ({})", outcome, how)
               : fmt::format("warm start {}, none cheaper found: {} ({})",
                             incumbent->algorithm, outcome, how);
  AlgorithmOutput out =
      AlgorithmOutput::Found(incumbent->schedule, std::move(message));
  out.optimal = settled;
  // A bound of the class; the objective takes integer values.
  out.staged_lower_bound_cost =
      settled ? incumbent->cost
              : static_cast<int64_t>(std::ceil(bound - 1e-6)) * cost_scale;
  if (!settled) out.status = Status::kTimeout;
  return {std::move(out), settled};
}

}  // namespace remat
