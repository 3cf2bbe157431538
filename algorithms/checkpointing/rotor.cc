// rotor — optimal persistent checkpointing for heterogeneous chains.
//
// O. Beaumont, L. Eyraud-Dubois, J. Herrmann, A. Joly and A. Shilova,
// "Optimal checkpointing for heterogeneous chains: how to train deep neural
// networks with limited memory", arXiv:1911.13214, 2019 (ACM TOMS 2024);
// the dynamic program behind the `rotor` PyTorch library.
//
// Revolve assumes every step costs and holds the same; rotor does not. For
// a chain of stages with forward costs, backward costs and sizes of their
// inputs, outputs and saved activations, Opt(s, t, m) is the least cost of
// back-propagating stages s..t with stage s's input held and m memory units
// left. Either t = s (run the stage: forward keeping what its backward
// reads, then its backward), or the schedule starts with one of two moves:
// advance without saving activations to a later stage s' and keep its
// input as a checkpoint, then Opt(s', t, m - |x_(s'-1)|) followed by
// Opt(s, s' - 1, m); or run stage s keeping everything its backward reads
// (the paper's F_all), Opt(s + 1, t, m - |saved|), then stage s's
// backward; where neither the caller nor stage s's backward reads x_(s-1),
// it is dead once S_s is computed, and Opt(s + 1, t) gets its memory too.
// The DP fills the table for every m up to the budget.
//
// The stages are revolve's: the segments between articulation points of
// the forward graph (SegmentChain, segment_schedule.h), one per step j =
// 1..L with input x_(j-1) (x_0 is the graph's input, 0 bytes) and output
// x_j, except that a checkpoint is dropped (its two stages merge) where a
// stage would read a forward value of a later segment (the backward of
// the last checkpoint reads the loss when it also reads its own input).
// Per stage, derived from the training graph with the same candidates:
//   forward cost   uf = cost of the forward values of segment S_j;
//   backward cost  ub = cost of the non-forward nodes of stage j, plus, in
//                  the t = s case, the part of S_j they read with its
//                  ancestors within S_j: what RunStage() recomputes;
//   |x_j|          = mem of checkpoint x_j;
//   saved          = mem of the values of S_j that stage j reads, and x_j;
//   gradient d_j   = mem of the non-forward values made in stages > j and
//                  read in stages <= j (what is live between two stages);
//   peaks          = liveness walks (each value freed after its last use
//                  within the walk, workspace included, sizes read through
//                  memory_model.h): forward over S_j keeping x_j (advance)
//                  or x_j and the saved values (F_all); the stage's
//                  backward with its saved values and the gradients it
//                  reads live at its start; the whole stage in RunStage()'s
//                  order, once with x_(j-1) held throughout and once freed
//                  at its last use (when the caller releases it next, the
//                  DP state's `keep` flag). Gradients that pass through a
//                  stage count throughout.
// Memory is discretized as the paper does: `slots` units, unit =
// ceil(budget / slots) bytes, the budget rounded down to floor(budget /
// unit) units and every size and peak rounded up to whole units, so a
// schedule the DP accepts never exceeds the budget by its own accounting.
// With slots >= budget the unit is one byte: no rounding at all.
//
// The DP's operations become a compute sequence on the whole graph through
// the ScheduleBuilder (Ensure / Hold / RunStage / Release), frees by the
// shared liveness pass, and the simulator judges it. The DP is run at the
// budget first: by its own accounting that schedule fits. The accounting
// is conservative (a held input or saved value counts until the DP releases
// it, where the liveness pass frees it at its last use), so the table is filled
// up to twice the budget's units and the largest DP memory whose schedule the
// simulator finds within the budget is searched by bisection (assuming the
// simulated peak grows with it); then, since it need not, each cost level
// of the DP (the range of memories with one optimum) is simulated at both
// ends, cheapest first, until one fits. The cheapest schedule that fits is
// returned. Where the DP has no schedule even at twice the budget: status
// infeasible with the reason; where none of its schedules fits once
// simulated, the one of smallest peak (judged infeasible). Optimal only
// within this model: persistent schedules on the chain of segments, with
// discretized sizes.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "algorithms/checkpointing/segment_schedule.h"
#include "algorithms/common/candidate_pool.h"
#include "model/memory_model.h"
#include "model/registry.h"
#include "model/simulator.h"

