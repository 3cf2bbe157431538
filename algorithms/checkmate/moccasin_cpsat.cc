// Moccasin's interval model on CP-SAT in a child process
// (moccasin_cpsat.h).
#include "algorithms/checkmate/moccasin_cpsat.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <variant>

#include "algorithms/checkmate/child_process.h"
#include "model/simulator.h"

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

// CP-SAT's model as the text of its protocol buffer
// (operations_research.sat.CpModelProto), which the child parses and
// solves: written here, the child imports only CP-SAT's extension (0.1 s
// where the Python modelling layer, with pandas, took 0.4 s a solve) and
// builds nothing in Python. Variables and constraints are numbered in the
// order they are added; a literal is a Boolean variable's index, its
// negation -index - 1, as in the format.
class CpModelText {
 public:
  int NewRange(int64_t lo, int64_t hi) {
    fmt::format_to(std::back_inserter(variables_),
                   "variables {{ domain: [{}, {}] }}\n", lo, hi);
    return num_variables_++;
  }
  int NewBool() { return NewRange(0, 1); }
  static int Not(int literal) { return -literal - 1; }

  // lo <= sum coeff * var <= hi where every `enforce` literal holds.
  void Linear(std::initializer_list<int> enforce,
              std::initializer_list<std::pair<int, int64_t>> terms, int64_t lo,
              int64_t hi) {
    std::vector<int> vars;
    std::vector<int64_t> coeffs;
    for (const auto& [var, coeff] : terms) {
      vars.push_back(var);
      coeffs.push_back(coeff);
    }
    Open(enforce);
    fmt::format_to(std::back_inserter(constraints_),
                   "linear {{ vars: [{}] coeffs: [{}] domain: [{}, {}] }} }}\n",
                   fmt::join(vars, ", "), fmt::join(coeffs, ", "), lo, hi);
    ++num_constraints_;
  }
  // Every literal of `literals` (all: "and", one at least: "or") where
  // every `enforce` literal holds.
  void Bool(const char* kind, std::initializer_list<int> enforce,
            const std::vector<int>& literals) {
    Open(enforce);
    fmt::format_to(std::back_inserter(constraints_),
                   "bool_{} {{ literals: [{}] }} }}\n", kind,
                   fmt::join(literals, ", "));
    ++num_constraints_;
  }
  // coeff * var + offset (a constant without a variable: var < 0).
  struct Affine {
    int var = -1;
    int64_t coeff = 0, offset = 0;
  };
  // The interval [start, end) of length size, where `enforce` holds (absent
  // otherwise). Returns its constraint's index.
  int Interval(int enforce, Affine start, Affine size, Affine end) {
    Open({enforce});
    fmt::format_to(
        std::back_inserter(constraints_),
        "interval {{ start {{ {} }} end {{ {} }} size {{ {} }} }} }}\n",
        Expression(start), Expression(end), Expression(size));
    return num_constraints_++;
  }
  void Cumulative(const std::vector<int>& intervals,
                  const std::vector<int64_t>& demands, Affine capacity) {
    Open({});
    fmt::format_to(std::back_inserter(constraints_),
                   "cumulative {{ capacity {{ {} }} intervals: [{}]",
                   Expression(capacity), fmt::join(intervals, ", "));
    for (int64_t d : demands) {
      fmt::format_to(std::back_inserter(constraints_),
                     " demands {{ offset: {} }}", d);
    }
    constraints_ += " } }\n";
    ++num_constraints_;
  }
  void Minimize(const std::vector<int>& vars,
                const std::vector<int64_t>& coeffs) {
    objective_ = fmt::format("objective {{ vars: [{}] coeffs: [{}] }}\n",
                             fmt::join(vars, ", "), fmt::join(coeffs, ", "));
  }
  void Hint(int var, int64_t value) {
    hint_vars_.push_back(var);
    hint_values_.push_back(value);
  }
  void ClearHints() {
    hint_vars_.clear();
    hint_values_.clear();
  }
  int num_variables() const { return num_variables_; }

  std::string Text() const {
    return fmt::format("{}{}{}solution_hint {{ vars: [{}] values: [{}] }}\n",
                       variables_, constraints_, objective_,
                       fmt::join(hint_vars_, ", "),
                       fmt::join(hint_values_, ", "));
  }

 private:
  static std::string Expression(const Affine& a) {
    return a.var < 0 ? fmt::format("offset: {}", a.offset)
                     : fmt::format("vars: [{}] coeffs: [{}] offset: {}", a.var,
                                   a.coeff, a.offset);
  }
  void Open(std::initializer_list<int> enforce) {
    constraints_ += "constraints { ";
    if (enforce.size() > 0) {
      fmt::format_to(std::back_inserter(constraints_),
                     "enforcement_literal: [{}] ", fmt::join(enforce, ", "));
    }
  }

