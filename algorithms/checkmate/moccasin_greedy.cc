// Greedy schedules of Moccasin's class (moccasin_greedy.h): a walk over the
// interval model's positions in the manner of Belady's replacement rule,
// with recomputation in place of reloading.
#include "algorithms/checkmate/moccasin_greedy.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "algorithms/checkmate/moccasin_cp.h"
#include "model/simulator.h"

namespace remat {
namespace {

// How a walk picks the held value whose interval it ends. Each such value
// is computed again at its next read, from inputs held until then: the
// walk ends only intervals of values whose inputs are all held and that no
// pending recompute reads, so that no recompute needs another.
enum class Rank {
  kFurthestUse,  // the one read again last (Belady), among those whose
                 // inputs are held until then anyway
  kGain,         // the most bytes x stages saved, net of the inputs' longer
                 // holds
  kGainPerCost,  // the same per unit of recompute cost
};

class Walk {
 public:
  Walk(const Graph& graph, const CheckmateModel& model, int64_t budget,
       int computes, Rank rank, const std::vector<int>& keep_until)
      : model_(model),
        n_(static_cast<int>(model.order().size())),
        budget_(budget),
        computes_(computes),
        rank_(rank),
        keep_until_(keep_until),
        cost_(n_),
        intervals_(n_),
        count_(n_, 0),
        held_(n_, 0),
        wanted_(n_, 0),
        reads_left_(n_, 0),
        last_read_(n_, -1),
        next_use_(n_, 0),
        last_need_(n_, 0) {
    for (int k = 0; k < n_; ++k) cost_[k] = graph.cost(model.order()[k]);
  }

  // The intervals, or nullopt where the walk meets a compute it cannot fit
  // or a value it can no longer compute.
  std::optional<RetentionIntervals> Run() {
    for (t_ = 0; t_ < n_; ++t_) {
      t_done_ = false;
      // The stage: node t_ and every input it needs that is not held, and
      // theirs, in index order (inputs have lower indices).
      std::vector<char> marked(n_, 0);
      std::vector<int>& todo = todo_;
      todo.clear();
      std::vector<int> stack = {t_};
      marked[t_] = 1;
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        todo.push_back(x);
        for (int u : model_.inputs()[x]) {
          if (held_[u] || marked[u]) continue;
          if (count_[u] >= computes_) {
            todo.push_back(u);
            return Fail();
          }
          marked[u] = 1;
          stack.push_back(u);
        }
      }
      std::sort(todo.begin(), todo.end());
      for (int x : todo) {
        for (int u : model_.inputs()[x]) ++reads_left_[u];
      }
      Update();
      for (int x : todo) {
        const int64_t p = IntervalPosition(t_, x);
        int64_t need =
            held_bytes_ + model_.mem_bytes()[x] + model_.workspace_bytes()[x];
        while (need > budget_) {
          int victim = PickVictim(true);
          if (victim < 0) victim = PickVictim(false);
          if (victim < 0) return Fail();
          need -= model_.mem_bytes()[victim];
          Close(victim);
        }
        intervals_[x].emplace_back(p, p);
        last_read_[x] = p;
        held_[x] = 1;
        held_bytes_ += model_.mem_bytes()[x];
        ++count_[x];
        for (int u : model_.inputs()[x]) {
          last_read_[u] = p;
          --reads_left_[u];
        }
        if (x == t_) t_done_ = true;
        FreeUnwanted();
      }
    }
    return std::move(intervals_);
  }

  // Where Run failed: the stage, and the values that, kept held until
  // it, might have let it fit (Fail).
  int failed_stage() const { return t_; }
  const std::vector<int>& spent() const { return spent_; }

