#include "harness/sweep_merge.h"

#include <fmt/format.h>

#include <iostream>

#include "harness/errors.h"
#include "harness/file_io.h"
#include "harness/json_text.h"
#include "harness/results.h"
#include "harness/sweep.h"
#include "harness/sweep_journal.h"

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
  if (first_line.is_object() &&
      first_line.value("format", "") == "rematbench-journal") {
    JournalContents journal = ReadJournal(path);
    for (const auto& [key, task_points] : journal.entries) {
      AddPoints(points, key, task_points);
    }
    return {journal.header["configuration"], journal.header["graphs"]};
  }
  const nlohmann::json doc = ParseJson(text, path);
  if (!doc.is_object() || doc.value("format", "") != "rematbench-results" ||
      !doc.contains("runs") || !doc.contains("graphs")) {
    throw InputError(
        fmt::format("{}: not a rematbench results file or journal", path));
  }
  if (!doc.contains("context") || !doc["context"].contains("configuration")) {
    throw InputError(fmt::format(
        "{}: results without context.configuration (written by a remat "
        "older than `remat merge`)",
        path));
  }
  for (const auto& run : doc["runs"]) {
    const nlohmann::json key = {{"graph", run["graph"]},
                                {"algorithm", run["algorithm"]},
                                {"params", CanonicalParams(run["params"])}};
    AddPoints(points, key, run["points"]);
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