  std::string variables_, constraints_, objective_;
  std::vector<int> hint_vars_;
  std::vector<int64_t> hint_values_;
  int num_variables_ = 0, num_constraints_ = 0;
};

// Each value's retention intervals of `schedule` on the positions of
// `model`'s stages, node by node in stage order: CP-SAT's hint. A compute
// out of the stage order lands where the order puts it, so a hint need not
// be a solution.
RetentionIntervals HintOf(const CheckmateModel& model,
                          const Schedule& schedule) {
  const int n = static_cast<int>(model.order().size());
  std::vector<int> stage_of(
      1 + *std::max_element(model.order().begin(), model.order().end()), -1);
  for (int k = 0; k < n; ++k) stage_of[model.order()[k]] = k;
  RetentionIntervals spans(n);
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
  return spans;
}

// Every value computed at its own stage and held to its last reader's
// first compute: the hint when no warm start fits.
RetentionIntervals OnceHint(const CheckmateModel& model) {
  const int n = static_cast<int>(model.order().size());
  RetentionIntervals hint(n);
  for (int i = 0; i < n; ++i) {
    int last = i;
    for (int k : model.consumers()[i]) last = std::max(last, k);
    hint[i].emplace_back(IntervalPosition(i, i), IntervalPosition(last, last));
  }
  return hint;
}

// (stage, slot) of position p of the interval model (IntervalPosition's
// inverse).
std::pair<int64_t, int64_t> StageAndSlot(int64_t p) {
  auto t = static_cast<int64_t>(
      (std::sqrt(8.0 * static_cast<double>(p) + 1) - 1) / 2);
  while (IntervalPosition(t + 1, 0) <= p) ++t;
  while (IntervalPosition(t, 0) > p) --t;
  return {t, p - IntervalPosition(t, 0)};
}

// Moccasin's interval model of `model` (the one moccasin_cp.cc gives
// Gecode): each value i has `computes` intervals of positions [s, e], the
// first starting at its own stage, the others optional, each starting at a
// recompute after the previous one ended; a compute needs each input held
// by an interval that started before it and has not ended; one cumulative
// constraint holds the intervals (and each compute's workspace) within
// `capacity`; the objective is the cost of the present intervals. CP-SAT's
// integers are 64 bits: bytes and costs are exact.
//
// The positions here are a rectangle, not IntervalPosition's triangle:
// stage t's slot k is t * n + k, so that a compute's position is an affine
// expression of its stage, a variable with a contiguous domain. With the
// triangle's positions as variables whose domains list the positions (one
// hole after each), CP-SAT's presolve ran for the whole minute on the
// 250-node random graph (PresolveToFixPoint, at 4e-6 units of
// deterministic time), where the same model with contiguous domains
// presolved in 0.05 s. The slots k > t are empty: an interval may end on
// one (as on any slot: holding a value longer only adds memory), which
// means the same as ending on (t, t), and every interval there also holds
// (t, t), so the cumulative constraint binds nothing more there. An
// interval's end is any slot from its start on, the same way.
//
// What it minimizes: the cost within `capacity` (kCost), or the capacity
// itself, a variable from `capacity` up to `top` (kPeak), which no schedule
// exceeds; a solution at `capacity` is then optimal and ends the search.
enum class Objective { kCost, kPeak };

struct IntervalModel {
  CpModelText text;
  int width = 0;  // n: the slots of a stage
  // present, stage (of the compute that starts it) and end (position)
  // variables of value i's interval j, at [i * computes + j].
  std::vector<int> present, stage, end;
  int peak = -1;  // kPeak: the capacity's variable
};

