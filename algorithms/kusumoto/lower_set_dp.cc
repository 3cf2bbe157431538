// The three DP passes over a lower-set family, the strategy chains they
// pick, and the canonical schedule of a chain (lower_set_dp.h); also the
// LowerSetDp algorithm class that dp_exact and dp_approx register.
#include "algorithms/kusumoto/lower_set_dp.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <string_view>

#include "algorithms/common/candidate_pool.h"
#include "model/liveness.h"
#include "model/memory_model.h"
#include "model/simulator.h"

namespace remat {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Calls visit(t, cap, extra_time, kept_mem) for every superset t of a set
// s that a point at s with kept memory `floor` (the least at s) can move
// to and still finish, spending at most `max_time`: extra_time =
// T(t \ s) - T(U), kept_mem = M(U), U = ∂t \ s, and cap = the most kept
// memory a point at s may hold to take the transition, min(budget - peak,
// most_kept[t] - kept_mem), where peak = 2 M(t \ s) + M(A(t)) + M(B(t))
// and most_kept[t] is the most kept memory from which G can still be
// reached at t. Transitions with cap < floor are skipped. Both the peak
// (LowerSetFamily::peak_key) and the extra time only grow with t (the
// extra time is the cost of the nodes of t \ s with no successor outside
// t, and adding a node to t leaves those without one), so the walk over
// supersets stops where either passes its limit; Walk returns the least
// extra time that passed `max_time` (kInt64Max if none). `visit` may raise
// the floor as it goes (a search for the largest cap does).
class TransitionWalker {
 public:
  TransitionWalker(const LowerSetFamily& f, int64_t budget,
                   std::span<const int64_t> most_kept)
      : f_(f), budget_(budget), most_kept_(most_kept) {}

  template <typename Visit>
  int64_t Walk(int32_t s, int64_t& floor, const int64_t& max_time,
               Visit&& visit) {
    int64_t least_over = kInt64Max;
    // peak = peak_key(t) - 2 M(s) must leave room for `floor`.
    auto key_limit = [&] {
      const int64_t room = budget_ - floor;
      return room > kInt64Max - 2 * f_.mem(s) ? kInt64Max
                                              : room + 2 * f_.mem(s);
    };
    int64_t max_key = key_limit();
    const uint64_t* source = f_.bits(s);
    f_.ForEachSuperset(s, max_key, scratch_, [&](int32_t t) {
      // Boundary nodes already in s were kept by earlier segments.
      int64_t kept_cost = f_.boundary_cost(t), kept_mem = f_.boundary_mem(t);
      for (int32_t v : f_.boundary(t)) {
        if ((source[v >> 6] >> (v & 63)) & 1) {
          kept_cost -= f_.node_cost(v);
          kept_mem -= f_.node_mem(v);
        }
      }
      const int64_t time = f_.cost(t) - f_.cost(s) - kept_cost;
      if (time > max_time) {
        least_over = std::min(least_over, time);
        return false;
      }
      const int64_t peak = f_.peak_key(t) - 2 * f_.mem(s);
      const int64_t cap = std::min(budget_ - peak, most_kept_[t] - kept_mem);
      if (cap >= floor) {
        visit(t, cap, time, kept_mem);
        max_key = key_limit();
      }
      return true;
    });
    return least_over;
  }

