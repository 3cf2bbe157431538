#include "algorithms/lower_set_dp.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "harness/liveness.h"
#include "harness/simulator.h"

namespace remat {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Calls visit(t, peak, extra_time, kept_mem) for every superset t of set s
// that a transition from s can reach with `slack` = budget - kept memory:
// peak = 2 M(t \ s) + M(A(t)) + M(B(t)) <= slack, extra_time = T(t \ s) -
// T(U), kept_mem = M(U), U = ∂t \ s. Since the peak is at least
// 2 (M(t) - M(s)), the candidates are the memory-sorted sets up to
// M(s) + slack / 2; each is tested for containment word by word.
template <typename Visit>
void ForEachTransition(const LowerSetFamily& f, int32_t s, int64_t slack,
                       Visit&& visit) {
  const int64_t reach = slack / 2;
  const int32_t last = f.UpperBoundByMem(
      reach > kInt64Max - f.mem(s) ? kInt64Max : f.mem(s) + reach);
  const int32_t words = f.words();
  const uint64_t* source = f.bits(s);
  for (int32_t t = s + 1; t < last; ++t) {
    const uint64_t* target = f.bits(t);
    bool subset = true;
    for (int32_t w = 0; w < words && subset; ++w) {
      subset = (source[w] & ~target[w]) == 0;
    }
    if (!subset) continue;
    const int64_t grow = 2 * (f.mem(t) - f.mem(s));  // <= slack
    if (f.ab_mem(t) > slack - grow) continue;
    // Boundary nodes already in s were kept by earlier segments.
    int64_t kept_cost = f.boundary_cost(t), kept_mem = f.boundary_mem(t);
    for (int32_t v : f.boundary(t)) {
      if ((source[v >> 6] >> (v & 63)) & 1) {
        kept_cost -= f.node_cost(v);
        kept_mem -= f.node_mem(v);
      }
    }
    visit(t, grow + f.ab_mem(t), f.cost(t) - f.cost(s) - kept_cost, kept_mem);
  }
}

// Adds `p` to `front` unless a point with no more time and no more kept
// memory is there; removes the points `p` dominates. Returns the change in
// the number of points.
int64_t InsertPareto(std::vector<ParetoPoint>& front, const ParetoPoint& p) {
  auto it = std::lower_bound(
      front.begin(), front.end(), p.time,
      [](const ParetoPoint& q, int64_t time) { return q.time < time; });
  // Kept memory falls as time grows, so the last point with time <= p.time
  // holds the least memory among those that could dominate p.
  if (it != front.end() && it->time == p.time) {
    if (it->kept <= p.kept) return 0;
  } else if (it != front.begin() && std::prev(it)->kept <= p.kept) {
    return 0;
  }
  auto end = it;
  while (end != front.end() && end->kept >= p.kept) ++end;
  if (end == it) {
    front.insert(it, p);
    return 1;
  }
  *it = p;
  const int64_t removed = end - it - 1;
  front.erase(it + 1, end);
  return -removed;
}

// The order of the single label of pass 1: least kept, then least time.
bool LessKept(const ParetoPoint& a, const ParetoPoint& b) {
  return a.kept != b.kept ? a.kept < b.kept : a.time < b.time;
}

// Keeps `keep` points of a final front: both ends and evenly spaced ones
// between, so that a beam pass still reaches G whenever the least-kept
// point does.
void Thin(std::vector<ParetoPoint>& front, int32_t keep) {
  const auto size = static_cast<int64_t>(front.size());
  if (size <= keep) return;
  std::vector<ParetoPoint> kept;
  for (int64_t j = 0; j < keep; ++j) {
    kept.push_back(front[j * (size - 1) / (keep - 1)]);
  }
  front = std::move(kept);
}

// Fronts of (time, kept) per set, subsets first, dropping points whose time
// exceeds `upper_bound` (time only grows along a strategy). With `thin` > 0
// the fronts are cut to that many points whenever they reach twice as many
// and before they are extended (a beam, for a first upper bound). Returns false
// when the deadline or `max_points` stopped it, with dp.status and dp.message
// set.
bool RunFronts(const LowerSetFamily& f, int64_t budget, int64_t upper_bound,
               int32_t thin, int64_t max_points, const Deadline& deadline,
               DpOutcome& dp) {
  const int32_t full = f.full_set();
  dp.fronts.assign(f.size(), {});
  dp.fronts[f.empty_set()].push_back({0, 0, -1, -1});
  int64_t points = 1;
  for (int32_t s = 0; s < full; ++s) {
    std::vector<ParetoPoint>& from = dp.fronts[s];
    if (from.empty()) continue;
    if (deadline.Expired()) {
      dp.status = Status::kTimeout;
      dp.message =
          fmt::format("deadline reached at lower set {} of {}", s, f.size());
      return false;
    }
    if (thin > 0) Thin(from, thin);
    ForEachTransition(
        f, s, budget - from.back().kept,
        [&](int32_t t, int64_t peak, int64_t time, int64_t kept) {
          // The front is sorted by kept memory descending: skip the points
          // that cannot afford this transition's peak.
          auto i = static_cast<int32_t>(
              std::partition_point(from.begin(), from.end(),
                                   [&](const ParetoPoint& p) {
                                     return p.kept > budget - peak;
                                   }) -
              from.begin());
          for (; i < static_cast<int32_t>(from.size()) &&
                 from[i].time <= upper_bound - time;
               ++i) {
            points += InsertPareto(
                dp.fronts[t], {from[i].time + time, from[i].kept + kept, s, i});
          }
          if (thin > 0 && dp.fronts[t].size() > 2 * static_cast<size_t>(thin)) {
            points -= static_cast<int64_t>(dp.fronts[t].size()) - thin;
            Thin(dp.fronts[t], thin);
          }
        });
    dp.max_points = std::max(dp.max_points, points);
    if (points > max_points) {
      dp.status = Status::kTooLarge;
      dp.message = fmt::format(
          "more than max_states={} Pareto points (at lower set {} of {})",
          max_points, s, f.size());
      return false;
    }
  }
  return true;
}

// Points per front in the beam pass.
constexpr int32_t kBeamWidth = 8;

}  // namespace

