// checkpoint_reuse — checkpoint_last that keeps what the budget can hold.
//
// docs/algorithms.md, "checkpoint_reuse". checkpoint_last's stages (every
// needed node that is not a forward value, and the forward targets), each
// preceded by a recomputation of the forward values it reads, built one
// stage at a time while a timeline of the memory at every compute so far is
// kept. Two changes make it lower and cheaper:
// - Reuse within a bound. Before recomputing a forward value a stage
//   needs, it asks whether the value's latest instance could instead have
//   been kept alive from its last read until now: the timeline's maximum
//   over that span plus the value's size within the bound. If so the
//   instance is kept (the timeline raised over the span) and nothing behind
//   it is recomputed; if not, the value is recomputed and the same question
//   is asked of its inputs. Values nearest the stage are asked first, so a
//   recomputation starts from the closest value that can be held, not from
//   the graph's inputs. Without a budget every value is computed once.
// - Memory-first stage order. Among the stages whose inputs are computed,
//   the one that adds the least (its size, less the values it reads for
//   the last time) runs first: on a linear layer the weight's gradient,
//   which frees the layer's input gradient, before the input's gradient,
//   which allocates a new one. With a forward value that reads a
//   non-forward one the stages keep their topological order.
// - A search over the bound. The bound is the budget, or when that schedule
//   does not fit, stricter ones down to keeping nothing, in this order and
//   then in checkpoint_last's: the first schedule that fits is the answer.
//   The last candidate is checkpoint_last's own schedule.
// Every decision looks only at the past (a kept instance raises computes
// already placed), so the timeline is exact: the simulator's peak is the
// timeline's maximum.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/common/candidate_pool.h"
#include "algorithms/common/forward_cone.h"
#include "model/liveness.h"
#include "model/memory_model.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

// Range add and range maximum over a fixed number of compute steps (the
// memory timeline): a lazy segment tree, each call O(log n).
class Timeline {
 public:
  explicit Timeline(int64_t size)
      : size_(std::max<int64_t>(size, 1)),
        max_(4 * size_, 0),
        pending_(4 * size_, 0) {}

  void Add(int64_t first, int64_t last, int64_t bytes) {
    if (first <= last) Add(1, 0, size_ - 1, first, last, bytes);
  }
  int64_t Max(int64_t first, int64_t last) {
    return first <= last ? Max(1, 0, size_ - 1, first, last) : 0;
  }

 private:
  void Add(int64_t node, int64_t lo, int64_t hi, int64_t first, int64_t last,
           int64_t bytes) {
    if (last < lo || hi < first) return;
    if (first <= lo && hi <= last) {
      max_[node] += bytes;
      pending_[node] += bytes;
      return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    Add(2 * node, lo, mid, first, last, bytes);
    Add(2 * node + 1, mid + 1, hi, first, last, bytes);
    max_[node] = pending_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }
  int64_t Max(int64_t node, int64_t lo, int64_t hi, int64_t first,
              int64_t last) {
    if (first <= lo && hi <= last) return max_[node];
    int64_t mid = lo + (hi - lo) / 2;
    int64_t best = 0;
    if (first <= mid) best = Max(2 * node, lo, mid, first, last);
    if (last > mid) {
      best = std::max(best, Max(2 * node + 1, mid + 1, hi, first, last));
    }
    return pending_[node] + best;
  }

  int64_t size_;
  std::vector<int64_t> max_, pending_;
};

enum class ReuseOrder { kMemory, kTopo };

struct CheckpointReuseOptions {
  int64_t max_events;
  ReuseOrder order;
};

const Options<CheckpointReuseOptions> kOptions(
    IntOption(&CheckpointReuseOptions::max_events, "max_events", 4000000,
              "refuse (too_large) graphs whose stages could need more "
              "computes than this",
              1),
    ChoiceOption(&CheckpointReuseOptions::order, "order", ReuseOrder::kMemory,
                 {{"memory", ReuseOrder::kMemory}, {"topo", ReuseOrder::kTopo}},
                 "stage order: memory (the ready stage that adds least "
                 "first) or topo (topological, as checkpoint_last)"));

class CheckpointReuse : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const CheckpointReuseOptions options = kOptions.Read(request.params);
    const int64_t max_events = options.max_events;
    const bool memory_first = options.order == ReuseOrder::kMemory;
    const int32_t n = graph.num_nodes();
    const std::vector<uint8_t> needed = NeededNodes(graph);
    auto is_forward = [&](NodeId v) {
      return graph.kind(v) == NodeKind::kForward;
    };
    auto is_stage = [&](NodeId v) {
      return needed[v] && (!is_forward(v) || graph.is_target(v));
    };

