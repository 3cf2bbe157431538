// Moccasin's retention intervals as a constraint program on Gecode (the
// paper's own formulation, Bartan et al. 2023), over the same
// stages and in the same class as the MILP (moccasin.cc): each value i has
// C intervals [s, e] of positions, a position being (stage t, node k) in
// the order stage by stage, node by node. Interval 0 starts at (i, i);
// the others are optional, start at a recompute (t, i) and follow the
// previous one. A compute (t, v) needs, for each input u, an interval of u
// that started before it and has not ended; memory is one cumulative
// constraint over the intervals (plus each compute's workspace) within the
// budget. The objective is the cost of the present intervals.
#include "algorithms/checkmate/moccasin_cp.h"

#include <fmt/format.h>

#include <algorithm>
#include <gecode/int.hh>
#include <gecode/minimodel.hh>
#include <gecode/search.hh>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "algorithms/checkmate/checkmate_model.h"
#include "model/simulator.h"

namespace remat {
namespace {

using Gecode::BoolVarArgs;
using Gecode::IntArgs;
using Gecode::IntVar;
using Gecode::IntVarArgs;

// Gecode's integers are 32 bits: memory is counted in units of
// `mem_unit` bytes (the sizes' gcd when the budget then fits, else sizes
// rounded up and the budget down, which keeps every answer within the
// budget but makes the class smaller), and a cost c is the pair
// (c >> cost_shift, c mod 2^cost_shift), exact.
constexpr int64_t kIntLimit = int64_t{1} << 30;

// The model's data in stage indices.
struct Problem {
  int n = 0, computes = 0;
  std::vector<std::vector<int>> inputs, consumers;
  std::vector<int> mem, workspace, cost_high, cost_low;
  int capacity = 0, cost_shift = 0;
  int64_t mem_unit = 1;
  bool exact_memory = true;
  int64_t Cost(int64_t high, int64_t low) const {
    return (high << cost_shift) + low;
  }
  int Position(int t, int k) const {
    return static_cast<int>(IntervalPosition(t, k));
  }
};

class IntervalSpace : public Gecode::Space {
 public:
  // `cost_below`: only solutions of lower cost (0: none).
  IntervalSpace(const Problem& p, int64_t cost_below) : p_(p) {
    const int n = p.n, c = p.computes;
    present_ = Gecode::BoolVarArray(*this, n * c, 0, 1);
    start_ = Gecode::IntVarArray(*this, n * c);
    end_ = Gecode::IntVarArray(*this, n * c);
    IntVarArgs length(n * c);
    IntArgs usage(n * c);
    BoolVarArgs optional(n * c);
    for (int i = 0; i < n; ++i) {
      // Starts: the recomputes (t, i); ends: a reader's compute or a start.
      std::vector<int> starts, ends;
      for (int t = i; t < n; ++t) starts.push_back(p.Position(t, i));
      ends = starts;
      for (int k : p.consumers[i]) {
        for (int t = k; t < n; ++t) ends.push_back(p.Position(t, k));
      }
      std::sort(ends.begin(), ends.end());
      for (int j = 0; j < c; ++j) {
        const int x = i * c + j;
        start_[x] = IntVar(*this, Gecode::IntSet(IntArgs(starts)));
        end_[x] = IntVar(*this, Gecode::IntSet(IntArgs(ends)));
        length[x] = Gecode::expr(*this, end_[x] - start_[x] + 1);
        rel(*this, length[x] >= 1);
        usage[x] = p.mem[i];
        optional[x] = present_[x];
        if (j == 0) {
          rel(*this, present_[x] == 1);
          rel(*this, start_[x] == p.Position(i, i));
          continue;
        }
        const int prev = x - 1;
        rel(*this, present_[x] <= present_[prev]);
        rel(*this, present_[x] >> (start_[x] > end_[prev]));
        // An absent interval is pinned so that the search never branches
        // on it.
        rel(*this, !present_[x] >> (start_[x] == starts.back() &&
                                    end_[x] == starts.back()));
      }
    }
    for (int v = 0; v < n; ++v) {
      for (int j = 0; j < c; ++j) {
        const int x = v * c + j;
        for (int u : p.inputs[v]) {
          BoolVarArgs covers(c);
          for (int k = 0; k < c; ++k) {
            const int y = u * c + k;
            covers[k] =
                Gecode::expr(*this, present_[y] && start_[y] < start_[x] &&
                                        end_[y] >= start_[x]);
          }
          rel(*this, Gecode::sum(covers) >= present_[x]);
        }
      }
    }
    // Memory: the values held at each position, plus the workspace of the
    // compute there.
    IntVarArgs starts(start_), ends(n * c);
    for (int x = 0; x < n * c; ++x) {
      ends[x] = Gecode::expr(*this, end_[x] + 1);
    }
    for (int x = 0; x < n * c; ++x) {
      if (p.workspace[x / c] == 0) continue;
      starts << start_[x];
      length << IntVar(*this, 1, 1);
      ends << Gecode::expr(*this, start_[x] + 1);
      usage << p.workspace[x / c];
      optional << present_[x];
    }
    cumulative(*this, p.capacity, starts, length, ends, usage, optional);
    IntArgs high(n * c), low(n * c);
    for (int x = 0; x < n * c; ++x) {
      high[x] = p.cost_high[x / c];
      low[x] = p.cost_low[x / c];
    }
    cost_high_ = IntVar(*this, 0, Gecode::Int::Limits::max);
    cost_low_ = IntVar(*this, 0, Gecode::Int::Limits::max);
    linear(*this, high, present_, Gecode::IRT_EQ, cost_high_);
    linear(*this, low, present_, Gecode::IRT_EQ, cost_low_);
    if (cost_below > 0) CostBelow(cost_below);
    // No recompute first, then the earliest recomputes, then the earliest
    // frees.
    branch(*this, present_, Gecode::BOOL_VAR_NONE(), Gecode::BOOL_VAL_MIN());
    branch(*this, start_, Gecode::INT_VAR_NONE(), Gecode::INT_VAL_MIN());
    branch(*this, end_, Gecode::INT_VAR_NONE(), Gecode::INT_VAL_MIN());
  }
  IntervalSpace(IntervalSpace& other) : Space(other), p_(other.p_) {
    present_.update(*this, other.present_);
    start_.update(*this, other.start_);
    end_.update(*this, other.end_);
    cost_high_.update(*this, other.cost_high_);
    cost_low_.update(*this, other.cost_low_);
  }
  Gecode::Space* copy() override { return new IntervalSpace(*this); }
  // Branch and bound: only solutions cheaper than `best`.
  void constrain(const Gecode::Space& best) override {
    CostBelow(static_cast<const IntervalSpace&>(best).Cost());
  }
  // The solution's cost in units of the graph's cost gcd.
  int64_t Cost() const { return p_.Cost(cost_high_.val(), cost_low_.val()); }