namespace remat {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
constexpr int32_t kBase = 0, kAll = -1;

// The stage figures of the DP, in bytes, for steps 1..L (index 0 unused
// except x_0).
struct Stages {
  int32_t length = 0;
  std::vector<int64_t> uf, ub_base, ub, x, saved, grad;
  std::vector<int64_t> advance_peak;  // computing S_j keeping only x_j
  std::vector<int64_t> all_peak;      // computing S_j keeping saved
  std::vector<int64_t> base_peak;     // the whole stage run alone
  std::vector<int64_t> base_free;     // the same with x_(j-1) freed at last use
  std::vector<int64_t> backward_peak;     // stage j's backward, saved at hand
  std::vector<std::vector<NodeId>> read;  // values of S_j stage j reads
  // Per j: x_(j-1) is read by stage j - 1, so after F_all on stage j - 1 it
  // outlives Opt(j, t).
  std::vector<int> input_read;
  // Per j: stage j reads its input x_(j-1) (a convolution's backward does,
  // a ReLU's does not).
  std::vector<uint8_t> reads_input;
};

// Peak of computing `order` (topological) with frees after the last use
// within `order`; values outside `order` count nothing, `keep` ones stay.
class LocalWalk {
 public:
  explicit LocalWalk(const Graph& graph)
      : graph_(graph),
        stamp_(graph.num_nodes(), 0),
        ordered_(graph.num_nodes(), 0),
        uses_(graph.num_nodes(), 0),
        keep_(graph.num_nodes(), 0) {}

  // `initial` values are live at the start and freed after their last use
  // in `order` (at once if it has none).
  int64_t Peak(const std::vector<NodeId>& order,
               const std::vector<NodeId>& keep,
               const std::vector<NodeId>& initial = {}) {
    ++call_;
    for (NodeId v : order) stamp_[v] = call_;
    for (NodeId v : initial) stamp_[v] = call_;
    for (NodeId v : keep) keep_[v] = call_;
    // Only computes in `order` use a value: an initial value is made
    // already, so its reading another initial value (the gradient from the
    // next stage reads this stage's output) holds nothing.
    for (NodeId v : order) ordered_[v] = call_;
    auto count_uses = [&](NodeId v) {
      uses_[v] = 0;
      for (NodeId w : graph_.consumers(v)) uses_[v] += ordered_[w] == call_;
    };
    for (NodeId v : order) count_uses(v);
    for (NodeId v : initial) count_uses(v);
    memory_model::Ledger ledger(graph_);
    auto drop = [&](NodeId u) {
      if (keep_[u] != call_) ledger.Free(u);
    };
    for (NodeId v : initial) {
      ledger.Resident(v);
      if (uses_[v] == 0) drop(v);
    }
    for (NodeId v : order) {
      ledger.Compute(v);
      if (uses_[v] == 0) drop(v);
      for (NodeId u : graph_.inputs(v)) {
        if (stamp_[u] == call_ && --uses_[u] == 0) drop(u);
      }
    }
    return ledger.peak();
  }

