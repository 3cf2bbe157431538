#include "harness/sweep.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "harness/errors.h"
#include "harness/file_io.h"
#include "harness/graph_source.h"
#include "harness/registry.h"
#include "harness/results.h"
#include "harness/runner.h"
#include "harness/schedule.h"

namespace remat {

std::vector<int64_t> BudgetGrid(int64_t lower_bound, int64_t noremat_peak,
                                int count) {
  std::vector<int64_t> grid;
  if (noremat_peak <= lower_bound || count <= 1) {
    return {std::max(lower_bound, noremat_peak)};
  }
  const __int128 span = noremat_peak - lower_bound;
  for (int i = 0; i < count; ++i) {
    __int128 step = (span * i + (count - 2)) / (count - 1);  // rounded up
    int64_t budget = lower_bound + static_cast<int64_t>(step);
    if (grid.empty() || grid.back() != budget) grid.push_back(budget);
  }
  return grid;
}

std::vector<std::string> ReadCorpus(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(ReadFile(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
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
      if (!std::filesystem::exists(file) && entry.is_object() &&
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

struct AlgorithmRun {
  const AlgorithmInfo* info;
  Params params;
};

struct Task {
  size_t graph, algorithm;
  int64_t budget;  // kUnboundedBudget for budget-oblivious algorithms
};

// Runs `body(i)` for i in [0, count) on OpenMP threads with dynamic
// scheduling, then rethrows the first exception (by index), if any.
template <typename Body>
void ParallelFor(size_t count, Body body) {
  std::vector<std::exception_ptr> errors(count);
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < count; ++i) {
    try {
      body(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

class Progress {
 public:
  Progress(bool enabled, size_t total) : enabled_(enabled), total_(total) {}
  ~Progress() {
    if (enabled_) std::cerr << "\n";
  }
  void Done(const std::string& what) {
    size_t done = ++done_;
    if (!enabled_) return;
#pragma omp critical(remat_progress)
    {
      auto now = std::chrono::steady_clock::now();
      if (done == total_ || now - last_ > std::chrono::milliseconds(200)) {
        last_ = now;
        std::cerr << fmt::format("\r[{}/{}] {:<60.60}", done, total_, what)
                  << std::flush;
      }
    }
  }

 private:
  bool enabled_;
  size_t total_;
  std::atomic<size_t> done_{0};
  std::chrono::steady_clock::time_point last_{};
};

// Where one task's schedule is kept: a file name made of the graph, the
// algorithm, its parameters and the budget ("all" for budget-oblivious
// algorithms, whose one schedule serves every budget), with anything but
// letters, digits and ._=+- replaced so that any name is a safe file name.
std::string ScheduleFileName(const std::string& graph, const AlgorithmRun& run,
                             int64_t budget) {
  std::string name = fmt::format("{}.{}", graph, run.info->name);
  if (!run.params.given().empty()) {
    name += fmt::format(".{}", run.params.Canonical());
  }
  name += budget == kUnboundedBudget ? ".all" : fmt::format(".{}", budget);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("._=+-").find(c) == std::string_view::npos) {
      c = '_';
    }
  }
  return name + ".txt";
}

// Graph names key the runs, so they must be unique within a sweep: a
// repeated name gets "#2", "#3", ...
void MakeNamesUnique(std::vector<GraphSummary>& summaries) {
  std::set<std::string> taken;
  for (GraphSummary& s : summaries) {
    std::string name = s.name;
    for (int copy = 2; taken.count(name); ++copy) {
      name = fmt::format("{}#{}", s.name, copy);
    }
    s.name = name;
    taken.insert(name);
  }
}

// Optimality gaps (issue 7): at each budget where some point proved a
// global optimum (a lower_bound_cost equal to its own cost, which only exact
// methods give), every feasible point of that graph gets gap = cost /
// optimum - 1. Where a method reported a bound valid only for its staged
// schedule class (details.staged_lower_bound_cost, the Checkmate MILP/LP),
// points get staged_gap = cost / bound - 1, which can be negative for
// schedules outside that class. The bounds are never mixed.
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
      if (point.contains("details") &&
          point["details"].contains("staged_lower_bound_cost") &&
          point["details"]["staged_lower_bound_cost"].is_number()) {
        int64_t bound = point["details"]["staged_lower_bound_cost"];
        auto [it, fresh] = staged_bound.emplace(key, bound);
        if (!fresh) it->second = std::max(it->second, bound);
      }
    }
  }
  for (auto& run : runs) {
    for (auto& point : run["points"]) {
      if (point["status"] != "feasible") continue;
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

}  // namespace

nlohmann::json RunSweep(const SweepConfig& config) {
  if (config.graph_specs.empty()) throw InputError("sweep: no graphs given");
  if (config.algorithm_specs.empty()) {
    throw InputError("sweep: no algorithms given");
  }
  if (config.budgets_per_graph < 1) {
    throw InputError("sweep: --budgets must be at least 1");
  }
  std::vector<AlgorithmRun> algorithms;
  for (const std::string& spec : config.algorithm_specs) {
    auto [name, items] = SplitSpec(spec);
    const AlgorithmInfo& info = FindAlgorithm(name);
    algorithms.push_back({&info, Params::Parse(items, info.params, name)});
  }
  if (config.threads > 0) omp_set_num_threads(config.threads);
  const int threads =
      config.threads > 0 ? config.threads : omp_get_max_threads();

  // Load and summarize the graphs in parallel: generating or importing a
  // large graph is work too.
  const size_t num_graphs = config.graph_specs.size();
  std::vector<std::optional<Graph>> graphs(num_graphs);
  std::vector<GraphSummary> summaries(num_graphs);
  ParallelFor(num_graphs, [&](size_t i) {
    graphs[i] = LoadGraph(config.graph_specs[i]);
    summaries[i] = Summarize(*graphs[i], config.graph_specs[i]);
  });
  MakeNamesUnique(summaries);

  std::vector<std::vector<int64_t>> budgets(num_graphs);
  std::vector<Task> tasks;
  for (size_t g = 0; g < num_graphs; ++g) {
    budgets[g] =
        BudgetGrid(summaries[g].lower_bound_bytes,
                   summaries[g].noremat_peak_bytes, config.budgets_per_graph);
    for (size_t a = 0; a < algorithms.size(); ++a) {
      if (!algorithms[a].info->uses_budget) {
        tasks.push_back({g, a, kUnboundedBudget});
        continue;
      }
      for (int64_t b : budgets[g]) tasks.push_back({g, a, b});
    }
  }
  // Large graphs first, so that no long task starts last.
  std::stable_sort(tasks.begin(), tasks.end(),
                   [&](const Task& x, const Task& y) {
                     return summaries[x.graph].nodes > summaries[y.graph].nodes;
                   });

  // One preparation per (graph, algorithm run), made by its first task and
  // dropped when its last one ends, so that memory holds only the graphs
  // being worked on.
  const auto slot_of = [&](const Task& t) {
    return t.graph * algorithms.size() + t.algorithm;
  };
  std::vector<PreparationSlot> preparations(num_graphs * algorithms.size());
  std::vector<std::atomic<int>> tasks_left(preparations.size());
  for (const Task& t : tasks) ++tasks_left[slot_of(t)];

  namespace fs = std::filesystem;
  if (!config.schedules_dir.empty()) {
    std::error_code error;
    fs::create_directories(config.schedules_dir, error);
    if (error) {
      throw InputError(fmt::format("{}: cannot create the schedules folder: {}",
                                   config.schedules_dir, error.message()));
    }
  }
  std::vector<std::string> schedule_files(tasks.size());

  std::vector<Attempt> attempts(tasks.size());
  Progress progress(config.progress, tasks.size());
  ParallelFor(tasks.size(), [&](size_t i) {
    const Task& t = tasks[i];
    const AlgorithmRun& run = algorithms[t.algorithm];
    PreparationSlot& preparation = preparations[slot_of(t)];
    attempts[i] = RunAlgorithm(*graphs[t.graph], *run.info, run.params,
                               t.budget, config.timeout_seconds, &preparation);
    if (--tasks_left[slot_of(t)] == 0) preparation.Release();
    if (!config.schedules_dir.empty() && attempts[i].output.schedule) {
      const fs::path file =
          fs::path(config.schedules_dir) /
          ScheduleFileName(summaries[t.graph].name, run, t.budget);
      WriteFileAtomically(file.string(), [&](std::ostream& out) {
        WriteScheduleText(out, *attempts[i].output.schedule);
      });
      schedule_files[i] =
          fs::absolute(file)
              .lexically_relative(fs::absolute(config.results_dir))
              .string();
    }
    // Schedules can be large; the results keep only their figures.
    attempts[i].output.schedule.reset();
    progress.Done(fmt::format("{} {} {}", summaries[t.graph].name,
                              run.info->name, t.budget));
  });

  // Assemble in a fixed order: graphs, then algorithms by name and
  // parameters, then budgets, whatever order the tasks finished in.
  std::vector<std::vector<std::vector<size_t>>> by_run(
      num_graphs, std::vector<std::vector<size_t>>(algorithms.size()));
  for (size_t i = 0; i < tasks.size(); ++i) {
    by_run[tasks[i].graph][tasks[i].algorithm].push_back(i);
  }
  std::vector<size_t> graph_order(num_graphs),
      algorithm_order(algorithms.size());
  for (size_t i = 0; i < num_graphs; ++i) graph_order[i] = i;
  for (size_t i = 0; i < algorithms.size(); ++i) algorithm_order[i] = i;
  std::sort(graph_order.begin(), graph_order.end(), [&](size_t x, size_t y) {
    return summaries[x].name < summaries[y].name;
  });
  std::sort(algorithm_order.begin(), algorithm_order.end(),
            [&](size_t x, size_t y) {
              return std::pair(algorithms[x].info->name,
                               algorithms[x].params.Canonical()) <
                     std::pair(algorithms[y].info->name,
                               algorithms[y].params.Canonical());
            });

  nlohmann::json graphs_json = nlohmann::json::array();
  nlohmann::json runs = nlohmann::json::array();
  for (size_t g : graph_order) {
    graphs_json.push_back(ToJson(summaries[g]));
    for (size_t a : algorithm_order) {
      nlohmann::json points = nlohmann::json::array();
      for (size_t i : by_run[g][a]) {
        auto point_at = [&](int64_t budget) {
          nlohmann::json point = ToJson(Judge(attempts[i], budget), budget);
          if (!schedule_files[i].empty()) {
            point["schedule_file"] = schedule_files[i];
          }
          return point;
        };
        if (tasks[i].budget != kUnboundedBudget) {
          points.push_back(point_at(tasks[i].budget));
          continue;
        }
        for (int64_t b : budgets[g]) points.push_back(point_at(b));
      }
      std::sort(points.begin(), points.end(),
                [](const nlohmann::json& x, const nlohmann::json& y) {
                  return x["budget_bytes"].get<int64_t>() <
                         y["budget_bytes"].get<int64_t>();
                });
      runs.push_back({{"graph", summaries[g].name},
                      {"algorithm", algorithms[a].info->name},
                      {"params", algorithms[a].params.given()},
                      {"points", std::move(points)}});
    }
  }
  AddOptimalityGaps(runs);
  nlohmann::json context = RunContext(threads, config.command_line);
  context["timeout_seconds"] = config.timeout_seconds;
  context["budgets_per_graph"] = config.budgets_per_graph;
  return {{"format", "rematbench-results"},
          {"version", 1},
          {"context", std::move(context)},
          {"graphs", std::move(graphs_json)},
          {"runs", std::move(runs)}};
}

}  // namespace remat
