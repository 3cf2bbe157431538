// twremat — Kumar, Sahin, Lin, Jain and Cornea, "Efficient
// Rematerialization for Deep Networks", NeurIPS 2019.
//
// Idea: a tree decomposition of low width w gives small balanced separators.
// To produce a set C of values, compute the nodes of the top separator that
// C depends on one at a time in topological order, recursing into the parts
// of the graph on either side only for the inputs each separator node needs,
// and finally recurse once more for the values of C inside the parts. Only
// the separators on the current recursion path are ever kept, so memory
// grows with w times the depth of the separator hierarchy (logarithmic in
// n), while a node is recomputed at most (w + 2)^depth times: a polynomial
// schedule length for bounded width. docs/algorithms.md ("twremat") gives
// the recursion this file follows step by step:
//   1. tree decomposition by greedy elimination (tree_decomposition.h);
//   2. centroid separator hierarchy (separator_hierarchy.h);
//   3. the recursion Compute(N, C) below;
//   4. knobs: max_depth, the memory-limit heuristic of the authors'
//      rebuttal, and a search over both for the cheapest schedule within a
//      budget;
//   5. the post-pass: drop computes nobody reads, then the shared liveness
//      pass puts every free as early as legal (targets included).
#include "algorithms/twremat/twremat.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "algorithms/common/candidate_pool.h"
#include "algorithms/twremat/tree_decomposition.h"
#include "model/liveness.h"
#include "model/memory_model.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

// Compute(N, C) of docs/algorithms.md ("twremat"). Emits computes only;
// frees come from the post-pass. It tracks the recursion's own live set
// (with the frees the recursion would make) because the memory-limit
// heuristic needs to know what is live when it considers computing a part
// directly. That live set is a superset of what the post-passed schedule
// keeps, so the heuristic's estimate is an upper bound.
class Recursion {
 public:
  Recursion(const Graph& graph, const SeparatorHierarchy& hierarchy,
            const TwRematOptions& options, const Deadline& deadline)
      : graph_(graph),
        hier_(hierarchy),
        options_(options),
        deadline_(deadline),
        mark_(graph.num_nodes(), 0),
        pos_(graph.num_nodes(), 0),
        live_(graph.num_nodes(), 0),
        ledger_(graph),
        levels_(hierarchy.height() + 1) {}

  // Returns kFeasible, kTooLarge or kTimeout.
  Status Run(std::vector<NodeId>* computes) {
    computes_ = computes;
    const std::span<const NodeId> targets = graph_.targets();
    if (hier_.num_nodes() > 0 && !targets.empty()) Compute(0, targets, 0);
    return status_;
  }

 private:
  // Scratch of one recursion level; a child's C is a span into its parent's
  // `group`, so each level needs its own.
  struct Level {
    std::vector<NodeId> c_sorted, here, group;
    std::vector<std::pair<int32_t, NodeId>> by_child;
  };

  void Compute(int32_t h, std::span<const NodeId> c, int32_t depth) {
    if (status_ != Status::kFeasible) return;
    Level& level = levels_[depth];
    level.c_sorted.assign(c.begin(), c.end());
    std::sort(level.c_sorted.begin(), level.c_sorted.end());
    const int64_t stamp = CollectNeed(h, c);
    bool direct = hier_.children(h).empty() || depth == options_.max_depth;
    if (!direct && options_.memory_limit > 0) {
      SortNeed();
      direct = DirectPeak(level.c_sorted) <= options_.memory_limit;
    }
    if (direct) {
      SortNeed();
      ComputeDirectly(level.c_sorted);
      return;
    }
    level.here.clear();
    for (NodeId v : hier_.bag(h)) {
      if (mark_[v] == stamp) level.here.push_back(v);
    }
    for (NodeId v : level.here) {
      level.by_child.clear();
      for (NodeId u : graph_.inputs(v)) {
        if (hier_.Contains(h, u) && hier_.owner(u) != h) {
          level.by_child.push_back({hier_.ChildContaining(h, u), u});
        }
      }
      RecurseIntoChildren(depth);
      Emit(v);
      for (const auto& [child, u] : level.by_child) Release(u);
    }
    level.by_child.clear();
    for (NodeId x : c) {
      if (hier_.owner(x) != h) {
        level.by_child.push_back({hier_.ChildContaining(h, x), x});
      }
    }
    RecurseIntoChildren(depth);
    for (NodeId v : level.here) {
      if (!std::binary_search(level.c_sorted.begin(), level.c_sorted.end(),
                              v)) {
        Release(v);
      }
    }
  }

