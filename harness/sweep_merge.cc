#include "harness/sweep_merge.h"

#include <fmt/format.h>

#include <iostream>

#include "harness/results.h"
#include "harness/sweep.h"
#include "harness/sweep_journal.h"
#include "model/errors.h"
#include "model/file_io.h"
#include "model/json_text.h"

namespace remat {

namespace {

struct Part {
  nlohmann::json configuration, graphs;
};

// Adds the points of the file at `path` and returns its configuration.
Part ReadPart(const std::string& path, SweepPoints& points) {
  const std::string text = ReadFile(path);
  const nlohmann::json first_line =
      ParseJsonLine(std::string_view(text).substr(0, text.find('\n')));
  if (IsJournalHeader(first_line)) {
    JournalContents journal = ReadJournal(path);
    for (const auto& [key, task_points] : journal.entries) {
      AddPoints(points, key, task_points);
    }
    return {journal.header["configuration"], journal.header["graphs"]};
  }
  const nlohmann::json doc = ParseJson(text, path);
  if (!doc.is_object() || !doc.contains("format") ||
      doc["format"] != "rematbench-results" || !doc.contains("runs") ||
      !doc.contains("graphs")) {
    throw InputError(
        fmt::format("{}: not a rematbench results file or journal", path));
  }
  if (!doc.contains("context") || !doc["context"].is_object() ||
      !doc["context"].contains("configuration")) {
    throw InputError(fmt::format(
        "{}: results without context.configuration (written by a remat "
        "older than `remat merge`)",
        path));
  }
  for (const std::string& problem :
       {ConfigurationProblem(doc["context"]["configuration"]),
        GraphsProblem(doc["graphs"])}) {
    if (!problem.empty())
      throw InputError(fmt::format("{}: {}", path, problem));
  }
  const nlohmann::json& runs = doc["runs"];
  if (!runs.is_array()) {
    throw InputError(fmt::format("{}: \"runs\" must be an array (got {})", path,
                                 DescribeJson(runs)));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json& run = runs[i];
    const auto fail = [&](const std::string& problem) {
      throw InputError(fmt::format("{}: runs[{}]: {}", path, i, problem));
    };
    if (!run.is_object() || !run.contains("params") ||
        !run["params"].is_object() || !run.contains("points") ||
        !run["points"].is_array()) {
      fail(
          fmt::format("must be an object with \"graph\", \"algorithm\", "
                      "\"params\" and \"points\" (got {})",
                      DescribeJson(run)));
    }
    for (const auto& [name, value] : run["params"].items()) {
      if (!value.is_string()) {
        fail(fmt::format("params.{} must be a string (got {})",
                         Printable(name, 60), DescribeJson(value)));
      }
    }
    const nlohmann::json key = {
        {"graph", run.value("graph", nlohmann::json())},
        {"algorithm", run.value("algorithm", nlohmann::json())},
        {"params", CanonicalParams(run["params"])}};
    if (std::string problem = KeyProblem(key); !problem.empty()) {
      fail(problem.substr(problem.find('"')));  // not "the key's"
    }
    const nlohmann::json& run_points = run["points"];
    for (size_t j = 0; j < run_points.size(); ++j) {
      if (std::string problem = PointProblem(run_points[j]); !problem.empty()) {
        fail(fmt::format("points[{}]: {}", j, problem));
      }
    }
    AddPoints(points, key, run_points);
  }
  return {doc["context"]["configuration"], doc["graphs"]};
}

}  // namespace

nlohmann::json MergeSweeps(const std::vector<std::string>& paths,
                           const std::string& command_line) {
  if (paths.empty()) throw InputError("merge: no files given");
  SweepPoints points;
  Part first;
  for (const std::string& path : paths) {
    Part part = ReadPart(path, points);
    if (first.configuration.is_null()) {
      first = std::move(part);
    } else {
      CheckSameConfiguration(first.configuration, part.configuration, path);
    }
  }
  const nlohmann::json& configuration = first.configuration;
  size_t expected = 0;
  for (const auto& graph : first.graphs) {
    expected +=
        configuration["algorithms"].size() *
        BudgetGrid(graph["lower_bound_bytes"], graph["noremat_peak_bytes"],
                   configuration["budgets_per_graph"])
            .size();
  }
  const size_t missing = expected - std::min(expected, points.size());
  if (missing > 0) {
    std::cerr << fmt::format(
        "remat: merge: {} of {} points are in none of the files (a shard "
        "missing or unfinished?)\n",
        missing, expected);
  }
  nlohmann::json context = RunContext(1, command_line);
  context.erase("threads");
  context["timeout_seconds"] = configuration["timeout_seconds"];
  context["budgets_per_graph"] = configuration["budgets_per_graph"];
  context["configuration"] = configuration;
  context["merged_from"] = paths;
  context["missing_points"] = missing;
  return AssembleResults(configuration, first.graphs, points,
                         std::move(context));
}

}  // namespace remat