IntervalModel BuildIntervalModel(const Graph& graph,
                                 const CheckmateModel& model, int computes,
                                 int64_t capacity, int64_t top,
                                 Objective objective,
                                 const RetentionIntervals& hint) {
  const int n = static_cast<int>(model.order().size());
  const int c = computes;
  const int64_t w = n;
  const int64_t last = w * n - 1;
  IntervalModel m;
  CpModelText& t = m.text;
  m.width = n;
  m.present.resize(n * c);
  m.stage.resize(n * c);
  m.end.resize(n * c);
  const int one = t.NewRange(1, 1);
  std::vector<int> intervals;
  std::vector<int64_t> demands;
  using Affine = CpModelText::Affine;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < c; ++j) {
      const int at = i * c + j;
      const int p = j == 0 ? one : t.NewBool();
      // The first compute is in the value's own stage.
      const int stage = j == 0 ? t.NewRange(i, i) : t.NewRange(i, n - 1);
      const int e = t.NewRange(w * i + i, last);
      const int size = t.NewRange(1, last + 1);
      // size = e + 1 - s, s = w * stage + i.
      t.Linear({}, {{size, 1}, {e, -1}, {stage, w}}, 1 - i, 1 - i);
      if (j > 0) {
        t.Bool("and", {p}, {m.present[at - 1]});
        // s > the previous interval's end.
        t.Linear({p}, {{stage, w}, {m.end[at - 1], -1}}, 1 - i, last + 1);
        // An absent interval is pinned, so that nothing branches on it.
        t.Linear({CpModelText::Not(p)}, {{stage, 1}}, n - 1, n - 1);
        t.Linear({CpModelText::Not(p)}, {{e, 1}}, w * (n - 1) + i,
                 w * (n - 1) + i);
      }
      const Affine start{stage, w, i};
      intervals.push_back(
          t.Interval(p, start, Affine{size, 1, 0}, Affine{e, 1, 1}));
      demands.push_back(model.mem_bytes()[i]);
      if (model.workspace_bytes()[i] > 0) {
        intervals.push_back(
            t.Interval(p, start, Affine{.offset = 1}, Affine{stage, w, i + 1}));
        demands.push_back(model.workspace_bytes()[i]);
      }
      m.present[at] = p;
      m.stage[at] = stage;
      m.end[at] = e;
    }
  }
  for (int v = 0; v < n; ++v) {
    for (int j = 0; j < c; ++j) {
      const int sv = m.stage[v * c + j];
      for (int u : model.inputs()[v]) {
        std::vector<int> covers;
        for (int k = 0; k < c; ++k) {
          const int b = t.NewBool();
          t.Bool("and", {b}, {m.present[u * c + k]});
          // s_u < s_v <= e_u.
          t.Linear({b}, {{sv, w}, {m.stage[u * c + k], -w}}, 1 - v + u,
                   last + 1);
          t.Linear({b}, {{m.end[u * c + k], 1}, {sv, -w}}, v, last + 1);
          covers.push_back(b);
        }
        t.Bool("or", {m.present[v * c + j]}, covers);
      }
    }
  }
  if (objective == Objective::kPeak) {
    m.peak = t.NewRange(capacity, top);
    t.Cumulative(intervals, demands, Affine{m.peak, 1, 0});
    t.Minimize({m.peak}, {1});
    t.Hint(m.peak, top);
  } else {
    t.Cumulative(intervals, demands, Affine{.offset = capacity});
    std::vector<int64_t> costs;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < c; ++j) {
        costs.push_back(graph.cost(model.order()[i]) / model.cost_scale());
      }
    }
    t.Minimize(m.present, costs);
  }
  for (int i = 0; i < n && i < static_cast<int>(hint.size()); ++i) {
    for (int j = 0; j < c; ++j) {
      const int at = i * c + j;
      if (j < static_cast<int>(hint[i].size())) {
        if (j) t.Hint(m.present[at], 1);
        t.Hint(m.stage[at], StageAndSlot(hint[i][j].first).first);
        const auto [stage, slot] = StageAndSlot(hint[i][j].second);
        t.Hint(m.end[at], w * stage + slot);
      } else if (j) {
        t.Hint(m.present[at], 0);
      }
    }
  }
  return m;
}

// The environment variable `name`'s value where it is set, else `fallback`.
std::string EnvironmentOr(const char* name, const char* fallback) {
  const char* given = std::getenv(name);
  return given != nullptr ? given : fallback;
}

// The schedule of CP-SAT's `values` (every variable's, in `cp`'s order).
// Throws std::runtime_error when they do not fit the model.
Schedule ScheduleOfSolution(const CheckmateModel& model,
                            const IntervalModel& cp, int computes,
                            const Json& values) {
  if (static_cast<int>(values.size()) != cp.text.num_variables()) {
    throw std::runtime_error(fmt::format(
        "{} values for {} variables", values.size(), cp.text.num_variables()));
  }
  const int n = static_cast<int>(model.order().size());
  RetentionIntervals intervals(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < computes; ++j) {
      const int at = i * computes + j;
      if (values.at(cp.present[at]).get<int64_t>() == 1) {
        // Back to IntervalPosition's triangle; an end on an empty slot
        // (k > t) is the end of its stage.
        const int64_t end = values.at(cp.end[at]).get<int64_t>();
        const int64_t end_stage = end / cp.width;
        intervals[i].emplace_back(
            IntervalPosition(values.at(cp.stage[at]).get<int64_t>(), i),
            IntervalPosition(end_stage, std::min(end % cp.width, end_stage)));
      }
    }
  }
  return ScheduleOfIntervals(model, intervals);
}