 private:
  const LowerSetFamily& f_;
  const int64_t budget_;
  std::span<const int64_t> most_kept_;
  LowerSetFamily::WalkScratch scratch_;
};

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

// Merges points [first, last) of `from` (the front of set `s`), shifted by
// (time, kept), into `into`: one linear pass over both staircases instead
// of an insertion per point. Returns the change in the number of points.
int64_t MergePareto(std::vector<ParetoPoint>& into,
                    std::span<const ParetoPoint> from, int32_t first,
                    int32_t last, int32_t s, int64_t time, int64_t kept,
                    std::vector<ParetoPoint>& scratch) {
  if (last - first <= 2) {
    int64_t change = 0;
    for (int32_t i = first; i < last; ++i) {
      change +=
          InsertPareto(into, {from[i].time + time, from[i].kept + kept, s, i});
    }
    return change;
  }
  scratch.clear();
  auto emit = [&](const ParetoPoint& p) {
    if (scratch.empty() || p.kept < scratch.back().kept) {
      if (!scratch.empty() && scratch.back().time == p.time) {
        scratch.back() = p;
      } else {
        scratch.push_back(p);
      }
    }
  };
  size_t j = 0;
  for (int32_t i = first; i < last; ++i) {
    const ParetoPoint p{from[i].time + time, from[i].kept + kept, s, i};
    for (; j < into.size() &&
           (into[j].time < p.time ||
            (into[j].time == p.time && into[j].kept <= p.kept));
         ++j) {
      emit(into[j]);
    }
    emit(p);
  }
  for (; j < into.size(); ++j) emit(into[j]);
  const int64_t change =
      static_cast<int64_t>(scratch.size()) - static_cast<int64_t>(into.size());
  into.swap(scratch);
  return change;
}

// The order of the single label of pass 2: least kept, then least time.
bool LessKept(const ParetoPoint& a, const ParetoPoint& b) {
  return a.kept != b.kept ? a.kept < b.kept : a.time < b.time;
}

bool StopAtDeadline(const Deadline& deadline, int32_t s, int32_t sets,
                    DpOutcome& dp) {
  if ((s & 63) != 0 || !deadline.Expired()) return false;
  dp.status = Status::kTimeout;
  dp.message = fmt::format("deadline reached at lower set {} of {}", s, sets);
  return true;
}

// One call of RunFronts: it extends the fronts of (time, kept) per set
// from the points with time at most `done` (none when `done` < 0) to those
// with time at most `bound` (time only grows along a strategy).
struct FrontPass {
  int64_t done = -1;
  int64_t bound = 0;
  // Transitions plus merged (point, transition) pairs the call may spend
  // before it gives up (kOverWork).
  int64_t max_work = std::numeric_limits<int64_t>::max();
  int64_t points = 0;  // Pareto points held, carried across calls
  // Out: the work spent, and the least time of a point dropped for
  // exceeding `bound`.
  int64_t work = 0;
  int64_t dropped = std::numeric_limits<int64_t>::max();
};

enum class PassEnd { kDone, kOverWork, kStopped };

// Runs one FrontPass, subsets first. A point with time above `done`
// cannot dominate one below it, so the old points stay where they are
// (with their indices) and each (point, transition) pair is merged in one
// call only. kStopped when the deadline or `max_points` stopped it, with
// dp.status and dp.message set; after kOverWork the fronts beyond `done`
// are incomplete (see TruncateFronts).
PassEnd RunFronts(const LowerSetFamily& f, int64_t budget, int64_t max_points,
                  const Deadline& deadline, DpOutcome& dp, FrontPass& pass) {
  const int64_t done = pass.done, bound = pass.bound;
  pass.dropped = kInt64Max;
  pass.work = 0;
  const int32_t full = f.full_set();
  if (done < 0) {
    dp.fronts.assign(f.size(), {});
    dp.fronts[f.empty_set()].push_back({0, 0, -1, -1});
    pass.points = 1;
  }
  std::vector<ParetoPoint> scratch;
  TransitionWalker walker(f, budget, dp.most_kept);
  for (int32_t s = 0; s < full; ++s) {
    const std::vector<ParetoPoint>& from = dp.fronts[s];
    if (from.empty()) continue;
    if (StopAtDeadline(deadline, s, f.size(), dp)) return PassEnd::kStopped;
    if (pass.work > pass.max_work) return PassEnd::kOverWork;
    int64_t floor = from.back().kept;
    const int64_t over = walker.Walk(
        s, floor, bound - from.front().time,
        [&](int32_t t, int64_t cap, int64_t time, int64_t kept) {
          ++dp.transitions;
          ++pass.work;
          // Every strategy through t spends at least least_rest[t] more.
          const int64_t rest = dp.least_rest[t];
          if (rest == kInt64Max) return;
          const int64_t step = time + rest;
          // Pairs within `done` were merged by an earlier call.
          if (from.back().time <= done - step) return;
          // The front is sorted by time ascending and kept memory
          // descending: the new pairs are a window of it.
          auto time_at_most = [&](int64_t limit) {
            return static_cast<int32_t>(
                std::partition_point(
                    from.begin(), from.end(),
                    [&](const ParetoPoint& p) { return p.time <= limit; }) -
                from.begin());
          };
          const int32_t last = time_at_most(bound - step);
          if (last < static_cast<int32_t>(from.size())) {
            pass.dropped = std::min(pass.dropped, from[last].time + step);
          }
          const int32_t first = std::max(
              time_at_most(done - step),
              static_cast<int32_t>(
                  std::partition_point(
                      from.begin(), from.end(),
                      [&](const ParetoPoint& p) { return p.kept > cap; }) -
                  from.begin()));
          if (first >= last) return;
          pass.work += last - first;
          pass.points += MergePareto(dp.fronts[t], from, first, last, s, time,
                                     kept, scratch);
        });
    if (over != kInt64Max) {
      pass.dropped = std::min(pass.dropped, from.front().time + over);
    }
    dp.max_points = std::max(dp.max_points, pass.points);
    if (pass.points > max_points) {
      dp.status = Status::kTooLarge;
      dp.message = fmt::format(
          "more than max_states={} Pareto points (at lower set {} of {})",
          max_points, s, f.size());
      return PassEnd::kStopped;
    }
  }
  return PassEnd::kDone;
}

// Drops the points with time above `bound` (a suffix of each front, and
// nothing that a kept point extends) and returns how many points remain.
int64_t TruncateFronts(DpOutcome& dp, int64_t bound) {
  int64_t points = 0;
  for (std::vector<ParetoPoint>& front : dp.fronts) {
    front.erase(std::partition_point(
                    front.begin(), front.end(),
                    [&](const ParetoPoint& p) { return p.time <= bound; }),
                front.end());
    points += static_cast<int64_t>(front.size());
  }
  return points;
}

}  // namespace

DpOutcome StartLowerSetDp(const LowerSetFamily& f, int64_t budget,
                          const Deadline& deadline) {
  DpOutcome dp;
  dp.most_kept.assign(f.size(), -1);
  dp.most_kept[f.full_set()] = budget;
  TransitionWalker walker(f, budget, dp.most_kept);
  for (int32_t s = f.full_set() - 1; s >= 0; --s) {
    if (StopAtDeadline(deadline, s, f.size(), dp)) return dp;
    // A search for the largest cap: each one found raises the floor, and
    // with it cuts the walk short of every larger segment.
    int64_t floor = 0;
    walker.Walk(s, floor, kInt64Max,
                [&](int32_t, int64_t cap, int64_t, int64_t) {
                  dp.most_kept[s] = cap;
                  floor = cap + 1;
                });
  }
  return dp;
}