 private:
  const Graph& graph_;
  std::vector<int32_t> stamp_, ordered_, uses_, keep_;
  int32_t call_ = 0;
};

int64_t Mem(const Graph& graph, const std::vector<NodeId>& values) {
  int64_t sum = 0;
  for (NodeId v : values) sum += memory_model::ResidentBytes(graph, v);
  return sum;
}

// nullopt when `deadline` expires first: a stage of s nodes costs up to
// s times its cone (below), and a training star's one stage of 3*10^5
// leaves ran past 80 s with --timeout 5.
std::optional<Stages> DeriveStages(const Graph& graph,
                                   const SegmentChain& chain,
                                   const Deadline& deadline) {
  const int32_t n = graph.num_nodes();
  const int32_t L = chain.num_steps();
  const auto& is_forward = chain.forward_graph().split.is_forward;
  Stages st;
  st.length = L;
  for (auto* v : {&st.uf, &st.ub_base, &st.ub, &st.x, &st.saved, &st.grad,
                  &st.advance_peak, &st.all_peak, &st.base_peak, &st.base_free,
                  &st.backward_peak}) {
    v->assign(L + 2, 0);
  }
  st.read.assign(L + 2, {});
  st.input_read.assign(L + 2, 0);
  st.reads_input.assign(L + 2, 0);
  std::vector<std::vector<NodeId>> segment(L + 2);
  for (NodeId v : chain.forward_graph().forward) {
    segment[chain.segment_of(v)].push_back(v);
    st.uf[chain.segment_of(v)] += graph.cost(v);
  }
  for (int32_t j = 1; j < L; ++j) {
    st.x[j] = memory_model::ResidentBytes(graph, chain.checkpoint(j));
  }
  std::vector<int32_t> stage_of(n, 0);
  for (int32_t j = 1; j <= L; ++j) {
    for (NodeId v : chain.stage(j)) stage_of[v] = j;
  }
  // Gradients live across boundaries: made in stage a, read down to b < a.
  std::vector<int64_t> diff(L + 3, 0);
  for (NodeId v = 0; v < n; ++v) {
    if (stage_of[v] == 0 || is_forward[v]) continue;
    int32_t lowest = stage_of[v];
    for (NodeId w : graph.consumers(v)) {
      if (stage_of[w] > 0) lowest = std::min(lowest, stage_of[w]);
    }
    if (lowest < stage_of[v]) {  // live at boundaries lowest..stage-1
      diff[lowest] += memory_model::ResidentBytes(graph, v);
      diff[stage_of[v]] -= memory_model::ResidentBytes(graph, v);
    }
  }
  for (int32_t j = 1; j <= L; ++j) st.grad[j] = st.grad[j - 1] + diff[j];
  st.grad[L] = 0;

  LocalWalk walk(graph);
  std::vector<uint8_t> mark(n, 0);
  for (int32_t j = 1; j <= L; ++j) {
    std::vector<NodeId> backward;
    for (NodeId v : chain.stage(j)) {
      if (is_forward[v]) {
        if (chain.segment_of(v) == j && !mark[v]) {
          mark[v] = 1;
          st.read[j].push_back(v);
        }
        continue;
      }
      backward.push_back(v);
      st.ub[j] += graph.cost(v);
      for (NodeId u : graph.inputs(v)) {
        if (is_forward[u] && chain.segment_of(u) == j && !mark[u]) {
          mark[u] = 1;
          st.read[j].push_back(u);
        }
      }
    }
    // The part of S_j that running the stage alone recomputes.
    std::vector<NodeId> cone;
    for (auto it = segment[j].rbegin(); it != segment[j].rend(); ++it) {
      NodeId v = *it;
      if (!mark[v]) continue;
      cone.push_back(v);
      for (NodeId u : graph.inputs(v)) {
        if (chain.segment_of(u) == j) mark[u] = 1;
      }
    }
    std::reverse(cone.begin(), cone.end());
    int64_t cone_cost = 0;
    for (NodeId v : cone) cone_cost += graph.cost(v);
    st.ub_base[j] = st.ub[j] + cone_cost;
    for (NodeId v : segment[j]) mark[v] = 0;
    std::sort(st.read[j].begin(), st.read[j].end(), [&](NodeId a, NodeId b) {
      return graph.topo_rank(a) < graph.topo_rank(b);
    });

    std::vector<NodeId> kept_all = st.read[j];
    if (j < L) kept_all.push_back(chain.checkpoint(j));
    st.saved[j] = Mem(graph, st.read[j]) +
                  (j < L && std::find(st.read[j].begin(), st.read[j].end(),
                                      chain.checkpoint(j)) == st.read[j].end()
                       ? st.x[j]
                       : 0);
    st.advance_peak[j] =
        j < L ? walk.Peak(segment[j], {chain.checkpoint(j)}) : 0;
    st.all_peak[j] = walk.Peak(segment[j], kept_all);
    // Gradients read in stage j but made later sit in grad[j]; those made
    // here and read earlier are kept by the walk (not in `backward`'s
    // consumers), and so count until the end of the stage.
    // Gradients this stage makes for earlier stages are kept to its end;
    // those it reads from later stages are live from its start and freed
    // after their last use here unless earlier stages read them too; the
    // rest of d_j passes through.
    std::vector<NodeId> kept, incoming;
    int64_t passing = st.grad[j];
    for (NodeId v : backward) {
      for (NodeId w : graph.consumers(v)) {
        if (stage_of[w] > 0 && stage_of[w] < j) {
          kept.push_back(v);
          break;
        }
      }
      for (NodeId u : graph.inputs(v)) {
        if (is_forward[u] || stage_of[u] <= j || mark[u] == 4) continue;
        mark[u] = 4;
        incoming.push_back(u);
        passing -= memory_model::ResidentBytes(graph, u);
        for (NodeId w : graph.consumers(u)) {
          if (stage_of[w] > 0 && stage_of[w] < j) {
            kept.push_back(u);
            break;
          }
        }
      }
    }
    for (NodeId u : incoming) mark[u] = 0;
    std::vector<NodeId> at_start = incoming;
    at_start.insert(at_start.end(), st.read[j].begin(), st.read[j].end());
    st.backward_peak[j] = passing + walk.Peak(backward, kept, at_start);
    // The stage run alone, in RunStage()'s order: each node after the part
    // of S_j it reads that is not computed yet.
    std::vector<NodeId> run;
    for (NodeId v : chain.stage(j)) {
      if (deadline.Expired()) return std::nullopt;
      const size_t from = run.size();
      // Reverse topological: one pass finds what v needs.
      for (auto it = cone.rbegin(); it != cone.rend(); ++it) {
        const NodeId c = *it;
        if (mark[c] == 2) continue;
        bool needed = c == v;
        for (NodeId w : graph.consumers(c)) {
          needed |= w == v || mark[w] == 3;
        }
        if (needed) mark[c] = 3;
      }
      for (NodeId c : cone) {
        if (mark[c] == 3) {
          mark[c] = 2;
          run.push_back(c);
        }
      }
      std::sort(run.begin() + static_cast<int64_t>(from), run.end(),
                [&](NodeId a, NodeId b) {
                  return graph.topo_rank(a) < graph.topo_rank(b);
                });
      if (!is_forward[v]) run.push_back(v);
    }
    for (NodeId c : cone) mark[c] = 0;
    st.base_peak[j] = passing + walk.Peak(run, kept, incoming);
    if (j > 1) incoming.push_back(chain.checkpoint(j - 1));
    st.base_free[j] = passing + walk.Peak(run, kept, incoming);
  }
  for (int32_t j = 1; j < L; ++j) {
    const NodeId x = chain.checkpoint(j);
    st.input_read[j + 1] =
        std::find(st.read[j].begin(), st.read[j].end(), x) != st.read[j].end();
    const auto& stage = chain.stage(j + 1);
    st.reads_input[j + 1] =
        std::any_of(stage.begin(), stage.end(), [&](NodeId v) {
          const auto inputs = graph.inputs(v);
          return std::find(inputs.begin(), inputs.end(), x) != inputs.end();
        });
  }
  return st;
}

// The DP in units; table over 1 <= s <= t <= L and 0 <= m <= M.
class RotorTable {
 public:
  RotorTable(const Stages& st, int64_t unit, int64_t memory)
      : st_(st), L_(st.length), M_(memory) {
    auto units = [&](int64_t bytes) { return (bytes + unit - 1) / unit; };
    for (auto [from, to] : {std::pair{&st.x, &x_},
                            {&st.saved, &saved_},
                            {&st.grad, &grad_},
                            {&st.advance_peak, &advance_},
                            {&st.all_peak, &all_},
                            {&st.base_peak, &base_},
                            {&st.base_free, &base_free_},
                            {&st.backward_peak, &backward_}}) {
      to->resize(from->size());
      std::transform(from->begin(), from->end(), to->begin(), units);
    }
  }

