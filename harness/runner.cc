#include "harness/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "harness/isolation.h"

namespace remat {

Attempt RunAlgorithm(const Graph& graph, const AlgorithmInfo& algorithm,
                     const Params& params, int64_t budget_bytes,
                     double timeout_seconds, PreparationSlot* preparation,
                     StandbyAnswer* standby, const TimingModel* timing) {
  Attempt attempt;
  SolveRequest request{budget_bytes, params, Deadline::In(timeout_seconds)};
  request.standby = standby;
  request.sub_solver = &RunnerSubSolver();
  if (timing) request.timing = *timing;
  const auto start = std::chrono::steady_clock::now();
  try {
    std::optional<AlgorithmOutput> refused;
    if (algorithm.isolate && IsolationEnabled() && algorithm.refuse) {
      refused = algorithm.refuse(graph, request);
    }
    if (refused) {
      attempt.output = std::move(*refused);
    } else if (algorithm.isolate && IsolationEnabled()) {
      attempt.output = RunIsolated(graph, algorithm, params, budget_bytes,
                                   timeout_seconds, start);
    } else {
      std::unique_ptr<Algorithm> solver = algorithm.create();
      if (preparation) {
        request.prepared = preparation->GetOrPrepare(*solver, graph, request);
      }
      attempt.output = solver->Solve(graph, request);
    }
  } catch (const std::bad_alloc&) {
    attempt.output =
        AlgorithmOutput::NoSchedule(Status::kError, "ran out of memory");
  } catch (const std::exception& e) {
    attempt.output = AlgorithmOutput::NoSchedule(
        Status::kError, fmt::format("algorithm threw: {}", e.what()));
  }
  attempt.solve_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (attempt.output.schedule) {
    attempt.simulation = Simulate(graph, *attempt.output.schedule,
                                  {.timing = timing, .critical_path = true});
  }
  return attempt;
}

namespace {

class Runner : public SubSolver {
 public:
  SubSolution Solve(const Graph& graph, const std::string& name,
                    const std::vector<std::string>& params,
                    int64_t budget_bytes, double seconds,
                    const TimingModel* timing) const override {
    const AlgorithmInfo& info = FindAlgorithm(name);
    Attempt attempt =
        RunAlgorithm(graph, info, Params::Parse(params, info.params, name),
                     budget_bytes, seconds, nullptr, nullptr, timing);
    return {std::move(attempt.output), std::move(attempt.simulation),
            attempt.solve_seconds};
  }
};

}  // namespace

const SubSolver& RunnerSubSolver() {
  static const Runner runner;
  return runner;
}

SolveResult Judge(const Attempt& attempt, int64_t budget_bytes) {
  const AlgorithmOutput& said = attempt.output;
  SolveResult result;
  result.message = said.message;
  result.solve_seconds = attempt.solve_seconds;
  result.extra = said.extra;
  result.staged_lower_bound_cost = said.staged_lower_bound_cost;
  if (!attempt.simulation) {
    result.status = said.status;
    if (said.status == Status::kFeasible) {
      result.status = Status::kError;
      result.message = "algorithm claimed a schedule but returned none";
    }
    return result;
  }
  const SimulationResult& sim = *attempt.simulation;
  result.has_schedule = true;
  result.valid = sim.valid;
  result.peak_bytes = sim.peak_bytes;
  result.cost = sim.cost;
  result.overhead = sim.overhead;
  result.length = sim.length;
  result.timeline = TimelineFigures(sim);
  if (!sim.valid) {
    result.status = Status::kError;
    result.message = fmt::format("invalid schedule: event {}: {}",
                                 sim.error_index, sim.error);
    return result;
  }
  const bool fits = sim.peak_bytes <= budget_bytes;
  if (said.status == Status::kTimeout) {
    result.status = Status::kTimeout;
  } else {
    result.status = fits ? Status::kFeasible : Status::kInfeasible;
  }
  if (fits) {
    result.lower_bound_cost = said.lower_bound_cost;
    result.optimal = said.optimal && result.status == Status::kFeasible;
  }
  return result;
}

}  // namespace remat