// One solve of `cp` by the child process: its answer (the script's
// document), or why there is none.
struct CpSatRun {
  Json answer;
  std::string error;
};

CpSatRun RunCpSat(const CpSatProgram& program, const IntervalModel& cp,
                  double seconds, int threads) {
  TempDir dir("remat-cpsat-");
  if (dir.path().empty()) {
    return {{}, "cannot create a temporary folder for CP-SAT"};
  }
  const std::string model_file = dir.path() + "/model.txt";
  const std::string answer_file = dir.path() + "/answer.json";
  {
    std::ofstream out(model_file);
    out << cp.text.Text();
    if (!out) {
      return {{}, fmt::format("cannot write CP-SAT's model in {}", dir.path())};
    }
  }
  const ChildRun child = RunChild(
      "CP-SAT",
      {program.python, program.script, model_file, answer_file,
       fmt::format("{}", seconds), fmt::format("{}", threads)},
      {"PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"}, dir.path(), seconds);
  if (!child.error.empty()) return {{}, child.error};
  if (child.exit_status != 0) {
    return {
        {},
        fmt::format("{} {} exited with status {}: {}", program.python,
                    program.script, child.exit_status, LastLine(child.log))};
  }
  try {
    std::ifstream in(answer_file);
    return {Json::parse(in), ""};
  } catch (const std::exception& e) {
    return {{}, fmt::format("unreadable CP-SAT answer: {}", e.what())};
  }
}

}  // namespace