DpOutcome RunLowerSetDp(const LowerSetFamily& f, int64_t budget,
                        int64_t max_points, const Deadline& deadline) {
  DpOutcome dp;
  const int32_t sets = f.size(), full = f.full_set();
  const ParetoPoint none{kInt64Max, kInt64Max, -1, -1};
  // Pass 1: the least-kept label of every set.
  dp.least_kept.assign(sets, none);
  dp.least_kept[f.empty_set()] = {0, 0, -1, 0};
  for (int32_t s = 0; s < sets; ++s) {
    const ParetoPoint from = dp.least_kept[s];
    if (from.from_point < 0) continue;
    if ((s & 255) == 0 && deadline.Expired()) {
      dp.status = Status::kTimeout;
      dp.message =
          fmt::format("deadline reached at lower set {} of {}", s, sets);
      return dp;
    }
    ForEachTransition(
        f, s, budget - from.kept,
        [&](int32_t t, int64_t, int64_t time, int64_t kept) {
          ++dp.transitions;
          ParetoPoint next{from.time + time, from.kept + kept, s, 0};
          if (LessKept(next, dp.least_kept[t])) {
            dp.least_kept[t] = next;
          }
        });
  }
  if (dp.least_kept[full].from_point < 0) return dp;  // nothing fits
  // Pass 2: a beam for an upper bound on the least time; pass 3: exact.
  int64_t upper_bound = dp.least_kept[full].time;
  if (!RunFronts(f, budget, upper_bound, kBeamWidth, max_points, deadline,
                 dp)) {
    return dp;
  }
  if (!dp.fronts[full].empty()) {
    upper_bound = std::min(upper_bound, dp.fronts[full].front().time);
  }
  // Fronts hold at most one point per time value up to the bound, so a
  // bound near the optimum keeps them short. The beam's bound can be far
  // above it; doubling a smaller guess costs at most about twice the last
  // pass, and a pass that reaches G is exact (it dropped only points whose
  // time exceeds its bound, so none on a better strategy).
  for (int64_t guess = std::max<int64_t>(1, upper_bound / 64);; guess *= 2) {
    const int64_t bound = std::min(guess, upper_bound);
    if (!RunFronts(f, budget, bound, 0, max_points, deadline, dp) ||
        !dp.fronts[full].empty() || bound == upper_bound) {
      break;
    }
  }
  return dp;
}

