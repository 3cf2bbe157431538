// The candidate policy: how an algorithm that builds several schedules for
// one budget chooses the one it reports (docs/algorithms.md, "Choosing
// among candidates"), and the search over a monotone knob that most of them
// run to build those schedules.
//
// Every candidate is judged by the simulator, and the pool keeps the best by
// one order, the same in every algorithm:
//   1. a schedule whose simulated peak fits the budget beats one that does
//      not;
//   2. of two that fit, the smaller objective wins (the simulated cost, or
//      the makespan where the algorithm moves values to host memory), then
//      the smaller peak;
//   3. of two that do not fit, the smaller peak wins, then the smaller
//      objective;
//   4. on a complete tie the one offered first stays, so an algorithm's
//      answer follows from its order of offers and repeats.
// A schedule the simulator rejects is never kept: the pool skips it, or,
// where it can only come from a bug in the algorithm's own builder, throws
// (the harness reports the exception as an error).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/algorithm.h"
#include "model/graph.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace remat {

struct CandidatePoolOptions {
  enum class Objective { kCost, kMakespan };
  Objective objective = Objective::kCost;
  // The timing model candidates are simulated with; needed for kMakespan.
  const TimingModel* timing = nullptr;
  // Whether an invalid schedule is a bug (throw std::logic_error) rather
  // than a candidate to skip.
  bool invalid_is_bug = false;
};

class CandidatePool {
 public:
  struct Candidate {
    Schedule schedule;
    SimulationResult simulation;
    // What the algorithm wants to remember of it (its knob setting); Take()
    // makes it the output's `extra`.
    nlohmann::json note;
  };

  CandidatePool(const Graph& graph, int64_t budget_bytes,
                CandidatePoolOptions options = {})
      : graph_(graph), budget_(budget_bytes), options_(options) {}

  // Simulates `schedule` and keeps it if it is the best so far. Returns
  // whether it is valid and fits the budget.
  bool Offer(Schedule schedule, nlohmann::json note = {});
  // The same for a schedule the caller has simulated already (with the
  // pool's timing model, where the objective is the makespan).
  bool Offer(Schedule schedule, SimulationResult simulation,
             nlohmann::json note = {});

  bool empty() const { return !best_; }
  // The kept candidate; only when !empty().
  const Candidate& best() const { return *best_; }
  bool fits() const { return best_ && Fits(best_->simulation); }
  int64_t peak_bytes() const { return best_->simulation.peak_bytes; }
  const nlohmann::json& note() const { return best_->note; }
  // The simulation of the schedule offered last, kept or not.
  const SimulationResult& last() const { return last_; }
  // Schedules offered, valid or not.
  int offered() const { return offered_; }
  bool Fits(const SimulationResult& simulation) const {
    return simulation.valid && simulation.peak_bytes <= budget_;
  }

  // Hands over the kept candidate (the pool is empty afterwards).
  Candidate TakeBest();
  // The kept schedule as the algorithm's output, with its note as `extra`
  // and `message`. `stop` is what stopped the search early, if anything:
  // the output is a timeout when the deadline did (the best so far),
  // otherwise the harness judges it.
  AlgorithmOutput Take(std::optional<Status> stop, std::string message);

 private:
  bool Better(const SimulationResult& a, const SimulationResult& b) const;

  const Graph& graph_;
  int64_t budget_;
  CandidatePoolOptions options_;
  std::optional<Candidate> best_;
  SimulationResult last_;
  int offered_ = 0;
};

// Bisects a knob on the integers between `lo` and `hi`, where
// `holds(knob)` is true up to some value and false above it: `lo` is taken
// to hold and `hi` not to (neither is evaluated). Before each evaluation
// the bracket must be wider than adjacent values, `go_on()` (if given) true
// and fewer than `max_steps` evaluations made; returns the bracket as
// narrowed: `lo` the largest knob known to hold, `hi` the smallest known
// not to.
struct KnobBracket {
  int64_t lo, hi;
};
KnobBracket BisectKnob(int64_t lo, int64_t hi,
                       const std::function<bool(int64_t)>& holds,
                       const std::function<bool()>& go_on = {},
                       int max_steps = std::numeric_limits<int>::max());

}  // namespace remat