  // Calls Compute(K, group) for each child K named in the level's by_child.
  void RecurseIntoChildren(int32_t depth) {
    Level& level = levels_[depth];
    std::sort(level.by_child.begin(), level.by_child.end());
    for (size_t i = 0; i < level.by_child.size();) {
      const int32_t child = level.by_child[i].first;
      level.group.clear();
      for (; i < level.by_child.size() && level.by_child[i].first == child;
           ++i) {
        level.group.push_back(level.by_child[i].second);
      }
      Compute(child, level.group, depth + 1);
    }
  }

  // need = C and every node of all(h) that reaches C inside all(h); marks it
  // with a fresh stamp and lists it in need_. Inputs outside all(h) are live
  // already (they belong to separators on the recursion path).
  int64_t CollectNeed(int32_t h, std::span<const NodeId> c) {
    const int64_t stamp = ++stamp_;
    need_.clear();
    for (NodeId x : c) {
      if (mark_[x] != stamp) {
        mark_[x] = stamp;
        need_.push_back(x);
      }
    }
    for (size_t i = 0; i < need_.size(); ++i) {
      for (NodeId u : graph_.inputs(need_[i])) {
        if (mark_[u] != stamp && hier_.Contains(h, u)) {
          mark_[u] = stamp;
          need_.push_back(u);
        }
      }
    }
    need_sorted_ = false;
    return stamp;
  }

  // Puts need_ in topological order, once per call (only direct
  // computation and its estimate need the order).
  void SortNeed() {
    if (need_sorted_) return;
    std::sort(need_.begin(), need_.end(), [&](NodeId a, NodeId b) {
      return graph_.topo_rank(a) < graph_.topo_rank(b);
    });
    need_sorted_ = true;
  }

  // Peak of computing need_ directly (in order, each value freed after its
  // last reader in need_, C kept) on top of what is live now.
  int64_t DirectPeak(const std::vector<NodeId>& c_sorted) {
    const auto m = static_cast<int32_t>(need_.size());
    last_read_.resize(m);
    for (int32_t i = 0; i < m; ++i) {
      pos_[need_[i]] = i;
      last_read_[i] =
          std::binary_search(c_sorted.begin(), c_sorted.end(), need_[i]) ? m
                                                                         : i;
    }
    const int64_t stamp = stamp_;
    for (int32_t i = 0; i < m; ++i) {
      for (NodeId u : graph_.inputs(need_[i])) {
        if (mark_[u] == stamp) {
          last_read_[pos_[u]] = std::max(last_read_[pos_[u]], i);
        }
      }
    }
    released_after_.assign(m + 1, 0);
    for (int32_t i = 0; i < m; ++i) {
      released_after_[last_read_[i]] +=
          memory_model::ResidentBytes(graph_, need_[i]);
    }
    int64_t now = ledger_.live(), peak = now;
    for (int32_t i = 0; i < m; ++i) {
      const NodeId v = need_[i];
      peak = std::max(peak, memory_model::MemoryAtCompute(graph_, now, v));
      now += memory_model::ResidentBytes(graph_, v) - released_after_[i];
    }
    return peak;
  }

  void ComputeDirectly(const std::vector<NodeId>& c_sorted) {
    for (NodeId v : need_) Emit(v);
    for (NodeId v : need_) {
      if (!std::binary_search(c_sorted.begin(), c_sorted.end(), v)) {
        Release(v);
      }
    }
  }

  void Emit(NodeId v) {
    if (status_ != Status::kFeasible) return;
    computes_->push_back(v);
    if (!live_[v]) {
      live_[v] = 1;
      ledger_.Compute(v);
    }
    const auto count = static_cast<int64_t>(computes_->size());
    // Every compute gets exactly one free in the final schedule.
    if (2 * count > options_.max_events) status_ = Status::kTooLarge;
    if ((count & 0xffff) == 0 && deadline_.Expired()) {
      status_ = Status::kTimeout;
    }
  }

  void Release(NodeId v) {
    if (live_[v]) {
      live_[v] = 0;
      ledger_.Free(v);
    }
  }