  static int64_t Entries(int32_t length, int64_t memory) {
    return static_cast<int64_t>(length) * (length + 1) * (memory + 1);
  }

  // False when the deadline stopped it.
  bool Fill(const Deadline& deadline) {
    cost_.assign(Entries(L_, M_), kInf);
    choice_.assign(cost_.size(), kBase);
    for (int32_t len = 0; len < L_; ++len) {
      if (deadline.Expired()) return false;
      for (int32_t s = 1; s + len <= L_; ++s) {
        FillPair(s, s + len, 0);
        FillPair(s, s + len, 1);
      }
    }
    return true;
  }

  // `keep`: x_(s-1) outlives the call (else the last stage run alone may
  // free it at its last use).
  int64_t Cost(int32_t s, int32_t t, int64_t m, int keep) const {
    return m < 0 ? kInf : cost_[Index(s, t, m, keep)];
  }
  int32_t Choice(int32_t s, int32_t t, int64_t m, int keep) const {
    return choice_[Index(s, t, m, keep)];
  }
  int64_t x(int32_t j) const { return x_[j]; }

  // The memory left to Opt(s + 1, t) after F_all on stage s: less what
  // stage s keeps, plus its input x_(s-1) when nothing reads that any more
  // (the caller does not keep it and stage s's backward does not read it:
  // the liveness pass frees it once S_s is computed). Without that credit
  // a chain of F_all stages holds every input to its end, a convolution's
  // output under its ReLU included.
  int64_t AfterAll(int32_t s, int64_t m, int keep) const {
    const int64_t freed = keep || st_.reads_input[s] ? 0 : x_[s - 1];
    return std::min(M_, m + freed - saved_[s]);
  }

