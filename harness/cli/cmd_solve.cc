// remat solve | validate — one algorithm on one graph, or an external
// schedule, judged by the simulator.
#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/cli/output.h"
#include "harness/cli/timing_options.h"
#include "harness/cli/usage.h"
#include "harness/records.h"
#include "harness/runner.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/graph_source.h"
#include "model/registry.h"
#include "model/stop.h"

namespace remat::cli {

namespace {

struct SolveOptions {
  std::string algorithm, graph, budget, schedule_out;
  std::vector<std::string> params;
  double timeout = 0;  // 0: no time limit
  bool budget_given = false;
  std::shared_ptr<TimingOptions> timing;
};

// An empty -b '' is an error, not "unbounded": only a missing -b is that.
int64_t BudgetOf(const std::string& text, bool given) {
  return given ? ParseBytes(text, "--budget") : kUnboundedBudget;
}

int RunSolve(const SolveOptions& o, bool as_json) {
  RefuseOutputThatIsAnInput(o.schedule_out, "solve: --schedule-out",
                            {o.graph});
  const AlgorithmInfo& info = FindAlgorithm(o.algorithm);
  Params params = Params::Parse(o.params, info.params, o.algorithm);
  Graph graph = LoadGraph(o.graph);
  const int64_t budget = BudgetOf(o.budget, o.budget_given);
  const TimingModel timing = o.timing->Model();
  Attempt attempt = RunAlgorithm(graph, info, params, budget, o.timeout,
                                 nullptr, nullptr, &timing);
  SolveResult r = Judge(attempt, budget);
  // A stop made the answer that of a time limit never reached.
  ThrowIfStopped();
  if (!o.schedule_out.empty() && attempt.output.schedule) {
    WriteFileAtomically(o.schedule_out, [&](std::ostream& out) {
      WriteScheduleText(out, *attempt.output.schedule);
    });
  }
  Print(SolveRecord(graph, info, params, budget, r), as_json);
  return r.status == Status::kFeasible ? kExitOk : kExitNegative;
}

int RunValidate(const std::string& graph_spec, const std::string& path,
                const std::string& budget_text, bool budget_given,
                const TimingOptions& timing_options, bool as_json) {
  const int64_t budget = BudgetOf(budget_text, budget_given);
  const TimingModel timing = timing_options.Model();
  Graph graph = LoadGraph(graph_spec);
  const ScheduleToValidate schedule = ReadScheduleToValidate(path, graph);
  const Json record = ValidateRecord(graph, schedule, budget, timing);
  ThrowIfStopped();  // the simulation ended at the stop, invalid
  Print(record, as_json);
  return record["fits_budget"].get<bool>() ? kExitOk : kExitNegative;
}

}  // namespace

void AddSolveCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "solve",
      "Run one algorithm on one graph; the schedule is simulated and judged "
      "against the budget (exit 0 feasible, 1 otherwise)");
  auto o = std::make_shared<SolveOptions>();
  cmd->add_option("-a,--algorithm", o->algorithm, "algorithm (see remat list)")
      ->required();
  cmd->add_option("-g,--graph", o->graph, "graph file or generator spec")
      ->required();
  auto* budget = cmd->add_option(
      "-b,--budget", o->budget,
      "activation memory budget (bytes, or 512MiB, 8GB; default: "
      "unbounded)");
  cmd->add_option("-p,--param", o->params,
                  "algorithm parameter key=value (repeatable)");
  cmd->add_option("--timeout", o->timeout,
                  "time limit in seconds, > 0 (default: none)")
      ->check(TimeLimit());
  cmd->add_option("--schedule-out", o->schedule_out,
                  "write the schedule in text format (c <id> / f <id>, "
                  "o <id> / p <id> for transfers)");
  o->timing = AddTimingOptions(cmd);
  auto as_json = AddJsonFlag(cmd);
  cmd->callback([o, as_json, budget, &exit_code] {
    o->budget_given = budget->count() > 0;
    exit_code = RunStoppable(
        "solve", [&](std::string&) { return RunSolve(*o, *as_json); });
  });
}

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Simulate an external schedule (text format c <id> / f <id>, and "
      "o <id> / p <id> to offload to host memory and prefetch back) on a "
      "graph (exit 0 valid and within budget, 1 otherwise)");
  auto graph = std::make_shared<std::string>();
  auto schedule = std::make_shared<std::string>();
  auto budget = std::make_shared<std::string>();
  cmd->add_option("-g,--graph", *graph, "graph file or generator spec")
      ->required();
  cmd->add_option("-s,--schedule", *schedule, "schedule file")->required();
  auto* budget_option =
      cmd->add_option("-b,--budget", *budget, "activation memory budget");
  auto timing = AddTimingOptions(cmd);
  auto as_json = AddJsonFlag(cmd);
  cmd->callback([=, &exit_code] {
    exit_code = RunStoppable("validate", [&](std::string&) {
      return RunValidate(*graph, *schedule, *budget,
                         budget_option->count() > 0, *timing, *as_json);
    });
  });
}

}  // namespace remat::cli
