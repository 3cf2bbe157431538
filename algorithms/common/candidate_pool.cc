// The candidate policy's order and the knob bisection (candidate_pool.h).
#include "algorithms/common/candidate_pool.h"

#include <stdexcept>
#include <utility>

namespace remat {

bool CandidatePool::Offer(Schedule schedule, nlohmann::json note) {
  SimulationResult simulation =
      Simulate(graph_, schedule, {.timing = options_.timing});
  return Offer(std::move(schedule), std::move(simulation), std::move(note));
}

bool CandidatePool::Offer(Schedule schedule, SimulationResult simulation,
                          nlohmann::json note) {
  ++offered_;
  last_ = simulation;
  if (!simulation.valid) {
    if (options_.invalid_is_bug) {
      throw std::logic_error("the algorithm built an invalid schedule: " +
                             simulation.error);
    }
    return false;
  }
  const bool fits = Fits(simulation);
  if (!best_ || Better(simulation, best_->simulation)) {
    best_ =
        Candidate{std::move(schedule), std::move(simulation), std::move(note)};
  }
  return fits;
}

bool CandidatePool::Better(const SimulationResult& a,
                           const SimulationResult& b) const {
  if (Fits(a) != Fits(b)) return Fits(a);
  const bool by_cost =
      options_.objective == CandidatePoolOptions::Objective::kCost;
  // The objectives compared as they are (a makespan is a double), so that
  // only exact ties fall through.
  const bool objective_less =
      by_cost ? a.cost < b.cost : a.makespan < b.makespan;
  const bool objective_equal =
      by_cost ? a.cost == b.cost : a.makespan == b.makespan;
  if (Fits(a)) {
    return objective_less || (objective_equal && a.peak_bytes < b.peak_bytes);
  }
  return a.peak_bytes < b.peak_bytes ||
         (a.peak_bytes == b.peak_bytes && objective_less);
}

CandidatePool::Candidate CandidatePool::TakeBest() {
  Candidate taken = std::move(*best_);
  best_.reset();
  return taken;
}

AlgorithmOutput CandidatePool::Take(std::optional<Status> stop,
                                    std::string message) {
  Candidate taken = TakeBest();
  AlgorithmOutput output =
      AlgorithmOutput::Found(std::move(taken.schedule), std::move(message));
  if (stop == Status::kTimeout) output.status = Status::kTimeout;
  output.extra = std::move(taken.note);
  return output;
}

KnobBracket BisectKnob(int64_t lo, int64_t hi,
                       const std::function<bool(int64_t)>& holds,
                       const std::function<bool()>& go_on, int max_steps) {
  for (int step = 0; step < max_steps && hi - lo > 1 && (!go_on || go_on());
       ++step) {
    const int64_t mid = lo + (hi - lo) / 2;
    (holds(mid) ? lo : hi) = mid;
  }
  return {lo, hi};
}

}  // namespace remat