 private:
  size_t Index(int32_t s, int32_t t, int64_t m, int keep) const {
    // Pairs by s, then t: row s holds L - s + 1 pairs.
    const int64_t before = static_cast<int64_t>(s - 1) * L_ -
                           static_cast<int64_t>(s - 1) * (s - 2) / 2;
    return static_cast<size_t>(((before + (t - s)) * 2 + keep) * (M_ + 1) + m);
  }

  void FillPair(int32_t s, int32_t t, int keep) {
    for (int64_t m = 0; m <= M_; ++m) {
      int64_t best = kInf;
      int32_t how = kBase;
      if (s == t) {
        if ((keep ? base_[s] : base_free_[s] - x_[s - 1]) <= m) {
          best = st_.ub_base[s];
        }
      } else {
        // F_all on stage s.
        if (grad_[t] + all_[s] <= m && backward_[s] <= m) {
          const int64_t rest =
              Cost(s + 1, t, AfterAll(s, m, keep), st_.input_read[s + 1]);
          if (rest < kInf) {
            best = st_.uf[s] + rest + st_.ub[s];
            how = kAll;
          }
        }
        // Advance to s' and keep x_(s'-1).
        int64_t advance_need = advance_[s];
        int64_t advance_cost = 0;
        for (int32_t sp = s + 1; sp <= t; ++sp) {
          const int32_t k = sp - 1;  // last stage advanced through
          if (k > s)
            advance_need = std::max(advance_need, x_[k - 1] + advance_[k]);
          advance_cost += st_.uf[k];
          if (grad_[t] + advance_need > m) break;
          const int64_t right = Cost(sp, t, m - x_[k], 0);
          if (right >= kInf) continue;
          const int64_t left = Cost(s, k, m, keep);
          if (left >= kInf) continue;
          const int64_t total = advance_cost + right + left;
          if (total < best) {
            best = total;
            how = sp;
          }
        }
      }
      cost_[Index(s, t, m, keep)] = best;
      choice_[Index(s, t, m, keep)] = how;
    }
  }

