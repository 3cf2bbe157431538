// exact_search — the true optimum of the model (docs/model.md) on small
// graphs.
//
// docs/algorithms.md, "exact_search": A* (Hart, Nilsson & Raphael 1968) over
// states (live set L, targets done D), from (empty, none) to (empty, all).
// A move computes one node c whose inputs are live, preceded by the frees
// that make room for it; its cost is cost(c). The heuristic is the cost of
// every node reachable backwards from the undone targets through nodes that
// are not live: each of them must still be computed at least once. It is
// consistent (computing c lowers it by at most cost(c), a free never lowers
// it), so the first time the goal is popped its cost is optimal.
//
// The search space is cut without losing the optimum:
// - A value from which no undone target can be reached is freed at once
//   (it is never read again; holding it only costs memory).
// - Frees only precede computes, and only minimal sets of them: any
//   schedule can be rewritten, without raising its cost or its peak above
//   the budget, so that every free is as late as the budget allows; then
//   the values freed before a compute c are a set F such that c fits after
//   freeing F but not if any one value of F were kept.
// - A state is dominated by a known state with one more live value or one
//   more target done at no higher cost (from there, freeing that value
//   leads back and a done target is never an obligation).
// - The cheapest schedule of noremat and checkpoint_last that fits is the
//   incumbent: states whose f = g + h reaches its cost are dropped, and it
//   is the answer when the search ends without beating it.
// States are pairs of 64-bit masks over the needed nodes, so graphs with
// more than `max_nodes` (at most 64) needed nodes are refused (too_large).
// At the deadline the incumbent is returned with status timeout.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "algorithms/common/warm_start.h"
#include "model/memory_model.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

using Mask = uint64_t;

Mask Bit(int i) { return Mask{1} << i; }

// The needed nodes, renumbered 0..m-1 in topological order, with masks.
struct Problem {
  const Graph* graph = nullptr;
  std::vector<NodeId> node;  // index -> graph node
  // The memory model's resident and compute bytes (model/memory_model.h):
  // what freeing a value releases, and what computing it adds.
  std::vector<int64_t> mem, need, cost;
  std::vector<Mask> inputs;
  std::vector<Mask> reaches;     // targets reachable from i (i included)
  std::vector<Mask> target_bit;  // Bit(i) for targets, else 0
  Mask all_targets = 0;

  int size() const { return static_cast<int>(node.size()); }
  // The device memory with the values of `live` resident.
  memory_model::Ledger Holding(Mask live) const {
    memory_model::Ledger ledger(*graph);
    for (Mask m = live; m; m &= m - 1) {
      ledger.Resident(node[std::countr_zero(m)]);
    }
    return ledger;
  }
};

Problem MakeProblem(const Graph& graph) {
  Problem p;
  p.graph = &graph;
  const std::vector<NodeId> order = NoRematOrder(graph);
  std::vector<int> index(graph.num_nodes(), -1);
  for (NodeId v : order) {
    index[v] = p.size();
    p.node.push_back(v);
    p.mem.push_back(memory_model::ResidentBytes(graph, v));
    p.need.push_back(memory_model::ComputeBytes(graph, v));
    p.cost.push_back(graph.cost(v));
  }
  const int m = p.size();
  if (m > 64) return p;
  p.inputs.assign(m, 0);
  p.reaches.assign(m, 0);
  p.target_bit.assign(m, 0);
  for (int i = 0; i < m; ++i) {
    for (NodeId u : graph.inputs(p.node[i])) p.inputs[i] |= Bit(index[u]);
    if (graph.is_target(p.node[i])) {
      p.target_bit[i] = Bit(i);
      p.all_targets |= Bit(i);
    }
  }
  // Reverse topological order: every consumer is done before its inputs.
  for (int i = m - 1; i >= 0; --i) {
    p.reaches[i] |= p.target_bit[i];
    for (Mask in = p.inputs[i]; in; in &= in - 1) {
      p.reaches[std::countr_zero(in)] |= p.reaches[i];
    }
  }
  return p;
}