  const Graph& graph_;
  const SeparatorHierarchy& hier_;
  const TwRematOptions& options_;
  const Deadline& deadline_;
  std::vector<int64_t> mark_;
  int64_t stamp_ = 0;
  std::vector<NodeId> need_;
  bool need_sorted_ = false;
  std::vector<int32_t> pos_, last_read_;
  std::vector<int64_t> released_after_;
  std::vector<uint8_t> live_;
  memory_model::Ledger ledger_;  // the memory of the recursion's live set
  std::vector<Level> levels_;
  std::vector<NodeId>* computes_ = nullptr;
  Status status_ = Status::kFeasible;
};

// Post-pass, first half: drop every computed instance that nothing reads
// before the value is computed again (or the schedule ends), unless it is
// the last instance of a target. Walking backwards, a dropped compute does
// not count as a read of its inputs, so chains of useless computes go too.
void DropUnreadComputes(const Graph& graph, std::vector<NodeId>* computes) {
  std::vector<uint8_t> read_later(graph.num_nodes(), 0);
  std::vector<uint8_t> target_kept(graph.num_nodes(), 0);
  std::vector<uint8_t> keep(computes->size(), 0);
  for (size_t i = computes->size(); i-- > 0;) {
    const NodeId v = (*computes)[i];
    if (read_later[v] || (graph.is_target(v) && !target_kept[v])) {
      keep[i] = 1;
      target_kept[v] = 1;
      for (NodeId u : graph.inputs(v)) read_later[u] = 1;
    }
    read_later[v] = 0;
  }
  size_t out = 0;
  for (size_t i = 0; i < computes->size(); ++i) {
    if (keep[i]) (*computes)[out++] = (*computes)[i];
  }
  computes->resize(out);
}

}  // namespace

TwRematSchedule GenerateTwRemat(const Graph& graph,
                                const SeparatorHierarchy& hierarchy,
                                const TwRematOptions& options,
                                const Deadline& deadline) {
  std::vector<NodeId> computes;
  TwRematSchedule result;
  result.status = Recursion(graph, hierarchy, options, deadline).Run(&computes);
  if (result.status == Status::kTooLarge) {
    result.message = fmt::format(
        "schedule would exceed max_events={} events (max_depth={}, "
        "memory_limit={})",
        options.max_events, options.max_depth, options.memory_limit);
    return result;
  }
  if (result.status == Status::kTimeout) {
    result.message = "deadline reached while generating the schedule";
    return result;
  }
  DropUnreadComputes(graph, &computes);
  result.schedule = InsertFrees(graph, computes);
  return result;
}

namespace {

// The budgeted mode: tries knob settings and offers each schedule to the
// candidate pool (candidate_pool.h).
class KnobSearch {
 public:
  KnobSearch(const Graph& graph, const SeparatorHierarchy& hierarchy,
             int64_t budget, const Deadline& deadline)
      : graph_(graph),
        hierarchy_(hierarchy),
        pool_(graph, budget, {.invalid_is_bug = true}),
        deadline_(deadline) {}

  // Returns whether the setting gave a schedule within the budget.
  bool Try(const TwRematOptions& options) {
    if (stopped()) return false;
    ++tried_;
    TwRematSchedule r = GenerateTwRemat(graph_, hierarchy_, options, deadline_);
    if (r.status == Status::kTimeout) timed_out_ = true;
    if (r.status != Status::kFeasible) {
      if (r.status == Status::kTooLarge) too_large_message_ = r.message;
      return false;
    }
    return pool_.Offer(std::move(r.schedule),
                       {{"max_depth", options.max_depth},
                        {"memory_limit", options.memory_limit}});
  }

  bool stopped() const { return timed_out_ || deadline_.Expired(); }

  AlgorithmOutput Result(nlohmann::json extra) {
    if (pool_.empty()) {
      if (stopped()) {
        return AlgorithmOutput::NoSchedule(
            Status::kTimeout, "deadline reached before any schedule");
      }
      return AlgorithmOutput::NoSchedule(Status::kTooLarge, too_large_message_);
    }
    const bool fits = pool_.fits();
    const int64_t peak = pool_.peak_bytes();
    CandidatePool::Candidate best = pool_.TakeBest();
    const nlohmann::json& knobs = best.note;
    AlgorithmOutput out = AlgorithmOutput::Found(std::move(best.schedule));
    if (stopped()) out.status = Status::kTimeout;
    if (!fits) {
      out.message = fmt::format(
          "no knob setting of {} tried fits the budget: the lowest simulated "
          "peak is {} bytes (max_depth={}, memory_limit={})",
          tried_, peak, knobs["max_depth"].get<int32_t>(),
          knobs["memory_limit"].get<int64_t>());
    }
    extra["max_depth"] = knobs["max_depth"];
    extra["memory_limit"] = knobs["memory_limit"];
    extra["settings_tried"] = tried_;
    out.extra = std::move(extra);
    return out;
  }