  // Fixes the intervals to `intervals` (each value's in order, at most
  // p.computes of them), the rest absent.
  void Fix(const RetentionIntervals& intervals) {
    const int c = p_.computes;
    for (int i = 0; i < p_.n; ++i) {
      for (int j = 0; j < c; ++j) {
        const int x = i * c + j;
        const bool present = j < static_cast<int>(intervals[i].size());
        rel(*this, present_[x] == present);
        if (!present) continue;
        rel(*this, start_[x] == static_cast<int>(intervals[i][j].first));
        rel(*this, end_[x] == static_cast<int>(intervals[i][j].second));
      }
    }
  }

  // The solution's retention intervals.
  RetentionIntervals Intervals() const {
    const int n = p_.n, c = p_.computes;
    RetentionIntervals intervals(n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < c && present_[i * c + j].val(); ++j) {
        intervals[i].emplace_back(start_[i * c + j].val(),
                                  end_[i * c + j].val());
      }
    }
    return intervals;
  }

 private:
  const Problem& p_;
  Gecode::BoolVarArray present_;
  Gecode::IntVarArray start_, end_;
  IntVar cost_high_, cost_low_;

  // high * 2^shift + low <= bound - 1, posted as
  // 2^shift * (high - bound_high) + low <= bound_low so that every
  // constant fits an int (the propagator sums in 64 bits).
  void CostBelow(int64_t bound) {
    const int64_t limit = bound - 1;
    const int64_t bound_high = limit >> p_.cost_shift;
    const int bound_low =
        static_cast<int>(limit - (bound_high << p_.cost_shift));
    IntVar excess(*this, -Gecode::Int::Limits::max, Gecode::Int::Limits::max);
    rel(*this, cost_high_ - excess == static_cast<int>(bound_high));
    linear(*this, IntArgs{1 << p_.cost_shift, 1}, IntVarArgs{excess, cost_low_},
           Gecode::IRT_LQ, bound_low);
  }
};

// The problem of `model`, or nullopt when its costs do not fit.
std::optional<Problem> MakeProblem(const Graph& graph,
                                   const CheckmateModel& model,
                                   int64_t budget_bytes, int computes) {
  Problem p;
  p.n = static_cast<int>(model.order().size());
  p.computes = computes;
  p.inputs = model.inputs();
  p.consumers = model.consumers();
  const std::vector<int64_t>& mem = model.mem_bytes();
  const std::vector<int64_t>& workspace = model.workspace_bytes();
  const int64_t cost_gcd = model.cost_scale();
  int64_t mem_gcd = 0, total_cost = 0, total_mem = 0, max_workspace = 0;
  for (int k = 0; k < p.n; ++k) {
    mem_gcd = std::gcd(mem_gcd, std::gcd(mem[k], workspace[k]));
    total_cost += graph.cost(model.order()[k]) / cost_gcd * computes;
    total_mem += mem[k];  // the graph's sizes fit int64 together
    max_workspace = std::max(max_workspace, workspace[k]);
  }
  // No moment holds more than every value once and one workspace, so a
  // larger budget (no budget: kUnboundedBudget) constrains nothing and is
  // the capacity that needs no rounding; without this bound the scaling
  // below overflowed and Gecode refused the numbers.
  const int64_t capacity_bytes =
      std::min(budget_bytes, total_mem + max_workspace);
  p.mem_unit = std::max<int64_t>(mem_gcd, 1);
  if (capacity_bytes / p.mem_unit > kIntLimit) {
    p.mem_unit = capacity_bytes / kIntLimit +
                 (capacity_bytes % kIntLimit != 0 ? 1 : 0);  // rounded up
    p.exact_memory = false;
  }
  p.capacity = static_cast<int>(capacity_bytes / p.mem_unit);
  // A size above the capacity never fits, whatever its exact figure.
  auto units = [&](int64_t bytes) {
    return static_cast<int>(
        std::min(bytes / p.mem_unit + (bytes % p.mem_unit != 0 ? 1 : 0),
                 int64_t{p.capacity} + 1));
  };
  while ((total_cost >> p.cost_shift) > kIntLimit) ++p.cost_shift;
  if (int64_t{p.n} * computes << p.cost_shift > kIntLimit) return std::nullopt;
  for (int k = 0; k < p.n; ++k) {
    p.mem.push_back(units(mem[k]));
    p.workspace.push_back(units(workspace[k]));
    const int64_t cost = graph.cost(model.order()[k]) / cost_gcd;
    p.cost_high.push_back(static_cast<int>(cost >> p.cost_shift));
    p.cost_low.push_back(
        static_cast<int>(cost - (cost >> p.cost_shift << p.cost_shift)));
  }
  return p;
}

}  // namespace