    // The most computes any schedule here can have: checkpoint_last's,
    // every stage recomputing its whole forward cone. It sizes the
    // timeline, and refuses graphs whose recomputation is too long.
    std::vector<int32_t> seen(n, -1);
    std::vector<NodeId> stack;
    int64_t most_steps = 0;
    for (NodeId s = 0; s < n; ++s) {
      if (!is_stage(s)) continue;
      if (request.deadline.Expired()) {
        return AlgorithmOutput::NoSchedule(Status::kTimeout,
                                           "deadline reached while sizing");
      }
      ++most_steps;
      WalkForwardCone(graph, s, s, seen, stack, [&](NodeId) {
        ++most_steps;
        return true;
      });
      if (most_steps > max_events) {
        return AlgorithmOutput::NoSchedule(
            Status::kTooLarge,
            fmt::format("recomputation could exceed max_events={} computes "
                        "(quadratic in the depth of the graph)",
                        max_events));
      }
    }

    // The stage orders tried: the one asked for, then checkpoint_last's.
    std::vector<std::vector<NodeId>> orders;
    orders.push_back(
        StageOrder(graph, request, is_stage, is_forward, memory_first));
    if (memory_first) {
      orders.push_back(StageOrder(graph, request, is_stage, is_forward, false));
      if (orders[0] == orders[1]) orders.pop_back();
    }
    if (request.deadline.Expired()) {
      return AlgorithmOutput::NoSchedule(Status::kTimeout,
                                         "deadline reached while ordering");
    }