// Per set s, a lower bound on the extra time from s to G (kInt64Max when
// none is found): the least time over chains where every transition from
// a set L is allowed when it is with M(∂L) kept. Any strategy keeps at
// least M(∂L) at L (each node of ∂L is on the boundary of its own
// segment's set, which is inside L), so real strategies are among these
// chains and the bound holds; the fronts then drop a point as soon as its
// time plus this bound passes the pass's bound (A*). The walk from s
// stops where the extra time passes the best found (it only grows).
bool LeastTimeToFinish(const LowerSetFamily& f, int64_t budget,
                       const Deadline& deadline, DpOutcome& dp) {
  dp.least_rest.assign(f.size(), kInt64Max);
  dp.least_rest[f.full_set()] = 0;
  TransitionWalker walker(f, budget, dp.most_kept);
  for (int32_t s = f.full_set() - 1; s >= 0; --s) {
    if (StopAtDeadline(deadline, s, f.size(), dp)) return false;
    int64_t floor = f.boundary_mem(s);
    if (dp.most_kept[s] < floor) continue;  // no point at s can finish
    int64_t& best = dp.least_rest[s];
    int64_t max_time = kInt64Max;
    walker.Walk(s, floor, max_time,
                [&](int32_t t, int64_t, int64_t time, int64_t) {
                  if (dp.least_rest[t] == kInt64Max) return;
                  best = std::min(best, time + dp.least_rest[t]);
                  max_time = best - 1;
                });
  }
  return true;
}

bool FindLeastTime(const LowerSetFamily& f, int64_t budget, int64_t max_points,
                   const Deadline& deadline, DpOutcome& dp,
                   int64_t min_pass_work) {
  // A pass costs about one walk per set it reaches plus the points it
  // holds (at most one per time value up to the bound), so passes below
  // the least time are cheap and the one that reaches G costs most. A
  // pass that reaches G is exact: it dropped only points whose time plus
  // least_rest (a lower bound on the time left) passes its bound, none of
  // them on a faster strategy. One that does not proves the least time is
  // at least the least such sum it dropped (the first point dropped on an
  // optimal strategy has one), so the next bound is at least that. G is
  // reachable (most_kept), so some bound reaches it.
  //
  // The work can explode within a small range of bounds (on PSPNet at
  // mid budget, from 0.8 M at bound 503, the least time, to over 10 M at
  // 518): a pass that spends more than all the completed passes before it
  // is abandoned, the points above half its step are dropped, and it runs
  // again with half the step; after a pass completes, the step doubles up
  // to an eighth of the bound. (Allowing 2, 4 or 8 times as much work made
  // 12 PSPNet and GoogLeNet solves 5%, 25% and 50% slower in all.)
  if (!LeastTimeToFinish(f, budget, deadline, dp)) return false;
  dp.transitions = 0;
  FrontPass pass;
  int64_t spent = 0, step = 1;
  while (true) {
    pass.max_work = pass.bound - pass.done <= 1
                        ? kInt64Max
                        : std::max(min_pass_work, spent);
    const PassEnd end = RunFronts(f, budget, max_points, deadline, dp, pass);
    if (end == PassEnd::kStopped) return false;
    if (end == PassEnd::kOverWork) {
      step = std::max<int64_t>(1, (pass.bound - pass.done) / 2);
      pass.bound = pass.done + step;
      pass.points = TruncateFronts(dp, pass.bound);
      continue;
    }
    if (dp.reached()) return true;
    spent += pass.work;
    pass.done = pass.bound;
    step = std::min(2 * step, std::max<int64_t>(1, pass.bound / 8));
    pass.bound =
        std::max(pass.dropped,
                 pass.bound > kInt64Max / 2 ? kInt64Max : pass.bound + step);
  }
}