Schedule ScheduleOfIntervals(const CheckmateModel& model,
                             const RetentionIntervals& intervals) {
  const int n = static_cast<int>(model.order().size());
  // (position, 0 for a compute and 1 for a free, stage index)
  std::vector<std::tuple<int64_t, int, int>> events;
  for (int i = 0; i < n; ++i) {
    for (auto [start, end] : intervals.at(i)) {
      if (end < start || start < IntervalPosition(i, i) ||
          end > IntervalPosition(n - 1, n - 1)) {
        throw std::runtime_error(
            fmt::format("interval [{}, {}] of node {} is off the grid", start,
                        end, model.order()[i]));
      }
      events.emplace_back(start, 0, i);
      events.emplace_back(end, 1, i);
    }
  }
  std::sort(events.begin(), events.end());
  Schedule schedule;
  for (const auto& [position, free, i] : events) {
    const NodeId v = model.order()[i];
    schedule.push_back(free ? Event::Free(v) : Event::Compute(v));
  }
  return schedule;
}

std::optional<RetentionIntervals> IntervalsOf(const CheckmateModel& model,
                                              std::span<const Event> schedule) {
  const int n = static_cast<int>(model.order().size());
  std::vector<int> index(*std::ranges::max_element(model.order()) + 1, -1);
  for (int k = 0; k < n; ++k) index[model.order()[k]] = k;
  RetentionIntervals intervals(n);
  // Per value: where its live instance started (-1: none) and was last
  // read.
  std::vector<int64_t> start(n, -1), last_read(n, -1);
  int stage = 0;      // the stage the next compute is in
  int64_t last = -1;  // position of the last compute
  for (const Event& e : schedule) {
    const int i = e.node >= 0 && e.node < static_cast<NodeId>(index.size())
                      ? index[e.node]
                      : -1;
    if (i < 0 || e.is_transfer()) return std::nullopt;
    if (e.op == Event::Op::kFree) {
      if (start[i] < 0) return std::nullopt;
      intervals[i].emplace_back(start[i], last_read[i]);
      start[i] = -1;
      continue;
    }
    const int64_t position = IntervalPosition(stage, i);
    if (i > stage || start[i] >= 0 || position <= last) return std::nullopt;
    for (int u : model.inputs()[i]) last_read[u] = position;
    start[i] = last_read[i] = last = position;
    if (i == stage) ++stage;
  }
  if (stage < n) return std::nullopt;
  for (int i = 0; i < n; ++i) {
    if (start[i] >= 0) intervals[i].emplace_back(start[i], last_read[i]);
  }
  return intervals;
}