 private:
  std::nullopt_t Fail() {
    // What to keep until this stage: the values held and spent (computed
    // `computes` times, held to a later read because an earlier eviction
    // used up their recompute: kept, their interval could end here), those
    // this stage recomputes (kept, they are held without their inputs), and
    // the inputs, not held, that keep a held value from being computed
    // again (kept, it could be evicted here).
    spent_.clear();
    std::vector<int8_t> memo(n_, -1);
    for (int i = 0; i < n_; ++i) {
      if (!held_[i] || reads_left_[i] > 0 || model_.mem_bytes()[i] == 0) {
        continue;
      }
      if (count_[i] >= computes_) {
        spent_.push_back(i);
      } else if (!Recomputable(i, memo)) {
        for (int u : model_.inputs()[i]) {
          if (!held_[u]) spent_.push_back(u);
        }
      }
    }
    for (int x : todo_) {
      if (x != t_) spent_.push_back(x);
    }
    return std::nullopt;
  }

  // Whether k's first compute is still ahead.
  bool Ahead(int k) const { return k > t_ || (k == t_ && !t_done_); }

  // Ends i's open interval at its last read.
  void Close(int i) {
    intervals_[i].back().second = last_read_[i];
    held_[i] = 0;
    held_bytes_ -= model_.mem_bytes()[i];
  }

  // wanted_[i]: something ahead may read i (a compute left in this stage, a
  // first compute ahead, or the recompute of a value that is not held and
  // wanted); next_use_[i] and last_need_[i]: the first and last stage of
  // such reads (a pending recompute's at its next use).
  void Update() {
    constexpr int kNever = std::numeric_limits<int>::max();
    for (int i = n_ - 1; i >= 0; --i) {
      bool wanted = reads_left_[i] > 0;
      int next = wanted ? t_ : kNever, last = wanted ? t_ : -1;
      for (int k : model_.consumers()[i]) {
        if (Ahead(k)) {
          wanted = true;
          next = std::min(next, k);
          last = std::max(last, k);
        } else if (!held_[k] && wanted_[k]) {
          wanted = true;
          next = std::min(next, next_use_[k]);
          last = std::max(last, next_use_[k]);
        }
      }
      wanted_[i] = wanted;
      next_use_[i] = next;
      last_need_[i] = last;
    }
  }

  void FreeUnwanted() {
    Update();
    for (int i = 0; i < n_; ++i) {
      if (held_[i] && !wanted_[i] && t_ >= keep_until_[i]) Close(i);
    }
  }

  // Whether i, once not held, can be computed again: within its computes,
  // and each input held or itself computable again.
  bool Recomputable(int i, std::vector<int8_t>& memo) const {
    if (memo[i] >= 0) return memo[i];
    bool ok = count_[i] < computes_;
    for (int u : model_.inputs()[i]) {
      if (!ok) break;
      ok = held_[u] || Recomputable(u, memo);
    }
    memo[i] = ok;
    return ok;
  }