int64_t CountIntervalModel(const Graph& graph, int computes) {
  const std::vector<NodeId> needed = NoRematOrder(graph);
  const int64_t c = computes;
  int64_t literals = static_cast<int64_t>(needed.size()) * c;
  for (NodeId v : needed) {
    literals += static_cast<int64_t>(graph.inputs(v).size()) * c * c;
  }
  return literals;
}

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
  int64_t total_mem = 0, max_workspace = 0;
  for (int k = 0; k < n; ++k) {
    total_mem += model.mem_bytes()[k];
    max_workspace = std::max(max_workspace, model.workspace_bytes()[k]);
  }
  // No moment holds more than every value once and one workspace.
  const int64_t top = total_mem + max_workspace;
  const int64_t capacity = std::min(budget_bytes, top);
  auto failed = [](std::string why) {
    return CpAnswer{AlgorithmOutput::NoSchedule(Status::kError, std::move(why)),
                    false};
  };
  // The model's construction and Python's start come out of the limit: the
  // script gives CP-SAT what is left of its seconds when it starts solving.
  auto seconds_left = [&] {
    return std::max(0.0, deadline.SecondsLeft() - 0.2);
  };
  // A solution's schedule, simulated; its peak within `limit` unless the
  // interval model and the simulator disagree.
  auto simulate = [&](const IntervalModel& cp, const Json& values,
                      int64_t limit) -> std::variant<Schedule, std::string> {
    Schedule schedule;
    try {
      schedule = ScheduleOfSolution(model, cp, computes, values);
    } catch (const std::exception& e) {
      return fmt::format("CP-SAT's intervals: {}", e.what());
    }
    const SimulationResult simulated = Simulate(graph, schedule);
    if (!simulated.valid || simulated.peak_bytes > limit) {
      return fmt::format(
          "CP-SAT's schedule {} (the interval model and the simulator "
          "disagree)",
          simulated.valid ? fmt::format("peaks at {} bytes, over {}",
                                        simulated.peak_bytes, limit)
                          : simulated.error);
    }
    return schedule;
  };

  Json lowered;          // the solution that lowered the peak to the budget
  std::string lowering;  // how long that took, for the message
  if (!incumbent) {
    // No warm start fits. Under the budget CP-SAT rarely finds a first
    // schedule (none in 10 minutes at 80% of the NoRemat peak of the
    // 250-node random graph), but from the schedule that computes every
    // value once it lowers the peak step by step (to that budget in 76 s;
    // results/moccasin_scale/least-peak): so it first minimizes the peak,
    // down to the budget, and the schedule it reaches there starts the
    // search for the cheapest.
    const IntervalModel cp =
        BuildIntervalModel(graph, model, computes, capacity, top,
                           Objective::kPeak, OnceHint(model));
    const CpSatRun run = RunCpSat(*program, cp, seconds_left(), threads);
    if (!run.error.empty()) return failed(run.error);
    const std::string status = run.answer.value("status", "");
    if (status == "MODEL_INVALID") {
      return failed("CP-SAT refused the model (lowering the peak)");
    }
    std::string reached;
    if (!run.answer["solution"].is_null()) {
      const Json& values = run.answer["solution"];
      const int64_t peak = values.at(cp.peak).get<int64_t>();
      auto schedule = simulate(cp, values, peak);
      if (auto* why = std::get_if<std::string>(&schedule)) {
        return failed(*why);
      }
      if (peak <= budget_bytes) {
        lowered = values;
        lowering = fmt::format(
            "CP-SAT lowered the peak to the budget in {:.1f} s, then ",
            run.answer.value("seconds", 0.0));
        Schedule& fits = std::get<Schedule>(schedule);
        const int64_t cost = Simulate(graph, fits).cost;
        incumbent = Incumbent{std::move(fits), cost,
                              "moccasin (CP-SAT, the peak lowered first)"};
      } else {
        reached = fmt::format(", the least peak {} bytes", peak);
      }
    }
    if (!incumbent) {
      // Optimal (or infeasible) here: no schedule of the class is within
      // the budget.
      const bool none = status == "OPTIMAL" || status == "INFEASIBLE";
      return {
          AlgorithmOutput::NoSchedule(
              none ? Status::kInfeasible : Status::kTimeout,
              fmt::format("{} (CP-SAT lowering the peak: {} in {:.1f} s{})",
                          none ? "no schedule of its class fits (other "
                                 "schedules may)"
                               : "no schedule found within the time limit",
                          status, run.answer.value("seconds", 0.0), reached)),
          none};
    }
  }

  // Every schedule computes each value once at least: CP-SAT's bound is
  // below that until its presolve ends.
  int64_t base_cost = 0;
  for (NodeId v : model.order()) base_cost += graph.cost(v) / cost_scale;
  Json answer = {{"status", "UNKNOWN"}, {"bound", 0.0}, {"seconds", 0.0}};
  bool improved = false;
  // Less than a second left after lowering the peak: that schedule is the
  // answer.
  if (lowered.is_null() || seconds_left() >= 1.0) {
    IntervalModel cp = BuildIntervalModel(graph, model, computes, capacity, top,
                                          Objective::kCost,
                                          HintOf(model, incumbent->schedule));
    if (!lowered.is_null()) {
      // The solution that lowered the peak, whole: a hint made from its
      // schedule need not be a solution (HintOf), and CP-SAT did not repair
      // one on the 100-node random graph at 70% in 50 s. The variables are
      // the same but for the capacity's, the last.
      cp.text.ClearHints();
      for (int v = 0; v < cp.text.num_variables(); ++v) {
        cp.text.Hint(v, lowered.at(v).get<int64_t>());
      }
    }
    CpSatRun run = RunCpSat(*program, cp, seconds_left(), threads);
    if (!run.error.empty()) return failed(run.error);
    answer = std::move(run.answer);
    if (answer.value("status", "") == "MODEL_INVALID") {
      return failed("CP-SAT refused the model");
    }
    if (!answer["solution"].is_null()) {
      auto schedule = simulate(cp, answer["solution"], budget_bytes);
      if (auto* why = std::get_if<std::string>(&schedule)) {
        return failed(*why);
      }
      const int64_t cost = Simulate(graph, std::get<Schedule>(schedule)).cost;
      if (cost < incumbent->cost) {
        incumbent = Incumbent{std::move(std::get<Schedule>(schedule)), cost,
                              "moccasin (CP-SAT)"};
        improved = true;
      }
    }
  }
  const std::string status = answer.value("status", "");
  const double bound =
      std::max(answer.value("bound", 0.0), static_cast<double>(base_cost));
  const std::string how = fmt::format("CP-SAT {} in {:.1f} s, bound {:.0f}",
                                      status, answer.value("seconds", 0.0),
                                      bound * static_cast<double>(cost_scale));
  // Proven optimal: CP-SAT's answer, or the incumbent when CP-SAT's costs
  // the same (the simulator's cost is the objective's, times cost_scale).
  const bool settled =
      status == "OPTIMAL" &&
      (improved ||
       incumbent->cost <= answer.value("objective", int64_t{0}) * cost_scale);
  const char* outcome =
      settled ? "optimal among staged schedules computing each value at "
                "most C times"
              : "time limit before proving optimality";
  std::string message =
      lowering +
      (improved ? fmt::format("{} ({})", outcome, how)
                : fmt::format("warm start {}, none cheaper found: {} ({})",
                              incumbent->algorithm, outcome, how));
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