bool IntervalModelAdmits(const Graph& graph, const CheckmateModel& model,
                         const RetentionIntervals& intervals,
                         int64_t budget_bytes) {
  int computes = 1;
  for (const auto& value : intervals) {
    computes = std::max(computes, static_cast<int>(value.size()));
  }
  const std::optional<Problem> problem =
      MakeProblem(graph, model, budget_bytes, computes);
  if (!problem || !problem->exact_memory) {
    throw std::invalid_argument(
        "the interval model counts this graph's memory inexactly");
  }
  IntervalSpace space(*problem, 0);
  space.Fix(intervals);
  return space.status() != Gecode::SS_FAILED;
}

// Gecode's search stops at the deadline, and where the process is asked to
// stop (model/stop.h), which Gecode's TimeStop does not know of.
class DeadlineStop : public Gecode::Search::Stop {
 public:
  explicit DeadlineStop(Deadline deadline) : deadline_(deadline) {}
  bool stop(const Gecode::Search::Statistics&,
            const Gecode::Search::Options&) override {
    return deadline_.Expired();
  }

 private:
  Deadline deadline_;
};

CpAnswer SolveMoccasinCp(const Graph& graph, const SolveRequest& request,
                         int computes, int threads, StagedStart& start,
                         const Deadline& deadline) {
  const CheckmateModel& model = start.model;
  std::optional<Incumbent>& incumbent = start.incumbent;
  const int64_t cost_scale = model.cost_scale();
  std::optional<Problem> problem =
      MakeProblem(graph, model, request.budget_bytes, computes);
  if (!problem) {
    return {AlgorithmOutput::NoSchedule(Status::kTooLarge,
                                        "costs beyond Gecode's integers"),
            false};
  }
  // The incumbent, when it is a point of the model, bounds the search:
  // only cheaper schedules are looked for, and none found proves it.
  const bool bounded = incumbent && model.PointOf(incumbent->schedule);
  const int64_t cost_below = bounded ? incumbent->cost / cost_scale : 0;
  auto root = std::make_unique<IntervalSpace>(*problem, cost_below);
  Gecode::Search::Options options;
  options.threads = static_cast<double>(threads);
  const double seconds = deadline.SecondsLeft() - 0.2;
  DeadlineStop stop(seconds < 1e9 ? Deadline::In(std::max(seconds, 1e-9))
                                  : Deadline::Never());
  options.stop = &stop;
  Gecode::BAB<IntervalSpace> search(root.get(), options);
  std::unique_ptr<IntervalSpace> best;
  while (IntervalSpace* solution = search.next()) best.reset(solution);
  // Optimal in the class only when the search ended on exact memory.
  const bool proven = !search.stopped();
  const bool settled = proven && problem->exact_memory;
  const Gecode::Search::Statistics stats = search.statistics();
  const std::string how =
      fmt::format("Gecode: {} nodes, {} failures{}", stats.node, stats.fail,
                  problem->exact_memory
                      ? ""
                      : fmt::format(", memory in units of {} B rounded up",
                                    problem->mem_unit));
  const char* outcome =
      settled  ? "optimal among staged schedules computing each value at "
                 "most C times"
      : proven ? "optimal for memory rounded up"
               : "time limit before proving optimality";
  if (best) {
    Schedule schedule = ScheduleOfIntervals(model, best->Intervals());
    const int64_t cost = Simulate(graph, schedule).cost;
    incumbent = Incumbent{schedule, cost, "moccasin (Gecode)"};
  }
  if (!incumbent || (proven && !best && !bounded)) {
    return {AlgorithmOutput::NoSchedule(
                proven ? Status::kInfeasible : Status::kTimeout,
                fmt::format("{} ({})",
                            proven ? "no schedule of its class fits (other "
                                     "schedules may)"
                                   : "no schedule found within the time limit",
                            how)),
            settled};
  }
  std::string message;
  if (best) {
    message = fmt::format("{} ({})", outcome, how);
  } else if (bounded) {
    message = fmt::format("warm start {}, none cheaper found: {} ({})",
                          incumbent->algorithm, outcome, how);
  } else {
    message = fmt::format(
        "time limit before a schedule of the class; warm start {} ({})",
        incumbent->algorithm, how);
  }
  AlgorithmOutput out =
      AlgorithmOutput::Found(incumbent->schedule, std::move(message));
  out.optimal = settled;
  if (settled) out.staged_lower_bound_cost = incumbent->cost;
  if (!proven) out.status = Status::kTimeout;
  out.extra["search_nodes"] = static_cast<int64_t>(stats.node);
  return {std::move(out), settled};
}

}  // namespace remat