bool FindLeastKept(const LowerSetFamily& f, int64_t budget,
                   const Deadline& deadline, DpOutcome& dp) {
  // Dijkstra on (kept, time, set index): the labels only grow along a
  // chain, so a set's label is final when it is taken, and nothing taken
  // after G can change G's. At large DP budgets most sets hold more kept
  // memory than the answer and are never expanded (the authors' GoogLeNet
  // at 5.1 GB: G is taken second, where walking every set took 4.6 s).
  // A set's back-pointer is the least set index among its best
  // predecessors, all taken before it (their keys are no larger, and a
  // subset's index is smaller), as a walk over the sets in index order
  // gave: the same chain.
  const int32_t sets = f.size();
  dp.least_kept.assign(sets, {kInt64Max, kInt64Max, -1, -1});
  dp.least_kept[f.empty_set()] = {0, 0, -1, 0};
  using Key = std::tuple<int64_t, int64_t, int32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> queue;
  queue.push({0, 0, f.empty_set()});
  TransitionWalker walker(f, budget, dp.most_kept);
  int64_t taken = 0;
  while (!queue.empty()) {
    // Not a structured binding: C++17 lambdas (the walker's below) cannot
    // capture one, and clang refuses it.
    const int64_t kept = std::get<0>(queue.top());
    const int64_t time = std::get<1>(queue.top());
    const int32_t s = std::get<2>(queue.top());
    queue.pop();
    const ParetoPoint from = dp.least_kept[s];
    if (from.kept != kept || from.time != time) continue;  // stale
    if (s == f.full_set()) break;
    if ((++taken & 63) == 0 && deadline.Expired()) {
      dp.status = Status::kTimeout;
      dp.message = fmt::format("deadline reached after {} of {} lower sets",
                               taken, sets);
      return false;
    }
    int64_t floor = from.kept;
    walker.Walk(
        s, floor, kInt64Max,
        [&](int32_t t, int64_t, int64_t step_time, int64_t step_kept) {
          const ParetoPoint next{from.time + step_time,
                                 from.kept + step_kept, s, 0};
          ParetoPoint& label = dp.least_kept[t];
          if (LessKept(next, label)) {
            label = next;
            queue.push({next.kept, next.time, t});
          } else if (!LessKept(label, next) && s < label.from_set) {
            label.from_set = s;
          }
        });
  }
  return true;
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

std::vector<NodeId> CanonicalComputes(const LowerSetGraph& g,
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

// Why this bounds every chain's simulated peak. Take segment i, V = t \ s
// (s = L(i-1), t = L(i)), and a backward node c of V at its compute. Live
// then, each counted once:
//  - c's inputs other than forward values, its output and workspace;
//  - the forward values read by c or by a backward node after c in the
//    graph (all of them run after c, and all belong to t), except those a
//    backward node of s reads, left to the third item: `step`, the most
//    over c;
//  - the kept values that a backward node of s reads, which runs after c:
//    every boundary value of s is kept (it is in the boundary of its own
//    segment's set), so at least held(s) = M(∂s ∩ read(s)); and each
//    value that becomes kept, or becomes read by the backward of the set
//    while kept, stays so at every later segment, which the pass adds up as
//    it adds kept memory (Kept; the larger of the two is used).
// At the first backward node of V, likewise: every forward value a
// backward node of V reads and s's do not (`reads`), the kept values as
// above, and the gradients that backward nodes outside t computed for
// those of t (gradients_in(t)). A segment without backward nodes has no
// such moment. `reads` and `step` only grow with t. The pass is pass 0's
// (StartLowerSetDp) with these moments as the peak and this kept memory:
// per set, the most kept memory from which G is reached with every moment
// within the budget; none at ∅ means no chain fits. The bound leaves out
// the forward pass and the recomputed values nothing reads later, so it is
// far below what the answers reach on some graphs (the authors' GoogLeNet:
// 308.3 MB, its memory lower bound, where the DP's answers peak at 353.2
// MB at least) and above the graph's bound on others (ResNet-50 and
// ResNet-152 617 MB, DenseNet-161 944 MB, against 514, 514 and 462 MB).
CanonicalPeakBound::CanonicalPeakBound(const LowerSetGraph& g,
                                       const LowerSetFamily& f,
                                       const Graph& graph)
    : f_(f) {
  const int32_t n = g.size(), sets = f.size(), words = f.words();
  std::vector<uint64_t> reads_of(static_cast<size_t>(n) * words, 0);
  std::vector<int32_t> owner(graph.num_nodes(), -1);
  for (int32_t v = 0; v < n; ++v) {
    for (NodeId b : g.backward_of[v]) {
      owner[b] = v;
      for (NodeId u : graph.inputs(b)) {
        if (const int32_t x = g.local[u]; x >= 0) {
          reads_of[static_cast<size_t>(v) * words + (x >> 6)] |=
              uint64_t{1} << (x & 63);
        }
      }
    }
  }
  // (owner of the gradient, owner of its reader, the gradient), once per
  // gradient and reader's owner.
  struct Edge {
    int32_t from, to;
    NodeId value;
  };
  std::vector<Edge> edges;
  for (int32_t v = 0; v < n; ++v) {
    for (NodeId b : g.backward_of[v]) {
      for (NodeId u : graph.inputs(b)) {
        if (owner[u] >= 0 && owner[u] != v) edges.push_back({owner[u], v, u});
      }
    }
  }
  read_.assign(static_cast<size_t>(sets) * words, 0);
  backward_count_.assign(sets, 0);
  gradients_in_.assign(sets, 0);
  held_.assign(sets, 0);
  // Per backward node b: the compute bytes and non-forward inputs, and the
  // forward values that b and the backward nodes after it in the graph
  // read (P), bitsets built from the last backward node to the first.
  std::vector<int32_t> step_of(graph.num_nodes(), -1);
  step_offsets_.assign(n + 1, 0);
  for (int32_t v = 0; v < n; ++v) {
    for (NodeId b : g.backward_of[v]) {
      int64_t bytes = memory_model::ComputeBytes(graph, b);
      for (NodeId u : graph.inputs(b)) {
        if (g.local[u] < 0) bytes += memory_model::ResidentBytes(graph, u);
      }
      step_of[b] = static_cast<int32_t>(step_bytes_.size());
      step_bytes_.push_back(bytes);
    }
    step_offsets_[v + 1] = static_cast<int32_t>(step_bytes_.size());
  }
  step_reads_.assign(step_bytes_.size() * words, 0);
  const std::span<const NodeId> order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t k = step_of[*it];
    if (k < 0) continue;
    uint64_t* mine = step_reads_.data() + static_cast<size_t>(k) * words;
    for (NodeId u : graph.inputs(*it)) {
      if (const int32_t x = g.local[u]; x >= 0) {
        mine[x >> 6] |= uint64_t{1} << (x & 63);
      }
    }
    for (NodeId d : graph.consumers(*it)) {
      if (const int32_t l = step_of[d]; l >= 0) {
        const uint64_t* later =
            step_reads_.data() + static_cast<size_t>(l) * words;
        for (int32_t w = 0; w < words; ++w) mine[w] |= later[w];
      }
    }
  }
  std::vector<int32_t> counted(graph.num_nodes(), -1);
  for (int32_t s = 0; s < sets; ++s) {
    uint64_t* read = read_.data() + static_cast<size_t>(s) * words;
    const uint64_t* members = f.bits(s);
    for (int32_t w = 0; w < words; ++w) {
      for (uint64_t x = members[w]; x; x &= x - 1) {
        const int32_t v = w * 64 + std::countr_zero(x);
        backward_count_[s] += static_cast<int32_t>(g.backward_of[v].size());
        for (int32_t k = 0; k < words; ++k) {
          read[k] |= reads_of[static_cast<size_t>(v) * words + k];
        }
      }
    }
    for (const Edge& e : edges) {
      if (counted[e.value] != s && f.Contains(s, e.to) &&
          !f.Contains(s, e.from)) {
        counted[e.value] = s;
        gradients_in_[s] += memory_model::ResidentBytes(graph, e.value);
      }
    }
    for (int32_t v : f.boundary(s)) {
      if ((read[v >> 6] >> (v & 63)) & 1) held_[s] += f.node_mem(v);
    }
  }
}

CanonicalPeakBound::Moment CanonicalPeakBound::At(int32_t s, int32_t t,
                                                  int64_t budget) const {
  Moment m;
  if (backward_count_[t] == backward_count_[s]) return m;
  const int32_t words = f_.words();
  const uint64_t* rs = read(s);
  const uint64_t* rt = read(t);
  const uint64_t* st = f_.bits(t);
  const uint64_t* ss = f_.bits(s);
  int64_t reads = 0, step = 0;
  for (int32_t w = 0; w < words; ++w) {
    for (uint64_t x = rt[w] & ~rs[w]; x; x &= x - 1) {
      reads += f_.node_mem(w * 64 + std::countr_zero(x));
    }
    for (uint64_t x = st[w] & ~ss[w]; x; x &= x - 1) {
      const int32_t v = w * 64 + std::countr_zero(x);
      for (int32_t k = step_offsets_[v]; k < step_offsets_[v + 1]; ++k) {
        int64_t bytes = step_bytes_[k];
        const uint64_t* p = step_reads_.data() + static_cast<size_t>(k) * words;
        for (int32_t q = 0; q < words; ++q) {
          for (uint64_t y = p[q] & ~rs[q]; y; y &= y - 1) {
            bytes += f_.node_mem(q * 64 + std::countr_zero(y));
          }
        }
        step = std::max(step, bytes);
      }
    }
  }
  m.grows = std::max(reads, step) + held_[s];
  m.cap = held_[s] + reads + gradients_in_[t] > budget
              ? -1
              : std::min(budget - reads - gradients_in_[t], budget - step);
  return m;
}

int64_t CanonicalPeakBound::Kept(int32_t s, int32_t t) const {
  const uint64_t* rs = read(s);
  const uint64_t* rt = read(t);
  auto in = [](const uint64_t* b, int32_t v) {
    return ((b[v >> 6] >> (v & 63)) & 1) != 0;
  };
  int64_t kept = 0;
  for (int32_t v : f_.boundary(t)) {
    if (!f_.Contains(s, v) && in(rt, v)) kept += f_.node_mem(v);
  }
  for (int32_t v : f_.boundary(s)) {
    if (in(rt, v) && !in(rs, v)) kept += f_.node_mem(v);
  }
  return kept;
}

bool CanonicalPeakBound::MayFit(int64_t budget,
                                const Deadline& deadline) const {
  const int32_t full = f_.full_set();
  // Backward, one label per set: the most `later` kept memory at s from
  // which G is reached with every backward moment within the budget (-1:
  // none). `grows` only grows with t, so a walk stops where it alone
  // leaves no room.
  std::vector<int64_t> most(f_.size(), -1);
  most[full] = kInt64Max;
  LowerSetFamily::WalkScratch scratch;
  const int64_t no_limit = kInt64Max;
  for (int32_t s = full - 1; s >= 0; --s) {
    if ((s & 63) == 0 && deadline.Expired()) return true;
    int64_t best = -1;
    f_.ForEachSuperset(s, no_limit, scratch, [&](int32_t t) {
      const Moment m = At(s, t, budget);
      if (m.grows > budget || budget - m.grows + held_[s] <= best) {
        return false;
      }
      if (m.cap < 0 || most[t] < 0) return true;
      best = std::max(best, most[t] == kInt64Max
                                ? m.cap
                                : std::min(m.cap, most[t] - Kept(s, t)));
      return true;
    });
    most[s] = best;
  }
  return most[f_.empty_set()] >= 0;
}

namespace {

// One answer of the DP turned into a schedule and simulated.
struct Candidate {
  const char* strategy;
  ParetoPoint point;  // at G
  std::vector<int32_t> chain;
  Schedule schedule;
  SimulationResult simulation;
  int64_t dp_budget = 0;  // the budget the DP ran at
};

// Runs the DP at chosen DP budgets and keeps every answer, simulated.
// The DP's memory estimate is its paper's model, not the simulator's peak:
// it counts a whole segment and all its gradients at once (2 M(Vi)) where
// the canonical schedule, thinned by the liveness pass, frees values as the
// segment's backward goes, and it misses per-consumer gradients. So the
// estimate can reject strategies whose simulated peak fits (ResNet-18:
// estimate 11.0 MB, simulated 9.8 MB) and accept some that do not; `auto`
// treats the DP budget as the knob it is and searches it (Search below).
class DpRuns {
 public:
  DpRuns(const LowerSetAnalysis& a, const Graph& graph,
         const SolveRequest& request, int64_t max_states)
      : a_(a),
        graph_(graph),
        request_(request),
        max_states_(max_states),
        pool_(graph, request.budget_bytes, {.invalid_is_bug = true}) {}

  // Pass 0 only: whether some strategy is within `dp_budget` by the
  // estimate. False also when stopped (see stopped()).
  bool Reachable(int64_t dp_budget) {
    DpOutcome dp = StartLowerSetDp(a_.family, dp_budget, request_.deadline);
    return Check(dp) && dp.reachable();
  }

  // The time-centric (least extra time) or memory-centric (least kept
  // memory) answer at `dp_budget`, simulated and kept; null when no
  // strategy is within it or the run was stopped.
  const Candidate* Try(const char* strategy, int64_t dp_budget) {
    DpOutcome dp = StartLowerSetDp(a_.family, dp_budget, request_.deadline);
    if (!Check(dp) || !dp.reachable()) return nullptr;
    const int32_t full = a_.family.full_set();
    const bool time = std::string_view(strategy) == "time";
    if (time ? !FindLeastTime(a_.family, dp_budget, max_states_,
                              request_.deadline, dp)
             : !FindLeastKept(a_.family, dp_budget, request_.deadline, dp)) {
      Check(dp);
      return nullptr;
    }
    const ParetoPoint& point =
        time ? dp.fronts[full].front() : dp.least_kept[full];
    if (time) {
      transitions_ = dp.transitions, max_points_ = dp.max_points;
      if (dp_budget == request_.budget_bytes) least_extra_time_ = point.time;
    }
    std::vector<int32_t> chain = time ? TimeCentricChain(dp, a_.family)
                                      : MemoryCentricChain(dp, a_.family);
    Candidate c{strategy, point, std::move(chain), {}, {}, dp_budget};
    c.schedule = InsertFrees(
        graph_, CanonicalComputes(a_.graph, a_.family, c.chain, graph_));
    pool_.Offer(c.schedule, tried_.size());
    c.simulation = pool_.last();
    tried_.push_back(std::move(c));
    return &tried_.back();
  }

  bool Fits(const Candidate* c) const {
    return c && pool_.Fits(c->simulation);
  }

  // CanonicalPeakBound at the budget: false when no chain can fit. Then
  // proven_infeasible() holds and the search ends.
  bool ClassMayFit() {
    const CanonicalPeakBound bound(a_.graph, a_.family, graph_);
    proven_infeasible_ = !bound.MayFit(request_.budget_bytes,
                                       request_.deadline);
    return !proven_infeasible_;
  }
  bool proven_infeasible() const { return proven_infeasible_; }

  // The answer the candidate policy keeps (candidate_pool.h); null when the
  // DP gave none.
  const Candidate* Best() const {
    return pool_.empty() ? nullptr : &tried_[pool_.note().get<size_t>()];
  }

  // The first pass that the deadline or a size cap stopped.
  bool stopped() const { return stop_status_ != Status::kFeasible; }
  Status stop_status() const { return stop_status_; }
  const std::string& stop_message() const { return stop_message_; }
  int runs() const { return static_cast<int>(tried_.size()); }
  // The smallest DP budget at which the DP gave an answer.
  int64_t least_dp_budget() const {
    int64_t least = kInt64Max;
    for (const Candidate& c : tried_) least = std::min(least, c.dp_budget);
    return least;
  }
  int64_t transitions() const { return transitions_; }
  int64_t max_points() const { return max_points_; }
  // The DP's own optimum (least extra time before the liveness pass) at
  // the requested budget, when that run happened.
  std::optional<int64_t> least_extra_time() const { return least_extra_time_; }

 private:
  bool Check(const DpOutcome& dp) {
    if (dp.status == Status::kFeasible) return true;
    if (!stopped()) stop_status_ = dp.status, stop_message_ = dp.message;
    return false;
  }

  const LowerSetAnalysis& a_;
  const Graph& graph_;
  const SolveRequest& request_;
  const int64_t max_states_;
  std::deque<Candidate> tried_;  // stable addresses
  CandidatePool pool_;           // notes: indices into tried_
  Status stop_status_ = Status::kFeasible;
  std::string stop_message_;
  int64_t transitions_ = 0, max_points_ = 0;
  std::optional<int64_t> least_extra_time_;
  bool proven_infeasible_ = false;
};

// Bisection steps of each DP budget search below.
constexpr int kSearchSteps = 8;

// DP budgets of the memory-centric scan (Search) when nothing fits.
constexpr int kScanSteps = 12;

// The climb (Search) is skipped when the fitting schedule's overhead is
// below this: at high budgets one DP run can take seconds (PSPNet exported
// from PyTorch, 1,539 lower sets: 3-6 s), and eight more would buy at most
// this much.
constexpr double kClimbMinExtra = 0.01;

// A DP budget no strategy's estimate exceeds: kept memory, 2 M(Vi) and
// M(A) + M(B) are each at most M(G).
int64_t UnlimitedDpBudget(const LowerSetFamily& f) {
  return 4 * f.mem(f.full_set()) + 1;
}

// `auto`. Starts from the time-centric answer at the budget. If its
// simulated peak does not fit, asks again at up to 3 smaller DP budgets,
// each the last estimate minus the simulated overshoot, then memory-centric
// (the paper's fallback for strategies that do not fit after liveness).
// If no time-centric answer fits yet, tries memory-centric at the budget,
// and the smallest DP budget that has a strategy at all (bisection on
// pass 0), time- and memory-centric; if still nothing fits, memory-centric
// at 12 DP budgets from the least tried to the unlimited one.
// Then, from the largest DP budget whose time-centric answer fits, bisects
// toward the next larger one tried that does not (or the unlimited one): a
// larger DP budget means fewer recomputations.
void Search(DpRuns& runs, const LowerSetFamily& family, int64_t budget) {
  std::map<int64_t, bool> time_fits;  // DP budget -> simulated peak fits
  auto try_time = [&](int64_t dp_budget) {
    const Candidate* c = runs.Try("time", dp_budget);
    if (c) time_fits[dp_budget] = runs.Fits(c);
    return c;
  };
  auto largest_fitting = [&] {
    return std::find_if(time_fits.rbegin(), time_fits.rend(),
                        [](const auto& entry) { return entry.second; });
  };
  const Candidate* last = try_time(budget);
  for (int i = 0; i < 3 && last && !runs.Fits(last); ++i) {
    last = try_time(EstimatedPeak(family, last->chain) -
                    (last->simulation.peak_bytes - budget));
  }
  if (runs.stopped()) return;
  if (largest_fitting() == time_fits.rend()) {
    // What follows may take every DP run the search has (a bisection, then
    // the memory-centric scan up to the unlimited DP budget) and find
    // nothing that fits: first ask whether any chain can fit at all.
    if (!runs.ClassMayFit()) return;
    if (time_fits.contains(budget)) runs.Try("memory", budget);
    int64_t none = 0, some = time_fits.empty() ? UnlimitedDpBudget(family)
                                               : time_fits.begin()->first;
    some = BisectKnob(
               none, some,
               [&](int64_t dp_budget) { return !runs.Reachable(dp_budget); },
               {}, 2 * kSearchSteps)
               .hi;
    if (runs.stopped()) return;
    if (!time_fits.contains(some)) {
      try_time(some);
      runs.Try("memory", some);
    }
  }
  if (runs.Best() && !runs.Fits(runs.Best()) && !runs.stopped()) {
    // Memory-centric answers at DP budgets from the least with a strategy
    // up to the unlimited one, geometrically: coarser segments whose
    // estimate is far above their simulated peak (the authors' VGG19:
    // memory-centric at 3.0 GB simulates at 1.34 GB, time-centric at its
    // least DP budget 2.0 GB).
    const double least = static_cast<double>(runs.least_dp_budget());
    const double ratio = UnlimitedDpBudget(family) / least;
    for (int step = 1; step <= kScanSteps && !runs.stopped(); ++step) {
      runs.Try("memory",
               static_cast<int64_t>(
                   least * std::pow(ratio, double(step) / kScanSteps)));
    }
  }
  auto fits = largest_fitting();
  const Candidate* best = runs.Best();
  if (fits == time_fits.rend() || runs.stopped() ||
      best->simulation.overhead < 1 + kClimbMinExtra) {
    return;
  }
  int64_t low = fits->first, high = UnlimitedDpBudget(family);
  if (auto above = time_fits.upper_bound(low); above != time_fits.end()) {
    high = above->first;
  } else if (runs.Fits(try_time(high))) {
    return;
  }
  BisectKnob(
      low, high,
      [&](int64_t dp_budget) { return runs.Fits(try_time(dp_budget)); },
      [&] { return !runs.stopped(); }, kSearchSteps);
}

}  // namespace

const Options<DpOptions>& DpOptionsOf(LowerSetKind kind) {
  auto options = [](bool with_max_lower_sets) {
    std::vector<OptionField<DpOptions>> fields = {ChoiceOption(
        &DpOptions::strategy, "strategy", DpStrategy::kAuto,
        {{"auto", DpStrategy::kAuto},
         {"time", DpStrategy::kTime},
         {"memory", DpStrategy::kMemory}},
        "time (least extra time), memory (least kept memory), both at the "
        "budget by the DP's memory estimate, or auto: every value kept "
        "where that fits, else the cheapest simulated schedule that fits "
        "among answers at searched DP budgets (larger ones where the "
        "estimate overstates the simulated peak, smaller ones and then "
        "memory-centric where it understates it)")};
    if (with_max_lower_sets) {
      fields.push_back(IntOption(&DpOptions::max_lower_sets, "max_lower_sets",
                                 2000000,
                                 "refuse (too_large) graphs with more lower "
                                 "sets",
                                 1));
    }
    fields.push_back(IntOption(&DpOptions::max_states, "max_states", 50000000,
                               "refuse (too_large) when the DP holds more "
                               "Pareto points",
                               1));
    return Options<DpOptions>(std::move(fields));
  };
  static const Options<DpOptions> exact = options(true);
  static const Options<DpOptions> approx = options(false);
  return kind == LowerSetKind::kAll ? exact : approx;
}

std::shared_ptr<const LowerSetLookup> LowerSetDp::PrepareGraph(
    const Graph& graph, const SolveRequest& request) {
  const int64_t max_sets =
      kind_ == LowerSetKind::kAll
          ? DpOptionsOf(kind_).Read(request.params).max_lower_sets
          : kInt64Max;
  auto lookup = std::make_shared<LowerSetLookup>(
      AnalyzeLowerSets(graph, kind_, max_sets, request.deadline));
  if (lookup->status == Status::kTimeout) return nullptr;
  return lookup;
}

AlgorithmOutput LowerSetDp::RunPrepared(const Graph& graph,
                                        const SolveRequest& request,
                                        const LowerSetLookup* lookup) {
  if (!lookup) {
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout, "deadline reached while enumerating lower sets");
  }
  if (!lookup->analysis) {
    return AlgorithmOutput::NoSchedule(lookup->status, lookup->message);
  }
  const LowerSetAnalysis& a = *lookup->analysis;
  const int64_t budget = request.budget_bytes;
  nlohmann::json extra = {{"lower_sets", a.family.size()},
                          {"forward_nodes", a.graph.size()}};
  const DpOptions options = DpOptionsOf(kind_).Read(request.params);
  const DpStrategy strategy = options.strategy;
  if (strategy == DpStrategy::kAuto) {
    // Every value kept until its gradient is the DP's zero-extra-time
    // strategy (the chain of all lower sets), which the estimate can
    // price above the budget although its simulated peak fits, and which
    // `dp_approx`'s closures may not reach at all: where it fits, nothing
    // is cheaper, and no DP run is needed.
    Schedule keep_all = InsertFrees(graph, NoRematOrder(graph));
    const int64_t peak = Simulate(graph, keep_all).peak_bytes;
    if (peak <= budget) {
      extra["strategy"] = "keep_all";
      extra["dp_runs"] = 0;
      AlgorithmOutput out = AlgorithmOutput::Found(
          std::move(keep_all),
          fmt::format("every value kept (no recomputation): its simulated "
                      "peak {} bytes fits, and no strategy is cheaper",
                      peak));
      out.extra = std::move(extra);
      return out;
    }
  }
  if (strategy == DpStrategy::kAuto) {
    // No schedule of any kind fits below the memory lower bound, so no DP
    // budget can give one that does: the search would spend all its DP
    // runs, the memory-centric scan included, to say so.
    const int64_t lower_bound = MemoryLowerBound(graph);
    if (budget < lower_bound) {
      extra["dp_runs"] = 0;
      AlgorithmOutput out = AlgorithmOutput::NoSchedule(
          Status::kInfeasible,
          fmt::format("the budget is below the graph's memory lower bound "
                      "of {} bytes, which every schedule needs",
                      lower_bound));
      out.extra = std::move(extra);
      return out;
    }
  }
  DpRuns runs(a, graph, request, options.max_states);
  if (strategy == DpStrategy::kAuto) {
    Search(runs, a.family, budget);
  } else {
    runs.Try(strategy == DpStrategy::kTime ? "time" : "memory", budget);
  }
  const Candidate* chosen = runs.Best();
  if (runs.proven_infeasible()) extra["class_bound_fits"] = false;
  if (!chosen) {
    Status status = runs.stop_status();
    std::string message = runs.stop_message();
    if (runs.proven_infeasible()) {
      extra["dp_runs"] = runs.runs();
      status = Status::kInfeasible;
      message = fmt::format(
          "no strategy over {} lower sets fits: a lower bound of every "
          "strategy's simulated peak (its backward moments) is above the "
          "budget",
          a.family.size());
    } else if (!runs.stopped()) {
      status = Status::kInfeasible;
      message = fmt::format(
          "no strategy over {} lower sets fits the budget by the DP's "
          "memory estimate",
          a.family.size());
    }
    AlgorithmOutput out = AlgorithmOutput::NoSchedule(status, message);
    out.extra = std::move(extra);
    return out;
  }
  const int64_t estimate = EstimatedPeak(a.family, chosen->chain);
  extra["strategy"] = chosen->strategy;
  extra["segments"] = chosen->chain.size() - 1;
  extra["dp_extra_time"] = chosen->point.time;
  extra["dp_kept_bytes"] = chosen->point.kept;
  extra["dp_memory_estimate_bytes"] = estimate;
  extra["dp_budget_bytes"] = chosen->dp_budget;
  extra["dp_runs"] = runs.runs();
  extra["transitions"] = runs.transitions();
  extra["max_pareto_points"] = runs.max_points();
  if (runs.least_extra_time()) {
    extra["dp_least_extra_time"] = *runs.least_extra_time();
  }
  std::string message = fmt::format(
      "{}-centric over {} lower sets: {} segments, DP extra time {}, DP "
      "memory estimate {} bytes at a DP budget of {} bytes, best of {} DP "
      "answers (reported figures are simulated)",
      chosen->strategy, a.family.size(), chosen->chain.size() - 1,
      chosen->point.time, estimate, chosen->dp_budget, runs.runs());
  if (runs.proven_infeasible()) {
    message += "; none fits: a lower bound of every strategy's simulated "
               "peak (its backward moments) is above the budget";
  } else if (!runs.Fits(chosen)) {
    message += fmt::format(
        "; none fits: the DP's memory estimate admits no strategy below a "
        "DP budget of {} bytes, and its answers' least simulated peak is {} "
        "bytes",
        runs.least_dp_budget(), chosen->simulation.peak_bytes);
  }
  AlgorithmOutput out =
      AlgorithmOutput::Found(chosen->schedule, std::move(message));
  // A search the deadline cut short still returns its best answer.
  if (runs.stopped() && runs.stop_status() == Status::kTimeout) {
    out.status = Status::kTimeout;
  }
  out.extra = std::move(extra);
  return out;
}

}  // namespace remat
