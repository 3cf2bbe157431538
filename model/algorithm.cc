#include "model/algorithm.h"

#include <stdexcept>

namespace remat {

const char* StatusName(Status status) {
  switch (status) {
    case Status::kFeasible:
      return "feasible";
    case Status::kInfeasible:
      return "infeasible";
    case Status::kTimeout:
      return "timeout";
    case Status::kTooLarge:
      return "too_large";
    case Status::kUnsupported:
      return "unsupported";
    case Status::kError:
      return "error";
  }
  return "error";
}

std::optional<Status> StatusFromName(std::string_view name) {
  for (Status status :
       {Status::kFeasible, Status::kInfeasible, Status::kTimeout,
        Status::kTooLarge, Status::kUnsupported, Status::kError}) {
    if (name == StatusName(status)) return status;
  }
  return std::nullopt;
}

Deadline Deadline::In(double seconds) {
  if (seconds <= 0 || seconds > 1e9) return Never();
  return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(seconds)));
}

double Deadline::SecondsLeft() const {
  if (StopRequested()) return 0;
  if (at_ == Clock::time_point::max()) return 1e18;
  return std::chrono::duration<double>(at_ - Clock::now()).count();
}

void StandbyAnswer::Offer(AlgorithmOutput output) {
  output.status = Status::kTimeout;
  std::lock_guard lock(mutex_);
  output_ = std::move(output);
}

std::optional<AlgorithmOutput> StandbyAnswer::Take() const {
  std::lock_guard lock(mutex_);
  return output_;
}

AlgorithmOutput AlgorithmOutput::Found(Schedule schedule, std::string message) {
  AlgorithmOutput output;
  output.schedule = std::move(schedule);
  output.message = std::move(message);
  return output;
}

AlgorithmOutput AlgorithmOutput::NoSchedule(Status status,
                                            std::string message) {
  AlgorithmOutput output;
  output.status = status;
  output.message = std::move(message);
  return output;
}

const SubSolver& SubSolverOf(const SolveRequest& request) {
  if (!request.sub_solver) {
    throw std::logic_error(
        "this algorithm runs others, and its request has no sub-solver "
        "(run it through the runner, harness/runner.h)");
  }
  return *request.sub_solver;
}

}  // namespace remat