struct StateKey {
  Mask live, done;
  bool operator==(const StateKey&) const = default;
};
struct StateKeyHash {
  size_t operator()(const StateKey& k) const {
    return std::hash<Mask>()(k.live * 0x9E3779B97F4A7C15ULL ^ k.done);
  }
};

// One reached state and the move that reached it most cheaply.
struct Entry {
  StateKey key;
  int64_t g;
  int32_t parent;
  int8_t computed;     // -1 for the start state
  Mask freed_before;   // freed to make room for `computed`
  Mask dropped_after;  // no longer needed once `computed` is done
};

class Search {
 public:
  Search(const Problem& p, int64_t budget, int64_t upper_bound)
      : p_(p), budget_(budget), upper_bound_(upper_bound) {}

  // Returns the goal entry's index, or -1 when no schedule cheaper than
  // the upper bound exists. Sets `timed_out` if stopped early.
  int32_t Run(const Deadline& deadline, int64_t max_states, bool& timed_out) {
    timed_out = false;
    Push({{0, 0}, 0, -1, -1, 0, 0});
    while (!open_.empty()) {
      const auto [f, neg_g, at] = open_.top();
      open_.pop();
      if (-neg_g != entries_[at].g) continue;  // a cheaper path replaced it
      open_bound_ = f;
      const Entry e = entries_[at];
      if (e.key.done == p_.all_targets) return at;
      if ((++expanded_ & 255) == 0 &&
          (deadline.Expired() ||
           static_cast<int64_t>(entries_.size()) > max_states)) {
        timed_out = true;
        return -1;
      }
      if (Dominated(e)) continue;
      Expand(at, e);
    }
    return -1;
  }

  const Entry& entry(int32_t i) const { return entries_[i]; }
  int64_t expanded() const { return expanded_; }
  int64_t reached() const { return static_cast<int64_t>(entries_.size()); }
  // Every schedule cheaper than the incumbent costs at least this much.
  int64_t open_bound() const { return open_bound_; }

 private:
  int64_t Heuristic(Mask live, Mask done) const {
    Mask seen = 0;
    Mask stack = p_.all_targets & ~done;
    int64_t sum = 0;
    while (stack) {
      const int v = std::countr_zero(stack);
      stack &= stack - 1;
      if (seen & Bit(v)) continue;
      seen |= Bit(v);
      sum += p_.cost[v];
      stack |= p_.inputs[v] & ~live & ~seen;
    }
    return sum;
  }

  void Push(Entry e) {
    const int64_t f = e.g + Heuristic(e.key.live, e.key.done);
    if (f >= upper_bound_) return;
    auto [it, inserted] =
        index_.try_emplace(e.key, static_cast<int32_t>(entries_.size()));
    if (inserted) {
      entries_.push_back(e);
    } else if (e.g < entries_[it->second].g) {
      entries_[it->second] = e;
    } else {
      return;
    }
    open_.push({f, -e.g, it->second});
  }

  bool KnownAtMost(Mask live, Mask done, int64_t g) const {
    auto it = index_.find({live, done});
    return it != index_.end() && entries_[it->second].g <= g;
  }

  bool Dominated(const Entry& e) const {
    const Mask undone = p_.all_targets & ~e.key.done;
    for (int u = 0; u < p_.size(); ++u) {
      const Mask b = Bit(u);
      if (!(e.key.live & b) && (p_.reaches[u] & undone) &&
          KnownAtMost(e.key.live | b, e.key.done, e.g)) {
        return true;
      }
      if ((undone & b) && KnownAtMost(e.key.live, e.key.done | b, e.g)) {
        return true;
      }
    }
    return false;
  }

