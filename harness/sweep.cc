#include "harness/sweep.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>

#include "harness/results.h"
#include "harness/runner.h"
#include "harness/sweep_journal.h"
#include "harness/sweep_mpi.h"
#include "harness/sweep_progress.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/graph_source.h"
#include "model/json_text.h"
#include "model/registry.h"
#include "model/schedule.h"
#include "model/stop.h"

namespace remat {

std::vector<std::string> ReadCorpus(const std::string& path) {
  nlohmann::json doc = ParseJson(ReadFile(path), path);
  if (!doc.is_object() || !doc.contains("format") ||
      doc["format"] != "rematbench-corpus" ||
      !doc.contains("graphs") || !doc["graphs"].is_array()) {
    throw InputError(fmt::format(
        "{}: not a corpus manifest (needs \"format\": \"rematbench-corpus\" "
        "and a \"graphs\" array)",
        path));
  }
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  std::vector<std::string> specs;
  for (size_t i = 0; i < doc["graphs"].size(); ++i) {
    const nlohmann::json& entry = doc["graphs"][i];
    if (entry.contains("spec") && entry["spec"].is_string()) {
      specs.push_back(entry["spec"].get<std::string>());
    } else if (entry.contains("path") && entry["path"].is_string()) {
      std::string file = (base / entry["path"].get<std::string>()).string();
      // The error_code overload: a name the system refuses (too long, say)
      // is missing like any other; reading it later says why.
      std::error_code error;
      if (!std::filesystem::exists(file, error) &&
          entry.value("optional", nlohmann::json(false)) == true) {
        std::cerr << fmt::format("{}: skipping missing optional graph {}\n",
                                 path, file);
        continue;
      }
      specs.push_back(file);
    } else {
      throw InputError(fmt::format(
          "{}: graphs[{}] needs a \"spec\" or a \"path\" string", path, i));
    }
  }
  return specs;
}

namespace {

// Set while OpenMP may start threads: libgomp ends the process with
// exit(1), the tool's "negative answer", when it cannot create one.
std::atomic<bool> starting_threads{false};

void ExitTwoIfThreadsFailed() {
  if (starting_threads.load()) {
    const char line[] =
        "remat: the sweep's threads could not be started (libgomp's reason "
        "above); use fewer --threads\n";
    (void)!write(STDERR_FILENO, line, sizeof line - 1);
    _exit(2);
  }
}

// Refuses (InputError, exit status 2) a thread count the system cannot
// start, before any work: all `threads` - 1 are started and held at once,
// as OpenMP's team will be, then released.
void CheckThreadsStart(int threads) {
  static const bool registered = std::atexit(ExitTwoIfThreadsFailed) == 0;
  (void)registered;
  std::vector<std::thread> started;
  std::mutex mutex;
  std::condition_variable released;
  bool release = false;
  std::string failure;
  try {
    for (int i = 1; i < threads; ++i) {
      started.emplace_back([&] {
        std::unique_lock<std::mutex> lock(mutex);
        released.wait(lock, [&] { return release; });
      });
    }
  } catch (const std::system_error& e) {
    failure = e.code().message();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  released.notify_all();
  for (std::thread& t : started) t.join();
  if (!failure.empty()) {
    throw InputError(fmt::format(
        "sweep: cannot start {} threads ({} started: {}); use fewer "
        "--threads",
        threads, started.size() + 1, failure));
  }
}

// Runs `body(i)` for i in [0, count) on OpenMP threads with dynamic
// scheduling, then rethrows the first exception (by index), if any.
template <typename Body>
void ParallelFor(size_t count, Body body) {
  std::vector<std::exception_ptr> errors(count);
  starting_threads = true;
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < count; ++i) {
    try {
      body(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  starting_threads = false;
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

// Where one task's schedule is kept: a file name made of the graph, the
// algorithm, its parameters and the budget ("all" for budget-oblivious
// algorithms, whose one schedule serves every budget), with anything but
// letters, digits and ._=+- replaced so that any name is a safe file name.
std::string ScheduleFileName(const std::string& graph,
                             const SweepAlgorithm& run, int64_t budget) {
  std::string name = fmt::format("{}.{}", graph, run.info->name);
  if (!run.params.given().empty()) {
    name += fmt::format(".{}", run.params.Canonical());
  }
  name += budget == kUnboundedBudget ? ".all" : fmt::format(".{}", budget);
  // Every byte outside [A-Za-z0-9._=+-] is written %XX, so that two graph
  // names (or parameter values) never give one file name ("a/b" and "a_b",
  // "g#2" and "g_2").
  std::string file;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) ||
        std::string_view("._=+-").find(c) != std::string_view::npos) {
      file += c;
    } else {
      file += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  // A name past what a folder holds (255 bytes) keeps its start and gets
  // the FNV-1a hash of the whole.
  if (file.size() > 200) {
    uint64_t hash = 14695981039346656037ull;
    for (const char c : file) {
      hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    file = fmt::format("{}.{:016x}", file.substr(0, 180), hash);
  }
  return file + ".txt";
}

// Graph names key the runs, so they must be unique within a sweep: a
// repeated name gets "#2", "#3", ... (the next free number per name, so
// that thousands of copies of one graph cost no quadratic search).
void MakeNamesUnique(std::vector<GraphSummary>& summaries) {
  std::set<std::string> taken;
  std::map<std::string, int> next_copy;
  for (GraphSummary& s : summaries) {
    std::string name = s.name;
    int& copy = next_copy.emplace(s.name, 2).first->second;
    while (taken.count(name)) name = fmt::format("{}#{}", s.name, copy++);
    s.name = name;
    taken.insert(name);
  }
}

// Optimality gaps: at each budget where some point proved a
// global optimum (a lower_bound_cost equal to its own cost, which only exact
// methods give), every feasible point of that graph gets gap = cost /
// optimum - 1. Where a method reported a bound valid only for its staged
// schedule class (AlgorithmOutput::staged_lower_bound_cost, the Checkmate
// MILP/LP, written to the point's details: StagedLowerBoundOf),
// points get staged_gap = cost / bound - 1, which can be negative for
// schedules outside that class. The bounds are never mixed. Both optima
// are over schedules of computes and frees, so points whose schedules move
// values to host memory get neither.
void AddOptimalityGaps(nlohmann::json& runs) {
  using Key = std::pair<std::string, int64_t>;  // graph, budget
  std::map<Key, int64_t> optimum, staged_bound;
  for (const auto& run : runs) {
    for (const auto& point : run["points"]) {
      Key key{run["graph"], point["budget_bytes"]};
      if (point.contains("lower_bound_cost") && point["cost"].is_number() &&
          point["status"] == "feasible" &&
          point["lower_bound_cost"] == point["cost"]) {
        auto [it, fresh] = optimum.emplace(key, point["cost"]);
        if (!fresh) it->second = std::min<int64_t>(it->second, point["cost"]);
      }
      if (const std::optional<int64_t> bound = StagedLowerBoundOf(point)) {
        auto [it, fresh] = staged_bound.emplace(key, *bound);
        if (!fresh) it->second = std::max(it->second, *bound);
      }
    }
  }
  for (auto& run : runs) {
    for (auto& point : run["points"]) {
      if (point["status"] != "feasible" || point.contains("transfer_bytes")) {
        continue;
      }
      Key key{run["graph"], point["budget_bytes"]};
      const double cost = point["cost"].get<double>();
      if (auto it = optimum.find(key); it != optimum.end() && it->second > 0) {
        point["gap"] = cost / it->second - 1;
      }
      if (auto it = staged_bound.find(key);
          it != staged_bound.end() && it->second > 0) {
        point["staged_gap"] = cost / it->second - 1;
      }
    }
  }
}

// A coarse guess of a task's running time, for dispatching the longest
// first: exact methods (which run to their time limit on larger graphs)
// far above heuristics, larger graphs above smaller ones.
double ExpectedCost(const SweepPlan& plan, const SweepTask& t) {
  const AlgorithmInfo& info = *plan.algorithms[t.algorithm].info;
  const double weight = info.exact || info.isolate ? 1000 : 1;
  return weight * plan.summaries[t.graph].nodes;
}

// Runs `todo` on this process's threads; `done` is called for each
// finished task, one call at a time.
void RunTasksLocally(const SweepPlan& plan, const std::vector<size_t>& todo,
                     const SweepConfig& config, const TaskDone& done) {
  // One preparation per (graph, algorithm run), made by its first task and
  // dropped when its last one ends, so that memory holds only the graphs
  // being worked on.
  const auto slot_of = [&](size_t t) {
    return plan.tasks[t].graph * plan.algorithms.size() +
           plan.tasks[t].algorithm;
  };
  std::vector<PreparationSlot> preparations(plan.graphs.size() *
                                            plan.algorithms.size());
  std::vector<std::atomic<int>> tasks_left(preparations.size());
  for (size_t t : todo) ++tasks_left[slot_of(t)];
  std::mutex done_mutex;
  ParallelFor(todo.size(), [&](size_t i) {
    if (StopRequested()) return;
    const size_t t = todo[i];
    PreparationSlot& preparation = preparations[slot_of(t)];
    nlohmann::json points = SolveTask(plan, t, config, &preparation);
    if (--tasks_left[slot_of(t)] == 0) preparation.Release();
    std::lock_guard<std::mutex> lock(done_mutex);
    done(t, std::move(points));
  });
}

}  // namespace

SweepPlan PlanSweep(const SweepConfig& config) {
  if (config.graph_specs.empty()) throw InputError("sweep: no graphs given");
  if (config.algorithm_specs.empty()) {
    throw InputError("sweep: no algorithms given");
  }
  if (config.budgets_per_graph < 1) {
    throw InputError("sweep: --budgets must be at least 1");
  }
  SweepPlan plan;
  for (const std::string& spec : config.algorithm_specs) {
    auto [name, items] = SplitSpec(spec);
    const AlgorithmInfo& info = FindAlgorithm(name);
    plan.algorithms.push_back({&info, Params::Parse(items, info.params, name)});
  }
  // Load and summarize the graphs in parallel: generating or importing a
  // large graph is work too.
  const size_t num_graphs = config.graph_specs.size();
  plan.graphs.resize(num_graphs);
  plan.summaries.resize(num_graphs);
  ParallelFor(num_graphs, [&](size_t i) {
    plan.graphs[i] = LoadGraph(config.graph_specs[i]);
    plan.summaries[i] = Summarize(*plan.graphs[i], config.graph_specs[i]);
  });
  MakeNamesUnique(plan.summaries);

  // Tasks of one graph go budget by budget, each budget's algorithms
  // together, so that threads that take consecutive tasks work on
  // different algorithms rather than wait for one preparation.
  plan.budgets.resize(num_graphs);
  for (size_t g = 0; g < num_graphs; ++g) {
    plan.budgets[g] = BudgetGrid(plan.summaries[g].lower_bound_bytes,
                                 plan.summaries[g].noremat_peak_bytes,
                                 config.budgets_per_graph);
    for (size_t a = 0; a < plan.algorithms.size(); ++a) {
      if (!plan.algorithms[a].info->uses_budget) {
        plan.tasks.push_back({g, a, kUnboundedBudget});
      }
    }
    for (int64_t b : plan.budgets[g]) {
      for (size_t a = 0; a < plan.algorithms.size(); ++a) {
        if (plan.algorithms[a].info->uses_budget) {
          plan.tasks.push_back({g, a, b});
        }
      }
    }
  }
  std::stable_sort(plan.tasks.begin(), plan.tasks.end(),
                   [&](const SweepTask& x, const SweepTask& y) {
                     return ExpectedCost(plan, x) > ExpectedCost(plan, y);
                   });

  nlohmann::json graphs = nlohmann::json::array();
  for (const GraphSummary& s : plan.summaries) {
    graphs.push_back({{"name", s.name}, {"content_hash", s.content_hash}});
  }
  std::sort(graphs.begin(), graphs.end(),
            [](const auto& x, const auto& y) { return x["name"] < y["name"]; });
  nlohmann::json algorithms = nlohmann::json::array();
  for (const SweepAlgorithm& a : plan.algorithms) {
    algorithms.push_back(
        {{"name", a.info->name}, {"params", a.params.given()}});
  }
  std::sort(algorithms.begin(), algorithms.end(),
            [](const auto& x, const auto& y) {
              return std::pair(x["name"].template get<std::string>(),
                               CanonicalParams(x["params"])) <
                     std::pair(y["name"].template get<std::string>(),
                               CanonicalParams(y["params"]));
            });
  plan.configuration = {{"code_version", CodeVersion()},
                        {"timeout_seconds", config.timeout_seconds},
                        {"budgets_per_graph", config.budgets_per_graph},
                        {"timing", config.timing.ToJson()},
                        {"graphs", std::move(graphs)},
                        {"algorithms", std::move(algorithms)}};
  return plan;
}

std::string CanonicalParams(const nlohmann::json& params) {
  std::string text;
  for (const auto& [key, value] : params.items()) {
    text += (text.empty() ? "" : ",") + key + "=" + value.get<std::string>();
  }
  return text;
}

nlohmann::json TaskKey(const SweepPlan& plan, size_t task) {
  const SweepTask& t = plan.tasks[task];
  const GraphSummary& graph = plan.summaries[t.graph];
  const SweepAlgorithm& run = plan.algorithms[t.algorithm];
  return {
      {"graph", graph.name},
      {"content_hash", graph.content_hash},
      {"algorithm", run.info->name},
      {"params", run.params.Canonical()},
      {"budget_bytes", t.budget == kUnboundedBudget ? nlohmann::json(nullptr)
                                                    : nlohmann::json(t.budget)},
      {"timeout_seconds", plan.configuration["timeout_seconds"]},
      {"code_version", plan.configuration["code_version"]}};
}

nlohmann::json SolveTask(const SweepPlan& plan, size_t task,
                         const SweepConfig& config,
                         PreparationSlot* preparation) {
  namespace fs = std::filesystem;
  const SweepTask& t = plan.tasks[task];
  const SweepAlgorithm& run = plan.algorithms[t.algorithm];
  Attempt attempt =
      RunAlgorithm(*plan.graphs[t.graph], *run.info, run.params, t.budget,
                   config.timeout_seconds, preparation, nullptr, &config.timing);
  std::string schedule_file;
  if (!config.schedules_dir.empty() && attempt.output.schedule) {
    const fs::path file =
        fs::path(config.schedules_dir) /
        ScheduleFileName(plan.summaries[t.graph].name, run, t.budget);
    WriteFileAtomically(file.string(), [&](std::ostream& out) {
      WriteScheduleText(out, *attempt.output.schedule);
    });
    schedule_file = fs::absolute(file)
                        .lexically_relative(fs::absolute(config.results_dir))
                        .string();
  }
  // Schedules can be large; the results keep only their figures.
  attempt.output.schedule.reset();
  nlohmann::json points = nlohmann::json::array();
  const auto add_point = [&](int64_t budget) {
    nlohmann::json point = ToJson(Judge(attempt, budget), budget);
    if (!schedule_file.empty()) point["schedule_file"] = schedule_file;
    points.push_back(std::move(point));
  };
  if (t.budget != kUnboundedBudget) {
    add_point(t.budget);
  } else {
    for (int64_t b : plan.budgets[t.graph]) add_point(b);
  }
  return points;
}

nlohmann::json ErrorPoints(const SweepPlan& plan, size_t task,
                           const std::string& message) {
  const SweepTask& t = plan.tasks[task];
  SolveResult error;
  error.status = Status::kError;
  error.message = message;
  nlohmann::json points = nlohmann::json::array();
  if (t.budget != kUnboundedBudget) {
    points.push_back(ToJson(error, t.budget));
  } else {
    for (int64_t b : plan.budgets[t.graph]) points.push_back(ToJson(error, b));
  }
  return points;
}

namespace {

// An integer that fits int64.
bool IsInt64(const nlohmann::json& value) {
  return value.is_number_integer() &&
         !(value.is_number_unsigned() &&
           value.get<uint64_t>() >
               static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

// "" if `object[key]` is there and `test` holds for it, else what is wrong.
template <typename Test>
std::string FieldProblem(const nlohmann::json& object, const char* key,
                         const char* what, Test test) {
  auto it = object.find(key);
  if (it == object.end()) return fmt::format("\"{}\" is missing", key);
  if (!test(*it)) {
    return fmt::format("\"{}\" must be {} (got {})", key, what,
                       DescribeJson(*it));
  }
  return "";
}

}  // namespace

std::string PointProblem(const nlohmann::json& point) {
  if (!point.is_object()) {
    return fmt::format("a point must be an object (got {})",
                       DescribeJson(point));
  }
  const auto is_string = [](const nlohmann::json& v) { return v.is_string(); };
  const auto is_number = [](const nlohmann::json& v) { return v.is_number(); };
  for (std::string problem :
       {FieldProblem(point, "budget_bytes", "an integer", IsInt64),
        FieldProblem(point, "status", "a string", is_string),
        FieldProblem(point, "solve_seconds", "a number", is_number)}) {
    if (!problem.empty()) return "a point's " + problem;
  }
  const bool feasible = point["status"] == "feasible";
  if (std::string problem =
          FieldProblem(point, "cost",
                       feasible ? "an integer (the point is feasible)"
                                : "an integer or null",
                       [&](const nlohmann::json& v) {
                         return IsInt64(v) || (!feasible && v.is_null());
                       });
      !problem.empty()) {
    return "a point's " + problem;
  }
  if (point.contains("lower_bound_cost") &&
      !point["lower_bound_cost"].is_number()) {
    return fmt::format(
        "a point's \"lower_bound_cost\" must be a number (got {})",
        DescribeJson(point["lower_bound_cost"]));
  }
  return "";
}

std::string KeyProblem(const nlohmann::json& key) {
  if (!key.is_object()) {
    return fmt::format("a key must be an object (got {})", DescribeJson(key));
  }
  for (const char* field : {"graph", "algorithm", "params"}) {
    if (std::string problem =
            FieldProblem(key, field, "a string",
                         [](const nlohmann::json& v) { return v.is_string(); });
        !problem.empty()) {
      return "the key's " + problem;
    }
  }
  return "";
}

std::string ConfigurationProblem(const nlohmann::json& configuration) {
  if (!configuration.is_object()) {
    return fmt::format("the configuration must be an object (got {})",
                       DescribeJson(configuration));
  }
  if (std::string problem = FieldProblem(
          configuration, "budgets_per_graph", "an integer from 1 to 100000",
          [](const nlohmann::json& v) {
            return IsInt64(v) && v.get<int64_t>() >= 1 &&
                   v.get<int64_t>() <= 100000;
          });
      !problem.empty()) {
    return "the configuration's " + problem;
  }
  const auto is_array = [](const nlohmann::json& v) { return v.is_array(); };
  const auto is_number = [](const nlohmann::json& v) { return v.is_number(); };
  for (std::string problem :
       {FieldProblem(configuration, "algorithms", "an array", is_array),
        FieldProblem(configuration, "timeout_seconds", "a number",
                     is_number)}) {
    if (!problem.empty()) return "the configuration's " + problem;
  }
  const nlohmann::json& algorithms = configuration["algorithms"];
  for (size_t i = 0; i < algorithms.size(); ++i) {
    const nlohmann::json& algorithm = algorithms[i];
    bool good = algorithm.is_object() && algorithm.contains("name") &&
                algorithm["name"].is_string() && algorithm.contains("params") &&
                algorithm["params"].is_object();
    if (good) {
      for (const auto& [name, value] : algorithm["params"].items()) {
        good = good && value.is_string();
      }
    }
    if (!good) {
      return fmt::format(
          "the configuration's algorithms[{}] must be an object with a string "
          "\"name\" and \"params\" of strings (got {})",
          i, DescribeJson(algorithm));
    }
  }
  return "";
}

std::string GraphsProblem(const nlohmann::json& graphs) {
  if (!graphs.is_array()) {
    return fmt::format("\"graphs\" must be an array (got {})",
                       DescribeJson(graphs));
  }
  for (size_t i = 0; i < graphs.size(); ++i) {
    const nlohmann::json& graph = graphs[i];
    if (!graph.is_object()) {
      return fmt::format("graphs[{}] must be an object (got {})", i,
                         DescribeJson(graph));
    }
    for (std::string problem :
         {FieldProblem(graph, "name", "a string",
                       [](const nlohmann::json& v) { return v.is_string(); }),
          FieldProblem(graph, "lower_bound_bytes", "an integer", IsInt64),
          FieldProblem(graph, "noremat_peak_bytes", "an integer", IsInt64)}) {
      if (!problem.empty()) return fmt::format("graphs[{}]: {}", i, problem);
    }
  }
  return "";
}

void AddPoints(SweepPoints& points, const nlohmann::json& key,
               const nlohmann::json& task_points) {
  for (nlohmann::json point : task_points) {
    // Gaps depend on the other points; they are computed when assembled.
    point.erase("gap");
    point.erase("staged_gap");
    const int64_t budget = point["budget_bytes"];
    points.emplace(
        PointKey{key["graph"], key["algorithm"], key["params"], budget},
        std::move(point));
  }
}

nlohmann::json AssembleResults(const nlohmann::json& configuration,
                               const nlohmann::json& graphs,
                               const SweepPoints& points,
                               nlohmann::json context) {
  nlohmann::json graphs_json = graphs;
  std::sort(graphs_json.begin(), graphs_json.end(),
            [](const auto& x, const auto& y) { return x["name"] < y["name"]; });
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& graph : graphs_json) {
    const std::string name = graph["name"];
    for (const auto& algorithm : configuration["algorithms"]) {
      const std::string params = CanonicalParams(algorithm["params"]);
      nlohmann::json run_points = nlohmann::json::array();
      for (auto it = points.lower_bound({name, algorithm["name"], params,
                                         std::numeric_limits<int64_t>::min()});
           it != points.end() && std::get<0>(it->first) == name &&
           std::get<1>(it->first) == algorithm["name"] &&
           std::get<2>(it->first) == params;
           ++it) {
        run_points.push_back(it->second);
      }
      runs.push_back({{"graph", name},
                      {"algorithm", algorithm["name"]},
                      {"params", algorithm["params"]},
                      {"points", std::move(run_points)}});
    }
  }
  AddOptimalityGaps(runs);
  return {{"format", "rematbench-results"},
          {"version", 1},
          {"context", std::move(context)},
          {"graphs", std::move(graphs_json)},
          {"runs", std::move(runs)}};
}

bool LaunchedAsRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* size = std::getenv(name);
    if (size && std::atoi(size) > 1) return true;
  }
  return false;
}

nlohmann::json RunSweep(const SweepConfig& config) {
  if (config.shard_count < 1 || config.shard_index < 0 ||
      config.shard_index >= config.shard_count) {
    throw InputError(fmt::format("sweep: --shard {}/{}: needs 0 <= i < N",
                                 config.shard_index, config.shard_count));
  }
  if (config.threads > 0) omp_set_num_threads(config.threads);
  const int threads =
      config.threads > 0 ? config.threads : omp_get_max_threads();
  CheckThreadsStart(threads);
  std::unique_ptr<MpiRanks> mpi = MpiRanks::IfLaunched();
  // Every step that can fail on some rank runs on all together, so that an
  // error ends every rank rather than leave some waiting.
  const auto together = [&](const std::function<void()>& step) {
    mpi ? mpi->Together(step) : step();
  };
  std::optional<SweepPlan> planned;
  together([&] { planned = PlanSweep(config); });
  const SweepPlan& plan = *planned;
  if (mpi) mpi->CheckSamePlan(plan);
  const bool lead = !mpi || mpi->rank() == 0;

  nlohmann::json graphs = nlohmann::json::array();
  for (const GraphSummary& s : plan.summaries) {
    graphs.push_back(nlohmann::json(ToJson(s)));
  }
  // This shard's tasks, less those a resumed journal has.
  SweepPoints points;
  nlohmann::json resumed_points = nlohmann::json::array();
  std::optional<SweepJournal> journal;
  std::vector<size_t> todo;
  size_t total = 0;
  together([&] {
    if (!lead) return;
    if (!config.schedules_dir.empty()) {
      std::error_code error;
      std::filesystem::create_directories(config.schedules_dir, error);
      if (error) {
        throw InputError(
            fmt::format("{}: cannot create the schedules folder: {}",
                        config.schedules_dir, error.message()));
      }
    }
    if (!config.journal_path.empty()) {
      journal.emplace(config.journal_path, plan.configuration, graphs,
                      config.resume);
    }
  });
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    if (static_cast<int>(t % config.shard_count) != config.shard_index) {
      continue;
    }
    ++total;
    const nlohmann::json key = TaskKey(plan, t);
    const nlohmann::json* finished = journal ? journal->Find(key) : nullptr;
    if (finished) {
      AddPoints(points, key, *finished);
      for (const auto& point : *finished) resumed_points.push_back(point);
    } else {
      todo.push_back(t);
    }
  }

  SweepProgress progress(lead && config.progress, config.progress_terminal,
                         total, total - todo.size(), resumed_points);
  const TaskDone done = [&](size_t t, nlohmann::json task_points) {
    // A task that ends after a stop may have been cut short by it, with
    // the figures of a time limit it never reached: it is neither
    // journaled nor kept, so that a resumed sweep runs it again.
    if (StopRequested()) return;
    const nlohmann::json key = TaskKey(plan, t);
    if (journal) journal->Append(key, task_points);
    progress.Add(task_points);
    AddPoints(points, key, task_points);
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<size_t> tasks_by_rank = {todo.size()};
  if (mpi) {
    tasks_by_rank = mpi->Run(plan, todo, config, threads, done);
  } else {
    RunTasksLocally(plan, todo, config, done);
  }
  // Tasks were skipped or dropped: no results document; the journal has
  // the finished ones.
  if (StopRequested()) throw Stopped();
  const double tasks_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!lead) return nullptr;
  if (journal) journal->Flush();
  progress.Finish();

  nlohmann::json context = RunContext(threads, config.command_line);
  context["timeout_seconds"] = config.timeout_seconds;
  context["budgets_per_graph"] = config.budgets_per_graph;
  context["timing"] = config.timing.ToJson();
  context["configuration"] = plan.configuration;
  context["shard"] =
      fmt::format("{}/{}", config.shard_index, config.shard_count);
  context["ranks"] = mpi ? mpi->size() : 1;
  context["resumed_tasks"] = total - todo.size();
  context["tasks_run"] = todo.size();
  context["tasks_seconds"] = tasks_seconds;
  context["tasks_by_rank"] = tasks_by_rank;
  nlohmann::json results =
      AssembleResults(plan.configuration, graphs, points, std::move(context));
  if (config.progress) PrintSweepSummary(results, std::cerr);
  return results;
}

}  // namespace remat
