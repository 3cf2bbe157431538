// The interface every rematerialization algorithm implements.
//
// An algorithm receives the graph and a request (budget, parameters, a
// deadline it must respect) and answers with a schedule or a status. It
// never reports its own peak or cost: the harness simulates the schedule and
// decides feasible / infeasible / error itself (harness/runner.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/graph.h"
#include "harness/params.h"
#include "harness/schedule.h"

namespace remat {

// The statuses of DESIGN.md section 1.
enum class Status {
  kFeasible,
  kInfeasible,
  kTimeout,
  kTooLarge,
  kUnsupported,
  kError
};
const char* StatusName(Status status);
// The inverse of StatusName; nullopt for any other text.
std::optional<Status> StatusFromName(std::string_view name);

// A point in time after which an algorithm must stop and return its best
// schedule so far (status timeout). Checking it is cheap.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline Never() { return Deadline(Clock::time_point::max()); }
  static Deadline In(double seconds);

  bool Expired() const { return Clock::now() >= at_; }
  double SecondsLeft() const;

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

inline constexpr int64_t kUnboundedBudget = std::numeric_limits<int64_t>::max();

struct SolveRequest {
  int64_t budget_bytes = kUnboundedBudget;  // bound on the activation peak
  Params params;
  Deadline deadline = Deadline::Never();
};

// What an algorithm says. With a schedule, `status` matters only as
// kTimeout (the schedule is the best found before the deadline); the
// harness decides the rest by simulation.
struct AlgorithmOutput {
  Status status = Status::kFeasible;
  std::optional<Schedule> schedule;
  std::string message;
  std::optional<int64_t> lower_bound_cost;  // proven bound, exact methods only
  bool optimal = false;                     // proven optimal at this budget
  nlohmann::json extra = nlohmann::json::object();  // algorithm's own figures

  static AlgorithmOutput Found(Schedule schedule, std::string message = {});
  static AlgorithmOutput NoSchedule(Status status, std::string message);
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  AlgorithmOutput Solve(const Graph& graph, const SolveRequest& request) {
    return Run(graph, request);
  }

 private:
  virtual AlgorithmOutput Run(const Graph& graph,
                              const SolveRequest& request) = 0;
};

}  // namespace remat
