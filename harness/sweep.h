// The main job: every algorithm on every graph at every budget, in parallel,
// as one results document (results/SCHEMA.md). A sweep is planned (graphs
// loaded, tasks listed), its tasks run on threads of this process or on MPI
// ranks (harness/sweep_mpi.h), each finished task is journaled
// (harness/sweep_journal.h), and the results are assembled from the
// finished tasks' points in a fixed order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "harness/results.h"
#include "model/graph.h"
#include "model/params.h"
#include "model/registry.h"
#include "model/timing.h"

namespace remat {

struct SweepConfig {
  std::vector<std::string> graph_specs;      // files or generator specs
  std::vector<std::string> algorithm_specs;  // "name" or "name:k=v,..."
  int budgets_per_graph = 16;
  int threads = 0;  // 0: OpenMP's default
  // Under MPI, rank 0's solving threads (-1: `threads`; 0: it only
  // dispatches, as on a cluster of many ranks).
  int lead_threads = -1;
  double timeout_seconds = 60;
  bool progress = false;           // a progress line on stderr, a summary
  bool progress_terminal = false;  // rewrite it in place (stderr is a tty)
  std::string command_line;
  // When set, every schedule is written there (named by graph, algorithm,
  // parameters and budget) and each point names its file in
  // `schedule_file`, relative to `results_dir` (the results file's folder).
  std::string schedules_dir;
  std::string results_dir = ".";
  // When set, every finished task is appended there (JSON lines, fsynced);
  // with `resume`, tasks already in it are not run again.
  std::string journal_path;
  bool resume = false;
  // This process runs the tasks t with t % shard_count == shard_index of
  // the dispatch order.
  int shard_index = 0;
  int shard_count = 1;
  // The link and compute rate every schedule is simulated with (--link).
  TimingModel timing;
};

// Reads a corpus manifest (graphs/corpus/*.json) into graph specs; paths in
// it are relative to the manifest. Entries marked optional whose file is
// missing are skipped with a note on stderr.
std::vector<std::string> ReadCorpus(const std::string& path);

// Validates every spec first (InputError before any work), then runs.
// Under mpirun with several ranks every rank calls it; rank 0 returns the
// results, the others null. Throws Stopped when a stop is requested
// (model/stop.h): the tasks that finished before it are in the journal,
// none that it cut short, so --resume goes on where it stopped.
nlohmann::json RunSweep(const SweepConfig& config);

// --- The pieces a sweep is built from, shared with the MPI runner and
// `remat merge`.

struct SweepAlgorithm {
  const AlgorithmInfo* info;
  Params params;
};

struct SweepTask {
  size_t graph, algorithm;
  int64_t budget;  // kUnboundedBudget for budget-oblivious algorithms
};

struct SweepPlan {
  std::vector<std::optional<Graph>> graphs;  // all set
  std::vector<GraphSummary> summaries;       // names made unique
  std::vector<SweepAlgorithm> algorithms;
  std::vector<std::vector<int64_t>> budgets;  // per graph
  std::vector<SweepTask> tasks;               // most expensive expected first
  // What makes two sweeps' points comparable: code version, time limit,
  // budgets per graph, graphs (name, content hash), algorithms (name,
  // parameters). Journals and merges refuse another configuration.
  nlohmann::json configuration;
};

// Loads the graphs (in parallel) and lists the tasks.
SweepPlan PlanSweep(const SweepConfig& config);

// A task's identity across runs: graph name and content hash, algorithm,
// parameters, budget (null: all), time limit, code version.
nlohmann::json TaskKey(const SweepPlan& plan, size_t task);

// Runs one task and returns its points (one per budget of the graph for a
// budget-oblivious algorithm), as in the results' points[] minus the gaps.
nlohmann::json SolveTask(const SweepPlan& plan, size_t task,
                         const SweepConfig& config,
                         PreparationSlot* preparation);

// The points of a task that produced no answer (status error, `message`):
// what a task whose MPI rank died becomes.
nlohmann::json ErrorPoints(const SweepPlan& plan, size_t task,
                           const std::string& message);

// Called with each finished task's points, one call at a time.
using TaskDone = std::function<void(size_t task, nlohmann::json points)>;

// "k1=v1,k2=v2" of a run's "params" object, as Params::Canonical.
std::string CanonicalParams(const nlohmann::json& params);

// Points by (graph name, algorithm name, canonical parameters, budget).
using PointKey = std::tuple<std::string, std::string, std::string, int64_t>;
using SweepPoints = std::map<PointKey, nlohmann::json>;

// Why a value read from a journal or results file cannot be used, or ""
// when it can: what AddPoints, AssembleResults and the summaries read must
// be there with its type, so that a malformed file is refused with one line
// rather than a type error.
// A point: an object with an integer budget_bytes, a string status, a
// number solve_seconds, and an integer (or null) cost, an integer when
// feasible.
std::string PointProblem(const nlohmann::json& point);
// A task's key: an object with strings graph, algorithm, params.
std::string KeyProblem(const nlohmann::json& key);
// A configuration: an object with budgets_per_graph in 1..100000, a number
// timeout_seconds and algorithms, an array of {"name": string, "params":
// {string: string}}.
std::string ConfigurationProblem(const nlohmann::json& configuration);
// Graph summaries: an array of objects with a string name and integers
// lower_bound_bytes and noremat_peak_bytes.
std::string GraphsProblem(const nlohmann::json& graphs);

// Adds a finished task's points (from SolveTask or a journal) for the run
// of graph `graph` and algorithm `algorithm` ("params" canonical).
void AddPoints(SweepPoints& points, const nlohmann::json& key,
               const nlohmann::json& task_points);

// The results document: `graphs` (summaries, any order) sorted by name,
// one run per graph and configured algorithm (sorted by name and
// parameters) with its points sorted by budget, and optimality gaps
// computed over all points.
nlohmann::json AssembleResults(const nlohmann::json& configuration,
                               const nlohmann::json& graphs,
                               const SweepPoints& points,
                               nlohmann::json context);

}  // namespace remat