    // Keeping whatever fits the budget can fill it early on; a later stage
    // may then have to recompute from the graph's inputs, or hold a kept
    // value while it recomputes the others, above the budget: the peak is
    // not monotone in what is kept. So when keeping within the budget does
    // not fit, stricter bounds on what is kept are tried, evenly spaced
    // down to the memory lower bound, then keeping nothing (in
    // checkpoint_last's order, checkpoint_last's schedule): the first that
    // fits, which keeps the most, is taken, or else the lowest peak.
    const int64_t budget = request.budget_bytes;
    const int64_t lower = MemoryLowerBound(graph);
    std::vector<int64_t> keep_bounds = {budget};
    for (int32_t k = kKeepBounds - 1; k > 0 && lower < budget; --k) {
      keep_bounds.push_back(
          lower + static_cast<int64_t>(static_cast<double>(budget - lower) * k /
                                       kKeepBounds));
    }
    keep_bounds.push_back(0);
    CandidatePool best(graph, budget, {.invalid_is_bug = true});
    for (size_t o = 0; o < orders.size(); ++o) {
      for (int64_t keep_bound : keep_bounds) {
        std::optional<Schedule> schedule =
            Build(graph, request, orders[o], most_steps, keep_bound);
        if (!schedule) {
          return best.empty()
                     ? AlgorithmOutput::NoSchedule(
                           Status::kTimeout, "deadline reached while building")
                     : best.Take(Status::kTimeout,
                                 "deadline reached; best so far");
        }
        const nlohmann::json note = {
            {"keep_bytes", keep_bound},
            {"order", o == 0 && memory_first ? "memory" : "topo"}};
        if (best.Offer(std::move(*schedule), note)) {
          return best.Take(std::nullopt, {});
        }
      }
    }
    return best.Take(std::nullopt, {});
  }

  // Bounds tried on what is kept when the budget itself does not fit.
  static constexpr int32_t kKeepBounds = 16;

  // The schedule that keeps a value whenever the timeline stays within
  // `keep_bound`; nullopt when the deadline passes.
  static std::optional<Schedule> Build(const Graph& graph,
                                       const SolveRequest& request,
                                       std::span<const NodeId> stages,
                                       int64_t most_steps, int64_t keep_bound) {
    const int32_t n = graph.num_nodes();
    Timeline timeline(most_steps);
    std::vector<NodeId> computes;
    computes.reserve(most_steps);
    // The latest instance of each value: its compute step (-1: none yet)
    // and the last step that reads it.
    std::vector<int64_t> made_at(n, -1), last_read(n, -1);
    auto append = [&](NodeId v) {
      const int64_t step = static_cast<int64_t>(computes.size());
      computes.push_back(v);
      timeline.Add(step, step, memory_model::ComputeBytes(graph, v));
      for (NodeId u : graph.inputs(v)) {
        if (last_read[u] < step) {
          timeline.Add(last_read[u] + 1, step,
                       memory_model::ResidentBytes(graph, u));
          last_read[u] = step;
        }
      }
      made_at[v] = last_read[v] = step;
    };
    // Keeps u's latest instance alive until now, if that stays within
    // keep_bound; a bound of 0 keeps nothing, not even a value read by the
    // step before (which the recomputation would then hold).
    auto keep = [&](NodeId u) {
      if (made_at[u] < 0 || keep_bound == 0) return false;
      const int64_t now = static_cast<int64_t>(computes.size()) - 1;
      const int64_t bytes = memory_model::ResidentBytes(graph, u);
      if (last_read[u] < now) {
        const int64_t held = timeline.Max(last_read[u] + 1, now);
        if (held > keep_bound - bytes) return false;
        timeline.Add(last_read[u] + 1, now, bytes);
        last_read[u] = now;
      }
      return true;
    };

    std::vector<int32_t> visited(n, -1);
    std::vector<NodeId> recompute, stack;
    for (NodeId s : stages) {
      if (request.deadline.Expired()) return std::nullopt;
      // The forward values s reads, nearest first: each kept if it fits,
      // else recomputed after its own inputs.
      recompute.clear();
      WalkForwardCone(graph, s, s, visited, stack, [&](NodeId u) {
        if (keep(u)) return false;
        recompute.push_back(u);
        return true;
      });
      std::sort(recompute.begin(), recompute.end(), [&](NodeId a, NodeId b) {
        return graph.topo_rank(a) < graph.topo_rank(b);
      });
      for (NodeId v : recompute) append(v);
      append(s);
    }
    return InsertFrees(graph, computes);
  }

  // The stages in the order they run: topological, or memory first (the
  // ready stage that adds least; ties by topological rank). Empty when the
  // deadline passes.
  template <typename IsStage, typename IsForward>
  static std::vector<NodeId> StageOrder(const Graph& graph,
                                        const SolveRequest& request,
                                        const IsStage& is_stage,
                                        const IsForward& is_forward,
                                        bool memory_first) {
    std::vector<NodeId> order;
    for (NodeId v : graph.topological_order()) {
      if (is_stage(v)) order.push_back(v);
    }
    // A forward value that reads a non-forward one would tie stages
    // through their forward cones: keep the topological order then.
    for (NodeId v = 0; v < graph.num_nodes() && memory_first; ++v) {
      if (!is_forward(v)) continue;
      for (NodeId u : graph.inputs(v)) {
        if (!is_forward(u)) memory_first = false;
      }
    }
    if (!memory_first) return order;

    const int32_t n = graph.num_nodes();
    // The distinct stages each stage reads, and those reading each stage.
    std::vector<std::vector<NodeId>> reads(n), read_by(n);
    std::vector<NodeId> mark(n, -1);
    for (NodeId s : order) {
      for (NodeId u : graph.inputs(s)) {
        if (is_stage(u) && mark[u] != s) {
          mark[u] = s;
          reads[s].push_back(u);
          read_by[u].push_back(s);
        }
      }
    }
    // Per stage: stage inputs not yet run; per value: stages still to read
    // it. A stage adds its size, less what it reads for the last time.
    std::vector<int32_t> waiting(n, 0), readers(n, 0);
    for (NodeId s : order) {
      waiting[s] = static_cast<int32_t>(reads[s].size());
      readers[s] = static_cast<int32_t>(read_by[s].size());
    }
    auto adds = [&](NodeId s) {
      int64_t bytes = memory_model::ResidentBytes(graph, s);
      for (NodeId u : reads[s]) {
        if (readers[u] == 1) bytes -= memory_model::ResidentBytes(graph, u);
      }
      return bytes;
    };
    std::set<std::pair<int64_t, int32_t>> ready;  // (adds, topological rank)
    std::vector<int64_t> keyed(n, 0);             // each ready stage's adds
    auto make_ready = [&](NodeId s) {
      keyed[s] = adds(s);
      ready.insert({keyed[s], graph.topo_rank(s)});
    };
    for (NodeId s : order) {
      if (waiting[s] == 0) make_ready(s);
    }
    std::vector<NodeId> result;
    result.reserve(order.size());
    const std::span<const NodeId> topo = graph.topological_order();
    while (!ready.empty()) {
      if (request.deadline.Expired()) return {};
      NodeId s = topo[ready.begin()->second];
      ready.erase(ready.begin());
      result.push_back(s);
      for (NodeId u : reads[s]) {
        if (--readers[u] != 1) continue;
        // u's one remaining reader, if ready, now frees it.
        for (NodeId r : read_by[u]) {
          if (waiting[r] == 0 && ready.erase({keyed[r], graph.topo_rank(r)})) {
            make_ready(r);
          }
        }
      }
      for (NodeId r : read_by[s]) {
        if (--waiting[r] == 0) make_ready(r);
      }
    }
    return result;
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "checkpoint_reuse",
    .description = "checkpoint_last's stages, memory-freeing stages first, "
                   "each recomputing only what the budget could not keep",
    .citation = "this project's extension of checkpoint_last "
                "(docs/algorithms.md)",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<CheckpointReuse>(); },
});

}  // namespace
}  // namespace remat