std::vector<int32_t> TimeCentricChain(const DpOutcome& dp,
                                      const LowerSetFamily& family) {
  std::vector<int32_t> chain;
  int32_t s = family.full_set(), point = 0;
  while (s != family.empty_set()) {
    chain.push_back(s);
    const ParetoPoint& p = dp.fronts[s][point];
    s = p.from_set;
    point = p.from_point;
  }
  chain.push_back(s);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

std::vector<int32_t> MemoryCentricChain(const DpOutcome& dp,
                                        const LowerSetFamily& family) {
  std::vector<int32_t> chain;
  for (int32_t s = family.full_set(); s != family.empty_set();
       s = dp.least_kept[s].from_set) {
    chain.push_back(s);
  }
  chain.push_back(family.empty_set());
  std::reverse(chain.begin(), chain.end());
  return chain;
}

int64_t EstimatedPeak(const LowerSetFamily& f, std::span<const int32_t> chain) {
  int64_t kept = 0, peak = 0;
  for (size_t i = 1; i < chain.size(); ++i) {
    const int32_t s = chain[i - 1], t = chain[i];
    peak = std::max(peak, kept + 2 * (f.mem(t) - f.mem(s)) + f.ab_mem(t));
    for (int32_t v : f.boundary(t)) {
      if (!f.Contains(s, v)) kept += f.node_mem(v);
    }
  }
  return peak;
}

std::vector<NodeId> CanonicalComputes(const ForwardGraph& g,
                                      const LowerSetFamily& f,
                                      std::span<const int32_t> chain,
                                      const Graph& graph) {
  const int32_t n = g.size();
  const auto k = static_cast<int32_t>(chain.size()) - 1;
  // Segment i (1-based) = L_i \ L_(i-1); its members in topological order.
  std::vector<std::vector<int32_t>> segment(k + 1);
  std::vector<uint8_t> kept(n, 0);
  for (int32_t i = 1; i <= k; ++i) {
    const uint64_t* now = f.bits(chain[i]);
    const uint64_t* before = f.bits(chain[i - 1]);
    for (int32_t w = 0; w < f.words(); ++w) {
      for (uint64_t x = now[w] & ~before[w]; x; x &= x - 1) {
        segment[i].push_back(w * 64 + std::countr_zero(x));
      }
    }
    for (int32_t v : f.boundary(chain[i])) {
      if (!f.Contains(chain[i - 1], v)) kept[v] = 1;  // v in U_i
    }
  }
  std::vector<NodeId> computes;
  for (int32_t i = 1; i <= k; ++i) {
    for (int32_t v : segment[i]) computes.push_back(g.node[v]);
  }
  // Backward, last segment first. Live from the forward pass are the kept
  // values of segments 1..i; everything else a backward node of segment i
  // reads is recomputed from them (the liveness pass has freed the forward
  // instance). Only what is read is recomputed, which can be less than
  // V_i \ U_i when a backward node needs neither its inputs nor its output.
  std::vector<uint8_t> available = kept;
  std::vector<int32_t> marked_in(n, 0), redo, stack;
  std::vector<NodeId> backward;
  for (int32_t i = k; i >= 1; --i) {
    redo.clear();
    backward.clear();
    auto mark = [&](int32_t v) {
      if (available[v] || marked_in[v] == i) return;
      marked_in[v] = i;
      stack.push_back(v);
    };
    for (int32_t v : segment[i]) {
      for (NodeId b : g.backward_of[v]) {
        backward.push_back(b);
        for (NodeId u : graph.inputs(b)) {
          if (g.local[u] >= 0) mark(g.local[u]);
        }
      }
    }
    while (!stack.empty()) {
      const int32_t v = stack.back();
      stack.pop_back();
      redo.push_back(v);
      for (int32_t p : g.pred(v)) mark(p);
    }
    std::sort(redo.begin(), redo.end());
    for (int32_t v : redo) computes.push_back(g.node[v]);
    std::sort(backward.begin(), backward.end(), [&](NodeId a, NodeId b) {
      return graph.topo_rank(a) < graph.topo_rank(b);
    });
    computes.insert(computes.end(), backward.begin(), backward.end());
    for (int32_t v : segment[i]) available[v] = 0;
  }
  return computes;
}

namespace {

// One answer of the DP turned into a schedule and simulated.
struct Candidate {
  const char* strategy;
  ParetoPoint point;  // at G
  std::vector<int32_t> chain;
  Schedule schedule;
  SimulationResult simulation;
};

Candidate Build(const char* strategy, const ParetoPoint& point,
                std::vector<int32_t> chain, const LowerSetAnalysis& a,
                const Graph& graph) {
  Candidate c{strategy, point, std::move(chain), {}, {}};
  c.schedule =
      InsertFrees(graph, CanonicalComputes(a.graph, a.family, c.chain, graph));
  c.simulation = Simulate(graph, c.schedule);
  return c;
}

}  // namespace

AlgorithmOutput SolveLowerSetDp(const Graph& graph, const SolveRequest& request,
                                LowerSetKind kind) {
  const int64_t max_sets = kind == LowerSetKind::kAll
                               ? request.params.Int("max_lower_sets")
                               : kInt64Max;
  LowerSetLookup lookup = GetLowerSets(graph, kind, max_sets, request.deadline);
  if (!lookup.analysis) {
    return AlgorithmOutput::NoSchedule(lookup.status, lookup.message);
  }
  const LowerSetAnalysis& a = *lookup.analysis;
  const int64_t budget = request.budget_bytes;
  DpOutcome dp = RunLowerSetDp(
      a.family, budget, request.params.Int("max_states"), request.deadline);
  nlohmann::json extra = {{"lower_sets", a.family.size()},
                          {"forward_nodes", a.graph.size()},
                          {"transitions", dp.transitions},
                          {"max_pareto_points", dp.max_points}};
  auto no_schedule = [&](Status status, std::string message) {
    AlgorithmOutput out =
        AlgorithmOutput::NoSchedule(status, std::move(message));
    out.extra = std::move(extra);
    return out;
  };
  if (dp.status != Status::kFeasible) return no_schedule(dp.status, dp.message);
  if (!dp.reached()) {
    return no_schedule(
        Status::kInfeasible,
        fmt::format("no strategy over {} lower sets fits the budget by the "
                    "DP's memory estimate",
                    a.family.size()));
  }
  extra["dp_least_extra_time"] = dp.fronts[a.family.full_set()].front().time;
  extra["dp_least_kept_bytes"] = dp.least_kept[a.family.full_set()].kept;
  // Time-centric: the least extra time. Memory-centric: the least kept
  // memory, i.e. coarser segments, whose real peak after the liveness pass
  // is often lower; `auto` falls back to it when time-centric's simulated
  // peak does not fit (the authors' recommendation).
  const std::string& strategy = request.params.String("strategy");
  std::vector<Candidate> tried;
  if (strategy != "memory") {
    tried.push_back(Build("time", dp.fronts[a.family.full_set()].front(),
                          TimeCentricChain(dp, a.family), a, graph));
  }
  if (strategy == "memory" ||
      (strategy == "auto" && tried.back().simulation.peak_bytes > budget)) {
    tried.push_back(Build("memory", dp.least_kept[a.family.full_set()],
                          MemoryCentricChain(dp, a.family), a, graph));
  }
  // The first that fits, else the one with the lower simulated peak.
  const Candidate* chosen = &tried.front();
  for (const Candidate& c : tried) {
    if (c.simulation.peak_bytes <= budget) {
      chosen = &c;
      break;
    }
    if (c.simulation.peak_bytes < chosen->simulation.peak_bytes) chosen = &c;
  }
  const int64_t estimate = EstimatedPeak(a.family, chosen->chain);
  extra["strategy"] = chosen->strategy;
  extra["segments"] = chosen->chain.size() - 1;
  extra["dp_extra_time"] = chosen->point.time;
  extra["dp_kept_bytes"] = chosen->point.kept;
  extra["dp_memory_estimate_bytes"] = estimate;
  std::string message = fmt::format(
      "{}-centric over {} lower sets: {} segments, DP extra time {}, DP "
      "memory estimate {} bytes (reported figures are simulated)",
      chosen->strategy, a.family.size(), chosen->chain.size() - 1,
      chosen->point.time, estimate);
  if (tried.size() > 1) {
    message += fmt::format("; time-centric simulated peak {} bytes",
                           tried.front().simulation.peak_bytes);
  }
  AlgorithmOutput out =
      AlgorithmOutput::Found(chosen->schedule, std::move(message));
  out.extra = std::move(extra);
  return out;
}

}  // namespace remat
