#include "harness/records.h"

#include "harness/results.h"
#include "model/json_text.h"
#include "model/simulator.h"

namespace remat {

namespace {

using Json = nlohmann::ordered_json;

Json NullOr(bool present, const Json& value) {
  return present ? value : Json(nullptr);
}

Json BudgetOrNull(int64_t budget_bytes) {
  return NullOr(budget_bytes != kUnboundedBudget, budget_bytes);
}

// The 1-based line of event `index`; the line after the last event when
// the schedule ended too early (index == its length); null without lines.
Json LineOf(const ScheduleToValidate& schedule, int64_t index) {
  if (!schedule.path || index < 0) return nullptr;
  const std::vector<int64_t>& lines = schedule.event_lines;
  if (index < static_cast<int64_t>(lines.size())) return lines[index];
  return lines.empty() ? 1 : lines.back() + 1;
}

}  // namespace

Json SolveRecord(const Graph& graph, const AlgorithmInfo& algorithm,
                 const Params& params, int64_t budget_bytes,
                 const SolveResult& result) {
  const bool has = result.has_schedule;
  Json record = {{"algorithm", algorithm.name},
                 {"params", params.given()},
                 {"graph", graph.name()},
                 {"budget_bytes", BudgetOrNull(budget_bytes)},
                 {"status", StatusName(result.status)},
                 {"valid", NullOr(has, result.valid)},
                 {"peak_bytes", NullOr(has, result.peak_bytes)},
                 {"total_peak_bytes",
                  NullOr(has, result.peak_bytes + graph.static_bytes())},
                 {"cost", NullOr(has, result.cost)},
                 {"base_cost", BaseCost(graph)},
                 {"overhead", NullOr(has, result.overhead)},
                 {"length", NullOr(has, result.length)}};
  record.update(Json(TimelineOrNull(result)));
  record["solve_seconds"] = result.solve_seconds;
  record["message"] = result.message;
  if (result.lower_bound_cost) {
    record["lower_bound_cost"] = *result.lower_bound_cost;
  }
  if (result.optimal) record["optimal"] = true;
  // Into ordered_json through DumpJson's text, which also replaces bytes
  // that are not UTF-8.
  if (const nlohmann::json details = DetailsOf(result); !details.empty()) {
    record["details"] = Json::parse(DumpJson(details));
  }
  return record;
}

ScheduleToValidate ReadScheduleToValidate(const std::string& path,
                                          const Graph& graph) {
  ScheduleToValidate schedule{.path = path};
  schedule.events =
      ReadScheduleFile(path, graph.num_nodes(), &schedule.event_lines);
  return schedule;
}

Json ValidateRecord(const Graph& graph, const ScheduleToValidate& schedule,
                    int64_t budget_bytes, const TimingModel& timing) {
  const SimulationResult sim = Simulate(
      graph, schedule.events, {.timing = &timing, .critical_path = true});
  Json record = {
      {"graph", graph.name()},
      {"schedule", schedule.path ? Json(*schedule.path) : Json(nullptr)},
      {"valid", sim.valid},
      {"error", NullOr(!sim.valid, {{"line", LineOf(schedule, sim.error_index)},
                                    {"event", sim.error_index},
                                    {"reason", sim.error}})},
      {"budget_bytes", BudgetOrNull(budget_bytes)},
      {"fits_budget", sim.valid && sim.peak_bytes <= budget_bytes},
      {"peak_bytes", sim.peak_bytes},
      {"cost", sim.cost},
      {"base_cost", sim.base_cost},
      {"overhead", sim.overhead},
      {"length", sim.length}};
  record.update(Json(TimelineFigures(sim)));
  return record;
}

}  // namespace remat