  const Stages& st_;
  int32_t L_;
  int64_t M_;
  std::vector<int64_t> x_, saved_, grad_, advance_, all_, base_, base_free_,
      backward_;
  std::vector<int64_t> cost_;
  std::vector<int32_t> choice_;
};

// The DP's operations as builder calls, from Opt(1, L, m).
BuildResult Replay(const SegmentChain& chain, const Stages& st,
                   const RotorTable& table, int64_t m, BuildLimits limits) {
  ScheduleBuilder builder(chain, limits);
  struct Task {
    int32_t s, t;
    int64_t m;
    int keep;
    enum { kSolve, kRelease, kBackward } op = kSolve;
  };
  std::vector<Task> tasks = {{1, st.length, m, 0}};
  while (!tasks.empty() && !builder.stopped()) {
    const Task task = tasks.back();
    tasks.pop_back();
    const int32_t s = task.s, t = task.t;
    if (task.op == Task::kRelease) {  // x_s, kept as a checkpoint
      builder.Release(chain.checkpoint(s));
      continue;
    }
    if (task.op == Task::kBackward) {  // stage s after F_all
      builder.RunStage(s);
      for (NodeId v : st.read[s]) builder.Release(v);
      continue;
    }
    const int32_t how = table.Choice(s, t, task.m, task.keep);
    if (s == t) {
      builder.RunStage(s);
    } else if (how == kAll) {
      const NodeId x = chain.checkpoint(s);
      builder.Ensure(x);
      for (NodeId v : st.read[s]) builder.Ensure(v);
      for (NodeId v : st.read[s]) builder.Hold(v);
      builder.Hold(x);
      builder.DropUnheld();
      tasks.push_back({s, t, 0, 0, Task::kBackward});
      if (std::find(st.read[s].begin(), st.read[s].end(), x) ==
          st.read[s].end()) {
        tasks.push_back({s, s, 0, 0, Task::kRelease});
      }
      tasks.push_back({s + 1, t, table.AfterAll(s, task.m, task.keep),
                       st.input_read[s + 1]});
    } else {
      const int32_t k = how - 1;
      const NodeId x = chain.checkpoint(k);
      builder.Ensure(x);
      builder.Hold(x);
      builder.DropUnheld();
      tasks.push_back({s, k, task.m, task.keep});
      tasks.push_back({k, k, 0, 0, Task::kRelease});
      tasks.push_back({how, t, task.m - table.x(k), 0});
    }
  }
  return builder.Finish();
}

// The articulation points, less those where a stage would read a forward
// value of a later segment (the backward of the last checkpoint reads the
// loss when it also reads its input): the stages on both sides merge, so
// that stage j reads only S_j and x_(j-1), as the DP assumes.
std::vector<NodeId> StageCheckpoints(const Graph& graph,
                                     const CheckpointGraph& fwd,
                                     std::vector<NodeId> checkpoints) {
  const auto& is_forward = fwd.split.is_forward;
  for (;;) {
    const SegmentChain chain(graph, fwd, checkpoints);
    std::vector<uint8_t> drop(checkpoints.size(), 0);
    bool any = false;
    for (int32_t j = 1; j <= chain.num_steps(); ++j) {
      for (NodeId v : chain.stage(j)) {
        for (NodeId u : graph.inputs(v)) {
          if (!is_forward[u]) continue;
          for (int32_t k = j; k < chain.segment_of(u); ++k) {
            drop[k - 1] = 1;  // x_k, between S_k and S_(k+1)
            any = true;
          }
        }
      }
    }
    if (!any) return checkpoints;
    std::vector<NodeId> kept;
    for (size_t i = 0; i < checkpoints.size(); ++i) {
      if (!drop[i]) kept.push_back(checkpoints[i]);
    }
    checkpoints = std::move(kept);
  }
}

struct RotorOptions {
  int64_t slots;
  int64_t max_entries;
  int64_t max_computes;
};

const Options<RotorOptions> kOptions(
    IntOption(&RotorOptions::slots, "slots", 500,
              "memory units the budget is split into (sizes rounded up, the "
              "budget down)",
              1),
    IntOption(&RotorOptions::max_entries, "max_entries", 20000000,
              "largest DP table (stage pairs x 2 x (2 slots + 1) entries of "
              "12 bytes); slots shrink to fit it",
              1),
    MaxComputesOption(&RotorOptions::max_computes));

class Rotor : public Algorithm {
 private:
  AlgorithmOutput Run(const Graph& graph,
                      const SolveRequest& request) override {
    const RotorOptions options = kOptions.Read(request.params);
    std::string why;
    std::optional<CheckpointGraph> fwd = PrepareCheckpointGraph(graph, why);
    if (!fwd) return AlgorithmOutput::NoSchedule(Status::kUnsupported, why);
    const SegmentChain chain(
        graph, *fwd,
        StageCheckpoints(graph, *fwd, ArticulationCandidates(graph, *fwd)));
    const std::optional<Stages> derived =
        DeriveStages(graph, chain, request.deadline);
    if (!derived) {
      return AlgorithmOutput::NoSchedule(
          Status::kTimeout, "deadline reached while deriving the stages");
    }
    const Stages& st = *derived;
    const int32_t L = st.length;
    int64_t budget = request.budget_bytes;
    if (budget == kUnboundedBudget) {
      // Everything live at once fits.
      budget = 0;
      for (NodeId v = 0; v < graph.num_nodes(); ++v) {
        budget += memory_model::ComputeBytes(graph, v);
      }
    }
    int64_t slots = options.slots;
    const int64_t max_entries = options.max_entries;
    const int64_t pairs = static_cast<int64_t>(L) * (L + 1) / 2;
    // The table reaches twice the budget (see the search below).
    slots = std::min(slots, (max_entries / pairs / 2 - 1) / 2);
    if (slots < 1) {
      return AlgorithmOutput::NoSchedule(
          Status::kTooLarge,
          fmt::format("{} stages: the DP table exceeds max_entries={}", L,
                      max_entries));
    }
    const int64_t unit = std::max<int64_t>(1, (budget + slots - 1) / slots);
    const int64_t memory = budget / unit;
    const int64_t top = 2 * memory;
    RotorTable table(st, unit, top);
    if (!table.Fill(request.deadline)) {
      return AlgorithmOutput::NoSchedule(Status::kTimeout,
                                         "deadline reached in the DP");
    }
    if (table.Cost(1, L, top, 0) >= kInf) {
      return AlgorithmOutput::NoSchedule(
          Status::kInfeasible,
          fmt::format(
              "no persistent schedule over the {} stages fits even twice "
              "the budget ({} units of {} bytes) by the DP's accounting; "
              "the largest stage alone needs {} bytes",
              L, top, unit,
              *std::max_element(st.base_peak.begin(), st.base_peak.end())));
    }
    const nlohmann::json note = {
        {"stages", L}, {"unit_bytes", unit}, {"units", memory}};
    const BuildLimits limits = LimitsOf(request, options.max_computes);
    CandidatePool best(graph, request.budget_bytes, {.invalid_is_bug = true});
    std::optional<Status> stop;
    // The builder's own account of why it stopped, kept for the answer.
    std::string stop_message = "deadline reached while building the schedule";
    auto fits_at = [&](int64_t m) {
      BuildResult built = Replay(chain, st, table, m, limits);
      if (!built.schedule) {
        stop = built.status;
        stop_message = std::move(built.message);
        return false;
      }
      nlohmann::json n = note;
      n["dp_units"] = m;
      n["dp_cost"] = table.Cost(1, L, m, 0);
      return best.Offer(std::move(*built.schedule), n);
    };
    // The least DP memory with a schedule at all (cost falls as m grows).
    const int64_t least = BisectKnob(-1, top, [&](int64_t m) {
                            return table.Cost(1, L, m, 0) >= kInf;
                          }).hi;
    // The largest DP memory whose simulated schedule fits the budget,
    // assuming the simulated peak grows with it: the budget itself first
    // (within it by the DP's accounting), then bisection on [least, top].
    int64_t lo = least - 1, hi = top + 1;  // lo fits (or none), hi does not
    const int64_t first = std::max(least, memory);
    (fits_at(first) ? lo : hi) = first;
    if (lo == first && !stop) (fits_at(top) ? lo : hi) = top;
    BisectKnob(lo, hi, fits_at, [&] { return !stop; });
    // The simulated peak need not grow with m, though: the DP overstates
    // it by different amounts for different schedules, and equal-cost
    // choices differ. So the cost levels of Opt(1, L, m) (each a range of
    // m) are tried too, cheapest first, each at both ends of its range,
    // until one fits; the cheapest simulated schedule that fits is kept,
    // and when none does, the one of smallest simulated peak.
    std::vector<std::pair<int64_t, int64_t>> levels;  // [first m, last m]
    for (int64_t m = 0; m <= top; ++m) {
      const int64_t cost = table.Cost(1, L, m, 0);
      if (cost >= kInf) continue;
      if (!levels.empty() && cost == table.Cost(1, L, levels.back().first, 0)) {
        levels.back().second = m;
      } else {
        levels.push_back({m, m});
      }
    }
    for (auto it = levels.rbegin(); it != levels.rend() && !stop; ++it) {
      if (request.deadline.Expired()) {
        stop = Status::kTimeout;
        break;
      }
      const bool low_fits = fits_at(it->first);
      const bool high_fits = it->second != it->first && fits_at(it->second);
      if (low_fits || high_fits) break;
    }
    if (best.empty()) {
      return AlgorithmOutput::NoSchedule(stop.value_or(Status::kError),
                                         stop_message);
    }
    std::string message;
    if (!best.fits()) {
      message = fmt::format(
          "no persistent schedule over the {} stages fits the budget once "
          "simulated; the smallest peak found is {} bytes",
          L, best.peak_bytes());
    }
    return best.Take(stop, message);
  }
};

const bool kRegistered = RegisterAlgorithm({
    .name = "rotor",
    .description = "Optimal persistent checkpointing DP for heterogeneous "
                   "chains over the chain of articulation points",
    .citation = "Beaumont et al., arXiv:1911.13214 (2019), ACM TOMS 2024",
    .exact = false,
    .uses_budget = true,
    .params = kOptions.Specs(),
    .create = [] { return std::make_unique<Rotor>(); },
});

}  // namespace
}  // namespace remat
