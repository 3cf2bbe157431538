// remat sweep — the main job: algorithms x graphs x budgets in parallel,
// written as one results file (results/SCHEMA.md).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/cli/output.h"
#include "harness/cli/timing_options.h"
#include "harness/cli/usage.h"
#include "harness/option_limits.h"
#include "harness/sweep.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/json_text.h"
#include "model/params.h"
#include "model/registry.h"

#ifndef REMAT_DEFAULT_CORPUS
#define REMAT_DEFAULT_CORPUS "graphs/corpus/default.json"
#endif

namespace remat::cli {

namespace {

struct SweepOptions {
  std::vector<std::string> graphs, algorithms;
  std::string corpus, out, schedules_dir, journal, shard;
  bool resume = false;
  int budgets = 16;
  int threads = 0;
  int lead_threads = -1;
  double timeout = 60;
  std::shared_ptr<TimingOptions> timing;
};

std::vector<std::string> SplitAll(const std::vector<std::string>& lists) {
  std::vector<std::string> specs;
  for (const std::string& list : lists) {
    for (std::string& spec : SplitSpecList(list)) specs.push_back(spec);
  }
  return specs;
}

// Whether two output paths, which need not exist yet, name one file.
bool SameFile(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  const fs::path x = fs::weakly_canonical(a, error);
  if (error) return false;
  return x == fs::weakly_canonical(b, error) && !error;
}

// Refuses (InputError) an output file (the journal, the results) that is
// one of `inputs` (graph files, the corpus manifest): the sweep would
// replace what it reads.
void RefuseOutputThatIsAnInput(const std::string& output, const char* option,
                               const std::vector<std::string>& inputs) {
  if (output.empty() || output == "-") return;
  for (const std::string& input : inputs) {
    std::error_code error;  // false when either does not exist
    if (std::filesystem::equivalent(output, input, error)) {
      throw InputError(fmt::format(
          "sweep: {} {} is one of the sweep's inputs ({}); it would be "
          "replaced",
          option, output, input));
    }
  }
}

// `note`: what an interrupted sweep kept (RunStoppable).
int RunSweepCommand(const SweepOptions& o, const std::string& command_line,
                    bool as_json, std::string& note) {
  SweepConfig config;
  config.graph_specs = SplitAll(o.graphs);
  std::vector<std::string> inputs = config.graph_specs;
  if (!o.corpus.empty() || config.graph_specs.empty()) {
    const std::string corpus =
        o.corpus.empty() ? REMAT_DEFAULT_CORPUS : o.corpus;
    inputs.push_back(corpus);
    for (std::string& spec : ReadCorpus(corpus)) {
      inputs.push_back(spec);
      config.graph_specs.push_back(spec);
    }
  }
  config.algorithm_specs = SplitAll(o.algorithms);
  if (config.algorithm_specs.empty() || (config.algorithm_specs.size() == 1 &&
                                         config.algorithm_specs[0] == "all")) {
    config.algorithm_specs.clear();
    for (const AlgorithmInfo* a : AllAlgorithms()) {
      config.algorithm_specs.push_back(a->name);
    }
  }
  config.budgets_per_graph = o.budgets;
  config.threads = o.threads;
  config.lead_threads = o.lead_threads;
  config.timeout_seconds = o.timeout;
  config.timing = o.timing->Model();
  config.progress = true;
  config.progress_terminal = isatty(STDERR_FILENO);
  config.command_line = command_line;
  config.schedules_dir = o.schedules_dir;
  if (!o.out.empty()) {
    config.results_dir = std::filesystem::path(o.out).parent_path().string();
    if (config.results_dir.empty()) config.results_dir = ".";
  }
  config.journal_path = o.journal;
  if (config.journal_path.empty() && !o.out.empty() && o.out != "-") {
    config.journal_path = o.out + ".journal";
  }
  config.resume = o.resume;
  if (o.resume && config.journal_path.empty()) {
    throw InputError("sweep: --resume needs --journal or --out");
  }
  RefuseOutputThatIsAnInput(config.journal_path, "--journal", inputs);
  // A journal is appended to, read back on --resume and locked: a FIFO or
  // a device would block or lose it. Refused now, before any work.
  if (struct stat st; !config.journal_path.empty() &&
                      stat(config.journal_path.c_str(), &st) == 0 &&
                      !S_ISREG(st.st_mode)) {
    throw InputError(fmt::format(
        "sweep: --journal {}: not a regular file (a {}); a journal must be a "
        "file",
        config.journal_path,
        S_ISFIFO(st.st_mode)  ? "pipe"
        : S_ISDIR(st.st_mode) ? "directory"
        : S_ISCHR(st.st_mode) ? "character device"
                              : "special file"));
  }
  RefuseOutputThatIsAnInput(o.out, "--out", inputs);
  if (!o.out.empty() && o.out != "-" && SameFile(config.journal_path, o.out)) {
    throw InputError(fmt::format(
        "sweep: --journal and --out name the same file ({})", o.out));
  }
  if (!o.shard.empty()) {
    int index = -1, count = 0, used = 0;
    if (std::sscanf(o.shard.c_str(), "%d/%d%n", &index, &count, &used) != 2 ||
        used != static_cast<int>(o.shard.size()) || count < 1 || index < 0 ||
        index >= count) {
      throw InputError(fmt::format(
          "sweep: --shard {}: expected i/N with 0 <= i < N", o.shard));
    }
    config.shard_index = index;
    config.shard_count = count;
  }

  note = config.journal_path.empty()
             ? "nothing kept (a sweep without --out or --journal keeps no "
               "journal)"
             : fmt::format("the tasks it finished are in {}; the same "
                           "command with --resume goes on from there",
                           config.journal_path);
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json results = RunSweep(config);
  if (results.is_null()) return kExitOk;  // an MPI rank other than 0
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (o.out.empty()) {
    std::cout << DumpJson(results, 2) << "\n";
    return kExitOk;
  }
  // A run killed while it wrote the results left "<out>.tmp.<pid>"; this
  // one, which holds the journal's lock, removes it.
  RemoveStaleTemporaries(o.out);
  WriteFileAtomically(
      o.out, [&](std::ostream& out) { out << DumpJson(results, 2) << "\n"; });
  Json summary = {{"out", o.out},
                  {"graphs", results["graphs"].size()},
                  {"runs", results["runs"].size()},
                  {"seconds", seconds}};
  Json by_status = Json::object();
  for (const auto& run : results["runs"]) {
    for (const auto& point : run["points"]) {
      std::string status = point["status"];
      by_status[status] = by_status.value(status, 0) + 1;
    }
  }
  summary["points_by_status"] = by_status;
  Print(summary, as_json);
  return kExitOk;
}

}  // namespace

void AddSweepCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Run every algorithm on every graph at every budget, in parallel, and "
      "write one results JSON file (results/SCHEMA.md)");
  auto o = std::make_shared<SweepOptions>();
  cmd->add_option("--graphs", o->graphs,
                  "graphs: files or generator specs, comma separated "
                  "(chain:n=8,mem=2,chain:n=16 is two specs; repeatable)");
  cmd->add_option("--corpus", o->corpus,
                  "corpus manifest (default: graphs/corpus/default.json when "
                  "no --graphs are given)");
  cmd->add_option("--algorithms", o->algorithms,
                  "algorithms, comma separated, each name[:k=v,...], or all "
                  "(default)");
  cmd->add_option("--budgets", o->budgets,
                  "budgets per graph, evenly spaced from the memory lower "
                  "bound to the NoRemat peak")
      ->check(CLI::Range(1, kMaxBudgetsPerGraph))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "worker threads (default: all cores)")
      ->check(CLI::Range(0, kMaxThreads));
  cmd->add_option("--lead-threads", o->lead_threads,
                  "under MPI, rank 0's solving threads (default: --threads; "
                  "0: rank 0 only hands out tasks)")
      ->check(CLI::Range(0, kMaxThreads));
  cmd->add_option("--timeout", o->timeout, "time limit per task in seconds")
      ->check(TimeLimit())
      ->capture_default_str();
  cmd->add_option("-o,--out", o->out,
                  "results file (written atomically; default: stdout)");
  cmd->add_option("--schedules-dir", o->schedules_dir,
                  "keep every point's schedule in this folder (one text file "
                  "per graph, algorithm, parameters and budget; each point's "
                  "schedule_file names it relative to the results file)");
  cmd->add_option("--journal", o->journal,
                  "append every finished task to this file (JSON lines, "
                  "fsynced; default: the --out file + .journal)");
  cmd->add_flag("--resume", o->resume,
                "skip the tasks the journal already has (same graphs, "
                "algorithms, parameters, budgets, time limit and code "
                "version; another configuration is refused)");
  cmd->add_option("--shard", o->shard,
                  "run only shard i of N (i/N, 0 <= i < N): every N-th task "
                  "of the dispatch order, for job arrays; `remat merge` "
                  "joins the shards' files");
  o->timing = AddTimingOptions(cmd);
  auto as_json = AddJsonFlag(cmd);
  cmd->callback([o, as_json, &exit_code] {
    exit_code = RunStoppable("sweep", [&](std::string& note) {
      return RunSweepCommand(*o, CommandLine(), *as_json, note);
    });
  });
}

}  // namespace remat::cli