 private:
  const Graph& graph_;
  const SeparatorHierarchy& hierarchy_;
  CandidatePool pool_;
  const Deadline& deadline_;
  int tried_ = 0;
  bool timed_out_ = false;
  std::string too_large_message_;
};

// Searches the knobs. NoRemat (depth 0) is optimal when it fits. Otherwise
// the full-depth recursion is usually the most frugal setting (and the
// fallback when nothing fits). The memory-limit heuristic recurses only
// where needed; its estimate is an upper bound, so a limit above the budget
// may still fit, and a bisection looks for the largest limit (fewest
// recursions) that does. Depth limits are tried from shallow (cheap) to
// deep, stopping at the first that fits; they also cover graphs whose
// full-depth schedule exceeds max_events.
AlgorithmOutput SearchKnobs(const Graph& graph,
                            const SeparatorHierarchy& hierarchy,
                            TwRematOptions base, const SolveRequest& request,
                            nlohmann::json extra) {
  const int64_t budget = request.budget_bytes;
  KnobSearch search(graph, hierarchy, budget, request.deadline);
  auto with = [&](int32_t depth, int64_t limit) {
    TwRematOptions o = base;
    o.max_depth = depth;
    o.memory_limit = limit;
    return o;
  };
  if (search.Try(with(0, 0))) return search.Result(std::move(extra));
  search.Try(with(-1, 0));
  if (search.Try(with(-1, budget))) {
    BisectKnob(
        budget, NoRematPeak(graph),
        [&](int64_t limit) { return search.Try(with(-1, limit)); },
        [&] { return !search.stopped(); }, /*max_steps=*/8);
  }
  for (int32_t depth = 1; depth + 1 < hierarchy.height(); ++depth) {
    if (search.Try(with(depth, 0))) break;
  }
  return search.Result(std::move(extra));
}

// The per-graph work: the decomposition and its separator hierarchy, the
// same at every budget.
struct Decomposition {
  SeparatorHierarchy hierarchy;
  nlohmann::json figures;  // width, bags, hierarchy height
};

// When the deadline comes before any schedule (wide graphs: min-fill
// elimination makes cliques of thousands of nodes), the better of two
// schedules that need none: noremat if it fits, else checkpoint_last (the
// least memory), run in the time left; status timeout either way.
AlgorithmOutput Fallback(const Graph& graph, const SolveRequest& request) {
  CandidatePool pool(graph, request.budget_bytes);
  for (const char* name : {"noremat", "checkpoint_last"}) {
    SubSolution solved = SubSolverOf(request).Solve(
        graph, name, {}, request.budget_bytes,
        std::max(request.deadline.SecondsLeft(), 1e-3));
    if (!solved.simulation) continue;
    if (pool.Offer(std::move(*solved.output.schedule),
                   std::move(*solved.simulation), {{"fallback", name}})) {
      break;
    }
  }
  if (pool.empty()) {
    return AlgorithmOutput::NoSchedule(
        Status::kTimeout,
        "deadline reached during the tree decomposition, and no fallback "
        "schedule was made in the time left");
  }
  const std::string chosen = pool.note()["fallback"].get<std::string>();
  return pool.Take(Status::kTimeout,
                   fmt::format("deadline reached during the tree "
                               "decomposition; answered with {}'s schedule "
                               "instead",
                               chosen));
}

enum class SearchMode { kAuto, kOff };

// The parameters: the recursion's knobs (TwRematOptions) and how they are
// chosen, and the tree decomposition's elimination order.
struct TwRematParams {
  TwRematOptions knobs;
  SearchMode search;
  EliminationOrder elimination;
  bool knobs_given;  // max_depth or memory_limit given explicitly
};

const Options<TwRematParams> kOptions(
    NestedOptions(
        &TwRematParams::knobs,
        std::vector<OptionField<TwRematOptions>>{
            IntOption(&TwRematOptions::max_depth, "max_depth", -1,
                      "recursion depth after which the rest is computed "
                      "directly (0: noremat, -1: no limit)",
                      -1),
            BytesOption(&TwRematOptions::memory_limit, "memory_limit", 0,
                        "stop recursing where the rest fits this many bytes "
                        "computed directly (0: off)")}),
    ChoiceOption(&TwRematParams::search, "search", SearchMode::kAuto,
                 {{"auto", SearchMode::kAuto}, {"off", SearchMode::kOff}},
                 "auto: with a budget and neither knob given, search the "
                 "knobs for the cheapest schedule within it; off: use the "
                 "knobs as given"),
    ChoiceOption(&TwRematParams::elimination, "elimination",
                 EliminationOrder::kMinFill,
                 {{"min_fill", EliminationOrder::kMinFill},
                  {"min_degree", EliminationOrder::kMinDegree}},
                 "greedy elimination order of the tree decomposition"),
    NestedOptions(&TwRematParams::knobs,
                  std::vector<OptionField<TwRematOptions>>{IntOption(
                      &TwRematOptions::max_events, "max_events", 100000000,
                      "refuse (too_large) schedules with more compute and "
                      "free events than this",
                      2)}),
    GivenFlag<TwRematParams>{&TwRematParams::knobs_given,
                             {"max_depth", "memory_limit"}});

class TwRemat : public PreparedAlgorithm<Decomposition> {
 private:
  std::shared_ptr<const Decomposition> PrepareGraph(
      const Graph& graph, const SolveRequest& request) override {
    const EliminationOrder order = kOptions.Read(request.params).elimination;
    // Leave a fifth of the time for the fallback (Fallback below).
    const std::optional<TreeDecomposition> td = DecomposeByElimination(
        graph, order, Deadline::In(0.8 * request.deadline.SecondsLeft()));
    if (!td) return nullptr;
    SeparatorHierarchy hierarchy(graph, *td);
    nlohmann::json figures = {{"width", td->width()},
                              {"bags", td->num_bags()},
                              {"hierarchy_height", hierarchy.height()}};
    return std::make_shared<const Decomposition>(
        Decomposition{std::move(hierarchy), std::move(figures)});
  }