  void Expand(int32_t at, const Entry& e) {
    const Mask live = e.key.live;
    const Mask undone = p_.all_targets & ~e.key.done;
    const memory_model::Ledger ledger = p_.Holding(live);
    for (int c = 0; c < p_.size(); ++c) {
      if ((live & Bit(c)) || !(p_.reaches[c] & undone) ||
          (p_.inputs[c] & ~live) || p_.need[c] > budget_) {
        continue;
      }
      const int64_t excess = ledger.AtCompute(p_.node[c]) - budget_;
      candidates_.clear();
      for (Mask m = live & ~p_.inputs[c]; m; m &= m - 1) {
        const int u = std::countr_zero(m);
        if (p_.mem[u] > 0) candidates_.push_back(u);
      }
      std::sort(candidates_.begin(), candidates_.end(),
                [&](int a, int b) { return p_.mem[a] > p_.mem[b]; });
      suffix_.assign(candidates_.size() + 1, 0);
      for (int i = static_cast<int>(candidates_.size()) - 1; i >= 0; --i) {
        suffix_[i] = suffix_[i + 1] + p_.mem[candidates_[i]];
      }
      EnumerateFrees(at, e, c, excess, 0, 0, 0);
    }
  }

  // Calls Emit for every minimal set of candidates_[pos..] (added to
  // `chosen`) whose memory reaches `excess`. Candidates are sorted by
  // decreasing memory, so the last one chosen is the smallest.
  void EnumerateFrees(int32_t at, const Entry& e, int c, int64_t excess,
                      size_t pos, Mask chosen, int64_t chosen_mem,
                      int64_t smallest = 0) {
    if (chosen_mem >= excess) {
      if (chosen == 0 || chosen_mem - smallest < excess) {
        Emit(at, e, c, chosen);
      }
      return;
    }
    if (chosen_mem + suffix_[pos] < excess) return;
    const int u = candidates_[pos];
    EnumerateFrees(at, e, c, excess, pos + 1, chosen | Bit(u),
                   chosen_mem + p_.mem[u], p_.mem[u]);
    EnumerateFrees(at, e, c, excess, pos + 1, chosen, chosen_mem, smallest);
  }

  void Emit(int32_t at, const Entry& e, int c, Mask freed) {
    const Mask done = e.key.done | p_.target_bit[c];
    const Mask undone = p_.all_targets & ~done;
    Mask live = (e.key.live & ~freed) | Bit(c);
    Mask dropped = 0;
    for (Mask m = live; m; m &= m - 1) {
      const int u = std::countr_zero(m);
      if (!(p_.reaches[u] & undone)) dropped |= Bit(u);
    }
    live &= ~dropped;
    Push({{live, done},
          e.g + p_.cost[c],
          at,
          static_cast<int8_t>(c),
          freed,
          dropped});
  }

  const Problem& p_;
  const int64_t budget_;
  const int64_t upper_bound_;
  std::vector<Entry> entries_;
  std::unordered_map<StateKey, int32_t, StateKeyHash> index_;
  // (f, -g, entry): smallest f first, deeper states first among equals.
  using QueueItem = std::tuple<int64_t, int64_t, int32_t>;
  std::priority_queue<QueueItem, std::vector<QueueItem>,
                      std::greater<QueueItem>>
      open_;
  int64_t expanded_ = 0;
  int64_t open_bound_ = 0;
  std::vector<int> candidates_;
  std::vector<int64_t> suffix_;
};

Schedule ScheduleOf(const Problem& p, const Search& search, int32_t goal) {
  std::vector<const Entry*> path;
  for (int32_t i = goal; search.entry(i).parent >= 0;
       i = search.entry(i).parent) {
    path.push_back(&search.entry(i));
  }
  std::reverse(path.begin(), path.end());
  Schedule schedule;
  auto free_all = [&](Mask m) {
    for (; m; m &= m - 1) {
      schedule.push_back(Event::Free(p.node[std::countr_zero(m)]));
    }
  };
  for (const Entry* e : path) {
    free_all(e->freed_before);
    schedule.push_back(Event::Compute(p.node[e->computed]));
    free_all(e->dropped_after);
  }
  return schedule;
}

