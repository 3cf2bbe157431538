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
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.h"
#include "model/params.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "model/stop.h"
#include "model/timing.h"

namespace remat {

// The statuses of docs/model.md, "Statuses".
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
// schedule so far (status timeout). Checking it is cheap. While a stop is
// requested (StopRequested) every deadline has passed, so that the work
// in progress ends as it would at its time limit.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline Never() { return Deadline(Clock::time_point::max()); }
  static Deadline In(double seconds);

  bool Expired() const { return StopRequested() || Clock::now() >= at_; }
  // 0 while a stop is requested.
  double SecondsLeft() const;

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

inline constexpr int64_t kUnboundedBudget = std::numeric_limits<int64_t>::max();

class StandbyAnswer;
class SubSolver;

struct SolveRequest {
  int64_t budget_bytes = kUnboundedBudget;  // bound on the activation peak
  Params params;
  Deadline deadline = Deadline::Never();
  // What the algorithm's Prepare returned for this graph and these
  // parameters, shared by every budget's solve; null: not prepared yet (the
  // algorithm then prepares within this solve).
  std::shared_ptr<const void> prepared;
  // Where to leave the best answer so far when the algorithm calls a
  // library that may overrun the deadline; null: nobody is watching.
  StandbyAnswer* standby = nullptr;
  // The link and compute rate the schedule will be simulated with, for
  // algorithms that move values to host memory (an isolated algorithm
  // sees the defaults).
  TimingModel timing;
  // How this algorithm runs another (SubSolver); the runner gives every
  // solve one. Null only where a caller runs an algorithm by hand.
  const SubSolver* sub_solver = nullptr;
};

// What an algorithm says. With a schedule, `status` matters only as
// kTimeout (the schedule is the best found before the deadline); the
// harness decides the rest by simulation.
struct AlgorithmOutput {
  Status status = Status::kFeasible;
  std::optional<Schedule> schedule;
  std::string message;
  std::optional<int64_t> lower_bound_cost;  // proven bound, exact methods only
  // A bound on the cost of the schedules of the algorithm's own class only
  // (the staged schedules of the Checkmate models), not of every schedule:
  // the sweep's staged_gap (docs/model.md).
  std::optional<int64_t> staged_lower_bound_cost;
  bool optimal = false;                     // proven optimal at this budget
  nlohmann::json extra = nlohmann::json::object();  // algorithm's own figures

  static AlgorithmOutput Found(Schedule schedule, std::string message = {});
  static AlgorithmOutput NoSchedule(Status status, std::string message);
};

// Another algorithm's answer as the simulator judged it (its schedule's
// simulation; none without a schedule), and the seconds it took.
struct SubSolution {
  AlgorithmOutput output;
  std::optional<SimulationResult> simulation;
  double seconds = 0;
};

// How an algorithm runs another one (a warm start, a schedule to build on,
// a fallback): through whoever runs the algorithm itself (the harness's
// runner, harness/runner.h), so that the other is judged by the simulator,
// isolated in a child process where it must be and timed like any solve,
// while the algorithms depend on the model alone.
class SubSolver {
 public:
  virtual ~SubSolver() = default;
  // Runs the registered algorithm `name` with the `key=value` parameters
  // `params` (its defaults for the rest) on `graph` within `budget_bytes`
  // for at most `seconds` (> 0); `timing` (null: the defaults) is handed to
  // it and to the simulation.
  virtual SubSolution Solve(const Graph& graph, const std::string& name,
                            const std::vector<std::string>& params,
                            int64_t budget_bytes, double seconds,
                            const TimingModel* timing = nullptr) const = 0;
};

// request.sub_solver; throws std::logic_error when the caller gave none.
const SubSolver& SubSolverOf(const SolveRequest& request);

// The answer an algorithm stands by while it waits on a library that does
// not look at the clock (CBC's root node): its best schedule so far. When
// the algorithm runs isolated, a watchdog in the child process answers
// with it once the deadline is overrun by a grace period, and the process
// ends (harness/isolation.cc); so such algorithms honour their time limit
// to within that grace. Thread-safe.
class StandbyAnswer {
 public:
  void Offer(AlgorithmOutput output);  // replaces the previous offer
  // The last offer with status timeout, or none.
  std::optional<AlgorithmOutput> Take() const;

 private:
  mutable std::mutex mutex_;
  std::optional<AlgorithmOutput> output_;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Budget-independent work on `graph` (a tree decomposition, the lower
  // sets of its forward graph): a sweep calls it once per graph and
  // algorithm run and hands the result to every budget's Solve in
  // `request.prepared` (NetworKit's run-then-get shape), so that no
  // algorithm needs a process-wide cache. It reads the request's
  // parameters and deadline, not its budget. Null: nothing to share, or a
  // failure not worth sharing (the deadline passed).
  std::shared_ptr<const void> Prepare(const Graph& graph,
                                      const SolveRequest& request) {
    return DoPrepare(graph, request);
  }

  AlgorithmOutput Solve(const Graph& graph, const SolveRequest& request) {
    return Run(graph, request);
  }

 private:
  virtual std::shared_ptr<const void> DoPrepare(
      const Graph& /*graph*/, const SolveRequest& /*request*/) {
    return nullptr;
  }
  virtual AlgorithmOutput Run(const Graph& graph,
                              const SolveRequest& request) = 0;
};

// The base of an algorithm with per-graph work of type `Prepared`. Run
// receives the shared preparation, made within the solve when the caller
// had none; null means the deadline passed while preparing (PrepareGraph
// returns null exactly then, so such a failure is never shared).
template <typename Prepared>
class PreparedAlgorithm : public Algorithm {
 private:
  virtual std::shared_ptr<const Prepared> PrepareGraph(
      const Graph& graph, const SolveRequest& request) = 0;
  virtual AlgorithmOutput RunPrepared(const Graph& graph,
                                      const SolveRequest& request,
                                      const Prepared* prepared) = 0;

  std::shared_ptr<const void> DoPrepare(const Graph& graph,
                                        const SolveRequest& request) final {
    return PrepareGraph(graph, request);
  }
  AlgorithmOutput Run(const Graph& graph, const SolveRequest& request) final {
    auto prepared = std::static_pointer_cast<const Prepared>(request.prepared);
    if (!prepared) prepared = PrepareGraph(graph, request);
    return RunPrepared(graph, request, prepared.get());
  }
};

// Where a caller that solves one graph at many budgets keeps one
// algorithm run's preparation: the first solve to need it prepares (the
// others wait for it rather than repeat the work); a null preparation is
// not kept, so the next solve tries again with its own deadline.
class PreparationSlot {
 public:
  std::shared_ptr<const void> GetOrPrepare(Algorithm& algorithm,
                                           const Graph& graph,
                                           const SolveRequest& request) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!prepared_) prepared_ = algorithm.Prepare(graph, request);
    return prepared_;
  }
  // Drops the preparation (solves that hold it keep their copy).
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    prepared_.reset();
  }

 private:
  std::mutex mu_;
  std::shared_ptr<const void> prepared_;
};

}  // namespace remat