  AlgorithmOutput RunPrepared(const Graph& graph, const SolveRequest& request,
                              const Decomposition* decomposition) override {
    if (!decomposition) return Fallback(graph, request);
    const SeparatorHierarchy& hierarchy = decomposition->hierarchy;
    nlohmann::json extra = decomposition->figures;
    const TwRematParams params = kOptions.Read(request.params);
    const TwRematOptions& options = params.knobs;
    if (params.search == SearchMode::kAuto && !params.knobs_given &&
        request.budget_bytes != kUnboundedBudget) {
      AlgorithmOutput out =
          SearchKnobs(graph, hierarchy, options, request, std::move(extra));
      if (!out.schedule && out.status == Status::kTimeout) {
        return Fallback(graph, request);
      }
      return out;
    }
    TwRematSchedule r =
        GenerateTwRemat(graph, hierarchy, options, request.deadline);
    if (r.status == Status::kTimeout) return Fallback(graph, request);
    if (r.status != Status::kFeasible) {
      return AlgorithmOutput::NoSchedule(r.status, r.message);
    }
    AlgorithmOutput out = AlgorithmOutput::Found(std::move(r.schedule));
    out.extra = std::move(extra);
    return out;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "twremat",
    .description = "Recursive schedule over the separators of a greedy tree "
                   "decomposition; memory logarithmic in n for bounded width",
    .citation = "Kumar et al., Efficient Rematerialization for Deep "
                "Networks, NeurIPS 2019",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<TwRemat>(); },
});

// `remat graph info` reports the min-fill width for every graph. Bounded in
// time so that a huge graph's info still comes back (null: not computed).
const bool kTreewidthRegistered = RegisterGraphProperty({
    .name = "treewidth_upper_bound",
    .compute = [](const Graph& graph) -> nlohmann::json {
      const auto td = DecomposeByElimination(graph, EliminationOrder::kMinFill,
                                             Deadline::In(30));
      if (!td) return nullptr;
      return td->width();
    },
});

}  // namespace
}  // namespace remat