struct ExactSearchOptions {
  int64_t max_nodes;
  int64_t max_states;
  std::vector<std::string> warm_start;
};

const Options<ExactSearchOptions> kOptions(
    IntOption(&ExactSearchOptions::max_nodes, "max_nodes", 40,
              "refuse (too_large) graphs with more needed nodes than this "
              "(at most 64)",
              0),
    IntOption(&ExactSearchOptions::max_states, "max_states", 20000000,
              "stop like at the time limit after reaching this many states "
              "(bounds memory use)",
              1),
    // The two schedules at the ends of every curve: an upper bound on the
    // cost at any budget they fit.
    ListOption(&ExactSearchOptions::warm_start,
               WarmStartParam("exact_search", "checkpoint_last+noremat")));

class ExactSearch : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const ExactSearchOptions options = kOptions.Read(request.params);
    const int64_t max_nodes = options.max_nodes;
    const Problem p = MakeProblem(graph);
    if (p.size() > max_nodes || p.size() > 64) {
      return AlgorithmOutput::NoSchedule(
          Status::kTooLarge,
          fmt::format("{} needed nodes; exact_search handles at most "
                      "max_nodes={} (and never more than 64)",
                      p.size(), max_nodes));
    }
    const int64_t budget = request.budget_bytes;
    if (budget < MemoryLowerBound(graph)) {
      return AlgorithmOutput::NoSchedule(
          Status::kInfeasible, "budget is below the memory lower bound");
    }
    std::optional<Incumbent> incumbent = BestWarmStart(
        graph, request, options.warm_start, request.deadline.SecondsLeft());
    const int64_t upper_bound =
        incumbent ? incumbent->cost : std::numeric_limits<int64_t>::max();
    Search search(p, budget, upper_bound);
    bool timed_out = false;
    const int32_t goal =
        search.Run(request.deadline, options.max_states, timed_out);
    const std::string states = fmt::format("{} states expanded, {} reached",
                                           search.expanded(), search.reached());
    if (timed_out) {
      const std::string why = fmt::format(
          "{} before proving optimality; {}; every schedule cheaper than "
          "the one returned costs at least {}",
          request.deadline.Expired() ? "time limit" : "max_states reached",
          states, search.open_bound());
      if (!incumbent) return AlgorithmOutput::NoSchedule(Status::kTimeout, why);
      AlgorithmOutput out = AlgorithmOutput::Found(
          std::move(incumbent->schedule),
          fmt::format("{} (best so far from {})", why, incumbent->algorithm));
      out.status = Status::kTimeout;
      out.extra["states_expanded"] = search.expanded();
      out.extra["warm_start"] = WarmStartText(options.warm_start);
      return out;
    }
    AlgorithmOutput out;
    int64_t optimum = 0;
    if (goal >= 0) {
      optimum = search.entry(goal).g;
      out = AlgorithmOutput::Found(ScheduleOf(p, search, goal),
                                   "optimal; " + states);
    } else if (incumbent) {
      optimum = incumbent->cost;
      out = AlgorithmOutput::Found(
          std::move(incumbent->schedule),
          fmt::format("optimal ({}'s schedule: nothing cheaper exists); {}",
                      incumbent->algorithm, states));
    } else {
      return AlgorithmOutput::NoSchedule(
          Status::kInfeasible,
          "proven: no schedule fits the budget; " + states);
    }
    out.optimal = true;
    out.lower_bound_cost = optimum;
    out.extra["states_expanded"] = search.expanded();
    out.extra["warm_start"] = WarmStartText(options.warm_start);
    return out;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "exact_search",
    .description = "Optimal schedule by A* over (live set, targets done), "
                   "for small graphs",
    .citation = "A* (Hart, Nilsson & Raphael 1968) on the rematbench model "
                "(docs/algorithms.md, exact_search)",
    .exact = true,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<ExactSearch>(); },
});

}  // namespace
}  // namespace remat