  // The value whose interval to end by the walk's rank, or -1. `simple`:
  // only values whose recompute needs no other (inputs held, no pending
  // recompute reading it); otherwise any that can be computed again, the
  // one with the most bytes x stages saved.
  int PickVictim(bool simple) const {
    std::vector<int8_t> memo;
    if (!simple) memo.assign(n_, -1);
    int best = -1;
    double best_score = 0;
    for (int i = 0; i < n_; ++i) {
      if (!held_[i] || reads_left_[i] > 0 || count_[i] >= computes_ ||
          model_.mem_bytes()[i] == 0 || t_ < keep_until_[i]) {
        continue;
      }
      if (!simple) {
        if (!Recomputable(i, memo)) continue;
        const double score = static_cast<double>(model_.mem_bytes()[i]) *
                             (static_cast<double>(next_use_[i]) - t_);
        if (best < 0 || score > best_score) {
          best = i;
          best_score = score;
        }
        continue;
      }
      bool eligible = true;
      for (int k : model_.consumers()[i]) {
        // A pending recompute reads it.
        if (!Ahead(k) && !held_[k] && wanted_[k]) eligible = false;
      }
      const double next = next_use_[i];
      double extra = 0;  // bytes x stages the inputs are held longer
      for (int u : model_.inputs()[i]) {
        if (!held_[u]) eligible = false;
        const double until = std::max(last_need_[u], t_);
        if (until < next) {
          extra += static_cast<double>(model_.mem_bytes()[u]) * (next - until);
        }
      }
      if (!eligible) continue;
      const double gain =
          static_cast<double>(model_.mem_bytes()[i]) * (next - t_) - extra;
      double score = 0;
      switch (rank_) {
        case Rank::kFurthestUse:
          if (extra > 0) continue;
          score = next + static_cast<double>(model_.mem_bytes()[i]) * 1e-30;
          break;
        case Rank::kGain:
          score = gain;
          break;
        case Rank::kGainPerCost:
          score = gain / static_cast<double>(cost_[i] + 1);
          break;
      }
      if (best < 0 || score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }

  const CheckmateModel& model_;
  const int n_;
  const int64_t budget_;
  const int computes_;
  const Rank rank_;
  const std::vector<int>& keep_until_;  // no eviction or free before it
  std::vector<int64_t> cost_;
  std::vector<int> spent_, todo_;
  RetentionIntervals intervals_;
  std::vector<int> count_;
  std::vector<char> held_, wanted_;
  std::vector<int> reads_left_;  // reads by computes left in this stage
  std::vector<int64_t> last_read_;
  std::vector<int> next_use_, last_need_;
  int64_t held_bytes_ = 0;
  int t_ = 0;
  bool t_done_ = false;
};

}  // namespace

std::optional<Incumbent> GreedyIntervalStart(const Graph& graph,
                                             const CheckmateModel& model,
                                             int64_t budget_bytes, int computes,
                                             const Deadline& deadline,
                                             int max_walks) {
  const int n = static_cast<int>(model.order().size());
  std::optional<Incumbent> best;
  for (Rank rank : {Rank::kFurthestUse, Rank::kGain, Rank::kGainPerCost}) {
    // A walk that fails names the values that, held until its failing
    // stage, might have let it fit there (Fail); the next walk keeps one of
    // them (the largest not tried) from eviction and free until that
    // stage. A lesson stays while the walks fail no sooner, and is undone
    // when they fail sooner; until a walk fits, the lessons run out, or
    // the walks or the time do.
    std::vector<int> keep_until(n, 0);
    std::optional<RetentionIntervals> intervals;
    int reached = -1;             // the latest stage a walk failed at
    std::vector<int> candidates;  // that walk's lessons not yet tried
    int tried = -1, tried_was = 0, walks = 0;
    while (walks < max_walks && (walks == 0 || !deadline.Expired())) {
      ++walks;
      Walk walk(graph, model, budget_bytes, computes, rank, keep_until);
      intervals = walk.Run();
      if (intervals) break;
      if (walk.failed_stage() >= reached) {
        // Got as far or further: keep the lesson, learn this failure's.
        reached = walk.failed_stage();
        candidates.clear();
        for (int i : walk.spent()) {
          if (keep_until[i] < reached) candidates.push_back(i);
        }
        std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
          return std::pair(model.mem_bytes()[a], a) <
                 std::pair(model.mem_bytes()[b], b);
        });
        candidates.erase(std::unique(candidates.begin(), candidates.end()),
                         candidates.end());
      } else if (tried >= 0) {
        keep_until[tried] = tried_was;  // failed sooner: not this one
      }
      if (candidates.empty()) break;
      tried = candidates.back();
      candidates.pop_back();
      tried_was = keep_until[tried];
      keep_until[tried] = reached;
    }
    if (!intervals) continue;
    Schedule schedule = ScheduleOfIntervals(model, *intervals);
    const SimulationResult simulated = Simulate(graph, schedule);
    if (!simulated.valid || simulated.peak_bytes > budget_bytes) continue;
    if (!best || simulated.cost < best->cost) {
      best = Incumbent{std::move(schedule), simulated.cost,
                       "moccasin's greedy walk"};
    }
  }
  return best;
}

}  // namespace remat
