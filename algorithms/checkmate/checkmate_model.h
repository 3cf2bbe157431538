// The Checkmate MILP (Jain et al., MLSys 2020) shared by checkmate_milp and
// checkmate_lp: building the model, turning a schedule into a start point
// for it, and turning a (rounded) solution back into a schedule.
//
// The needed nodes are numbered 0..n-1 in a topological order (the stage
// order: the graph's own by default, or the order in which a schedule
// first computes them) and node t is computed in stage t; stage t may also
// recompute nodes i < t, in increasing order. The staged class depends on
// the stage order; Checkmate's formulation is valid for any topological one.
// Variables (docs/algorithms.md, "checkmate_milp"):
//   R[t,i]  compute i in stage t                 (i <= t; R[t,t] fixed 1)
//   S[t,i]  i is live entering stage t            (i < t)
//   F[t,i,k] free i right after computing k in stage t, for each input i of
//           k and for i = k itself (as in the paper, so that a value nobody
//           in the stage reads is not counted to the end of the stage)
//   U[t,k]  memory at the compute of k in stage t, workspace excluded.
// Memory and costs are divided by their gcd so that CBC works with small
// integers; the objective is then the schedule cost / cost_scale.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/common/warm_start.h"
#include "model/algorithm.h"
#include "model/graph.h"
#include "model/options.h"
#include "model/schedule.h"

class OsiClpSolverInterface;

namespace remat {

// The needed nodes in the order `schedule` first computes them (a
// topological order), or nullopt when it computes a node that is not
// needed or never computes a needed one.
std::optional<std::vector<NodeId>> FirstComputeOrder(
    const Graph& graph, std::span<const Event> schedule);

// The node `schedule` computes most often, and how many times (the first
// such node; node 0 and 0 times when it computes nothing): a schedule that
// computes a value more than C times is outside Moccasin's class.
struct MostComputed {
  NodeId node = 0;
  int times = 0;
};
MostComputed MostComputedNode(const Graph& graph,
                              std::span<const Event> schedule);

class CheckmateModel {
 public:
  // Stages in NoRematOrder(graph).
  CheckmateModel(const Graph& graph, int64_t budget_bytes);
  // Stages in `order`, a topological order of exactly the needed nodes
  // (std::invalid_argument otherwise). `max_computes` > 0 adds Moccasin's
  // rows sum_t R[t,i] <= max_computes (each value computed at most that
  // many times; S already makes each retention interval contiguous and
  // start at a compute).
  // `with_milp` false builds the stage structure alone (order, inputs,
  // consumers, sizes, scales, Staged, RebuildR, Extract): what the interval
  // model and the warm start's staging need, without the O(n^2) columns
  // that take most of the time and memory on 1,000 nodes. The
  // MILP's vectors are then empty, and PointOf, RoundR, RoundS and SampleS
  // throw std::logic_error.
  CheckmateModel(const Graph& graph, int64_t budget_bytes,
                 std::vector<NodeId> order, int max_computes = 0,
                 bool with_milp = true);
  bool has_milp() const { return has_milp_; }

  // The problem in column-major form, ready for Cbc_loadProblem or
  // OsiSolverInterface::loadProblem.
  int num_cols() const { return static_cast<int>(col_lower_.size()); }
  int num_rows() const { return static_cast<int>(row_lower_.size()); }
  const std::vector<int>& col_starts() const { return col_starts_; }
  const std::vector<int>& row_index() const { return row_index_; }
  const std::vector<double>& values() const { return values_; }
  const std::vector<double>& col_lower() const { return col_lower_; }
  const std::vector<double>& col_upper() const { return col_upper_; }
  const std::vector<double>& objective() const { return objective_; }
  const std::vector<double>& row_lower() const { return row_lower_; }
  const std::vector<double>& row_upper() const { return row_upper_; }
  // Integer columns (all but U).
  const std::vector<int>& integer_cols() const { return integer_cols_; }
  // The rows `U[t,k] + workspace_k R[t,k] <= budget`, and their bound for
  // another budget (checkmate_lp solves at a fraction of the budget).
  const std::vector<int>& budget_rows() const { return budget_rows_; }
  double ScaledBudget(int64_t budget_bytes) const;

  // The stage order: node t of the graph is computed in stage t.
  const std::vector<NodeId>& order() const { return node_; }
  // Per stage index: the inputs and consumers (stage indices), and the
  // resident and workspace bytes of its node.
  const std::vector<std::vector<int>>& inputs() const { return inputs_; }
  const std::vector<std::vector<int>>& consumers() const { return consumers_; }
  const std::vector<int64_t>& mem_bytes() const { return mem_; }
  const std::vector<int64_t>& workspace_bytes() const { return workspace_; }

  // Objective value -> cost in the graph's units.
  int64_t cost_scale() const { return cost_scale_; }

  // The point of `schedule` in the model, or nullopt when the schedule is
  // not in the staged class (first computes out of the model's order, a
  // node computed twice in one stage) or breaks a row (its staged memory
  // accounting exceeds the budget).
  std::optional<std::vector<double>> PointOf(
      std::span<const Event> schedule) const;

  // A staged schedule that does what `schedule` does with the same first
  // computes: per stage, the values it keeps that are used later, the
  // cheapest recomputations those need (RebuildR), in index order, each
  // once. Its cost is at most that of `schedule`; its peak can be higher
  // (the order within a stage changes), so simulate it. nullopt when the
  // first computes are not in the model's order or `schedule` computes a
  // node the model does not have.
  std::optional<Schedule> Staged(std::span<const Event> schedule) const;

  // Reads R and S from a solution, rounding at `threshold`.
  std::vector<std::vector<uint8_t>> RoundR(std::span<const double> x,
                                           double threshold) const;
  std::vector<std::vector<uint8_t>> RoundS(std::span<const double> x,
                                           double threshold) const;
  // Randomized rounding (Checkmate, section 5): keeps each value into each
  // stage with the probability its S takes in `x`.
  std::vector<std::vector<uint8_t>> SampleS(std::span<const double> x,
                                            std::mt19937_64& rng) const;
  // The cheapest R consistent with `s`: stage t computes t, every value
  // that `s` keeps into stage t+1 but not into stage t, and every input of
  // those computes that `s` does not keep into stage t.
  std::vector<std::vector<uint8_t>> RebuildR(
      const std::vector<std::vector<uint8_t>>& s) const;
  // Stage by stage: free every live value that `s` does not keep into the
  // stage, compute each node R selects (unless still live), and free each
  // input (and the node) that nothing later in the stage reads and `s`
  // does not keep into the next stage. Valid whenever R satisfies the
  // dependency rows for `s` (RebuildR's always does).
  Schedule Extract(const std::vector<std::vector<uint8_t>>& r,
                   const std::vector<std::vector<uint8_t>>& s) const;

 private:
  int AddCol(double lower, double upper, double cost, bool integer);
  void AddRow(double lower, double upper,
              std::initializer_list<std::pair<int, double>> terms);
  void AddRow(double lower, double upper,
              const std::vector<std::pair<int, double>>& terms);
  // R and S of a schedule read stage by stage (stage t ends at the first
  // compute of node t), or nullopt when its first computes are out of the
  // model's order. A node computed twice in one stage makes it nullopt
  // unless `allow_repeats`.
  struct Stages {
    std::vector<std::vector<uint8_t>> r, s;
  };
  std::optional<Stages> ReadStages(std::span<const Event> schedule,
                                   bool allow_repeats) const;
  void NeedMilp() const;
  int R(int t, int i) const { return r_col_[t][i]; }
  int S(int t, int i) const { return s_col_[t][i]; }  // -1: fixed 0
  void Finish();

  const Graph& graph_;
  std::vector<NodeId> node_;  // stage index -> graph node
  std::vector<int> index_;    // graph node -> stage index (-1: not needed)
  std::vector<std::vector<int>> inputs_, consumers_;  // in stage indices
  std::vector<int64_t> mem_, workspace_;
  int64_t mem_scale_ = 1, cost_scale_ = 1;
  bool has_milp_ = true;

  std::vector<std::vector<int>> r_col_, s_col_, u_col_;
  // free_col_[t][k]: the F columns of the values freed after computing k
  // in stage t, with the stage index of each value.
  std::vector<std::vector<std::vector<std::pair<int, int>>>> free_col_;

  std::vector<double> col_lower_, col_upper_, objective_;
  std::vector<int> integer_cols_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<int> budget_rows_;
  // Rows as (row, col, value) until Finish() sorts them into columns.
  std::vector<std::tuple<int, int, double>> triplets_;
  std::vector<int> col_starts_, row_index_;
  std::vector<double> values_;
};

// The size of the CheckmateModel of `graph` in stage order `order` (and
// `max_computes`, as in its constructor), counted in O(n + edges log n)
// without building it. Memory terms of zero bytes, which the model leaves
// out, are counted: nonzeros is an upper bound.
struct CheckmateModelSize {
  int64_t cols = 0, rows = 0, nonzeros = 0;
};
CheckmateModelSize CountCheckmateModel(const Graph& graph,
                                       std::span<const NodeId> order,
                                       int max_computes = 0);

// The stage order of a Checkmate model: the graph's topological order, the
// first computes of the cheapest heuristic schedule (the incumbent), or the
// compute-once order of least peak found (FindLeastPeakOrder).
enum class StageOrder { kGraph, kIncumbent, kLeastPeak };

// The default warm start of the staged methods: these heuristics, in name
// order, and for checkmate_milp and moccasin also checkmate_lp. A list
// fixed here, not the registry, so that registering a heuristic changes no
// staged result until it is added. rotor is in it because on VGG19 at
// batch 379 its schedule costs 1.033x the base where chen_greedy's, the start
// before, cost 1.096x, and CBC had not improved on the start in 300 s.
// dtr is in it because on the PyTorch ResNet-50 export at 70-90% of the
// NoRemat peak its schedule is the cheapest heuristic's, and without it
// checkmate_milp answered 0.003-0.007% dearer than dtr after 600 s (and
// moccasin on Checkmate's ResNet-50 0.5-0.8% dearer after 60 s).
// order_search is in it because where an order computing each value once
// fits, its schedule costs the base cost and needs no solver
// (BaseCostAnswer); on Checkmate's 100-node random layered graph at 80% of
// the NoRemat peak, checkmate_milp had proven 1.0006x the base cost
// optimal in the stage order it took from the other heuristics.
// checkpoint_reuse is in it so that every heuristic of the registry that
// schedules without offloading is, and the exact methods that start from
// it are never dearer than any of them (their warm start below).
// They run in this order, those that answer in milliseconds first: where a
// slower one overruns its share (a loaded machine), the loop stops at the
// deadline, and dtr, run after the DPs, was cut: moccasin answered 2.6%
// dearer than dtr alone on the U-Net export under a load of 3.
inline constexpr const char* kStagedHeuristics =
    "dtr+checkpoint_reuse+chen_greedy+chen_sqrtn+chen_recursive+revolve+"
    "rotor+noremat+twremat+checkpoint_last+order_search+dp_approx+dp_exact";

// The warm start of the exact staged methods, checkmate_milp and moccasin:
// kStagedHeuristics, then swap_remat, reach_search and checkmate_lp (an LP
// solve in a process of its own). swap_remat plans the heuristics at
// budgets above the request's too, and where one of those schedules fits
// and moves nothing it is its answer: dp_approx planned at 17.7 MB fitted
// the corpus's batch-4 U-Net at 16.8 MB cheaper than any heuristic at
// 16.8 MB (checkmate_milp answered 0.0009% dearer without it). Its
// schedules that move values are never a start (BestStagedStart).
// reach_search fits where no other heuristic does (Checkmate's random
// layered graphs at 70% of the NoRemat peak; random_layered:n=30,seed=3
// below 90%, where checkmate_milp without it had no schedule at 10 s),
// mostly outside the staged classes, and is then the answer (ClassAnswer).
inline constexpr const char* kExactStagedWarmStart =
    "dtr+checkpoint_reuse+chen_greedy+chen_sqrtn+chen_recursive+revolve+"
    "rotor+noremat+twremat+checkpoint_last+order_search+dp_approx+dp_exact+"
    "swap_remat+reach_search+checkmate_lp";

// The default size limits of a staged algorithm (RefuseCheckmateRequest):
// more needed nodes than max_nodes (0: no such limit), or more nonzeros
// than nonzeros_per_second x the seconds left (0: no such limit), is
// too_large.
struct CheckmateLimits {
  int64_t max_nodes = 0;
  double nonzeros_per_second = 0;
};
// checkmate_lp's: its LP's speed was not measured against model size, so
// it keeps the node limit it had.
inline constexpr CheckmateLimits kLpLimits{.max_nodes = 150};
// checkmate_milp's and moccasin's, from the measured speed of the MILP
// solvers (docs/algorithms.md, "Which MILP solver"): no model of 2.0
// million nonzeros or more (random_layered n=250, Checkmate's ResNet-50)
// gave a schedule within 60 s on any solver, while models of 0.11-0.22
// million with a fitting warm start (VGG19, random_layered n=100) were
// proven in 3-15 s or left at gaps of 0.15%; so a model is refused above
// 30,000 nonzeros per second of its time limit, just under the smallest
// size measured to fail (300,000 at run.sh's 10 s, 1.8 million at 60 s).
inline constexpr CheckmateLimits kMilpLimits{.nonzeros_per_second = 30000};

// Loads the model with its integrality dropped (the LP relaxation) into
// `lp`: checkmate_lp rounds its solution; the staged MILP's bound without
// a MILP solver is its value.
void LoadRelaxation(const CheckmateModel& model, OsiClpSolverInterface& lp);

// The options checkmate_milp, checkmate_lp and moccasin share: the three
// BestStagedStart reads and the two limits RefuseCheckmateRequest checks.
struct CheckmateOptions {
  std::vector<std::string> warm_start;
  StageOrder stage_order;
  int64_t max_nodes;           // 0: no such limit
  double nonzeros_per_second;  // 0: no such limit
  double warm_start_seconds;
};
// Their declaration for algorithm `owner`: warm_start (default
// `warm_start`), stage_order, max_nodes and nonzeros_per_second (defaults
// `limits`), warm_start_seconds.
std::vector<OptionField<CheckmateOptions>> CheckmateOptionFields(
    const std::string& owner, const std::string& warm_start,
    const CheckmateLimits& limits);

// Memory per nonzero of the model while Clp solves its LP relaxation
// (checkmate_lp), the model's own arrays included; CBC's MILP needs more.
// Peak resident memory of checkmate_lp -p max_nodes=2000 at half the
// NoRemat peak (2026-11-25): resnet:depth=34 (1.03 million nonzeros)
// 287 MB, 279 B each; resnet:depth=50 (2.00 million) 535 MB, 268 B;
// transformer:layers=12 (2.05 million, stopped at its 300 s limit)
// 479 MB, 234 B; the checkmate_lp run killed at 5 GB on 1,163 nodes, about
// 300 B.
inline constexpr int64_t kCheckmateBytesPerNonzero = 300;

// What a solve builds and runs, and so which limits bind it: the MILP's
// model and a MILP solver; the MILP's model without a MILP solver
// (moccasin's solver=gecode); or neither (moccasin on CP-SAT, whose
// interval model grows with the edges, not with n^2, and has its own limit).
enum class CheckmateLimitsFor { kMilpSolver, kMilpModel, kNoMilp };

// Why checkmate_milp, checkmate_lp and moccasin refuse a request before
// building a model (a budget below the memory lower bound: infeasible; more
// needed nodes than max_nodes, more nonzeros than nonzeros_per_second x
// the seconds left, or a model whose LP would need more than
// MemoryLimit() at kCheckmateBytesPerNonzero or has more columns, rows or
// nonzeros than an int holds: too_large), or nullopt. Without a MILP
// solver the limit by the MILP solvers' speed is skipped; without the
// MILP's model, the limits of its size too.
std::optional<AlgorithmOutput> RefuseCheckmateRequest(
    const Graph& graph, const SolveRequest& request,
    const CheckmateOptions& options,
    CheckmateLimitsFor limits = CheckmateLimitsFor::kMilpSolver);

// The warm start of checkmate_milp and checkmate_lp, and their model: the
// cheapest schedule the algorithms of the warm_start parameter find
// (BestWarmStart) after staging each (CheckmateModel::Staged) in
// the graph's order or, for kIncumbent, in the order of its own first
// computes; and the model staged in the incumbent's order (kIncumbent with
// an incumbent), the graph's (kGraph), or else (kLeastPeak, or kIncumbent
// without an incumbent) the compute-once order of least peak that
// FindLeastPeakOrder finds (compute_once_order.h) within
// warm_start_seconds and a tenth of the time left.
// In the incumbent's order the incumbent is a point of the model when its
// memory rows hold, so the MILP starts no worse than the heuristics; in the
// graph's order often no heuristic schedule is staged.
struct StagedStart {
  StageOrder order;
  std::optional<Incumbent> incumbent;
  CheckmateModel model;
  // The heuristic whose first computes are the stage order, "graph", or
  // "least_peak" (FindLeastPeakOrder's order, where it peaks below the
  // NoRemat order).
  std::string order_source = "graph";
  // The warm-start heuristics whose schedules fit the budget but are not
  // points of the model, each with why ("twremat (staged, it computes node
  // 7 5 times)"): what the answer says when it is dearer than they are.
  std::vector<std::string> outside_class;
  // The cheapest of their schedules, as it fits the budget unstaged.
  std::optional<Incumbent> cheapest_outside;
};
// Each heuristic runs for at most warm_start_seconds and a tenth of the
// time left.
// `max_computes` and `with_milp` (of the model returned) as in
// CheckmateModel's constructor.
StagedStart BestStagedStart(const Graph& graph, const SolveRequest& request,
                            const CheckmateOptions& options,
                            int max_computes = 0, bool with_milp = true);

// A start at the base cost needs no solver: every schedule computes each
// needed node at least once, so it is optimal among all schedules, not
// only the class's, and the base cost is a bound on every algorithm
// (lower_bound_cost). order_search finds such starts wherever an order
// that computes each value once fits the budget.
std::optional<AlgorithmOutput> BaseCostAnswer(const Graph& graph,
                                              const StagedStart& start);

// What an exact method in a class of schedules (checkmate_milp, moccasin)
// answers around its solve, made once its start is known. It offers the
// watchdog (request.standby) the cheaper of the class's start and the
// cheapest fitting schedule outside the class (StagedStart::
// cheapest_outside), as "`solver` did not finish". Answer() is the class's
// answer with the fitting heuristics outside the class named in its
// message and its stage order in extra (stage_order); or that cheaper
// schedule, where the class's answer is dearer or has no schedule (a
// solver need not keep its start: a start the model's rows reject is no
// MIP start, and a solver may stop at a dearer one): an exact method never
// answers dearer than a heuristic it ran, nor nothing when one fits (an
// error stays the answer, since it may hide a bug). The class's bound
// (staged_lower_bound_cost) stays, a bound on its class only; `optimal`
// goes, since the answer is not the class's optimum.
class ClassAnswer {
 public:
  ClassAnswer(const Graph& graph, const SolveRequest& request,
              const StagedStart& start, std::string_view solver);
  AlgorithmOutput Answer(AlgorithmOutput in_class) const;

 private:
  const Graph& graph_;
  int64_t budget_bytes_;
  std::string outside_names_;
  std::string stage_order_;
  // The cheaper of the class's start and the cheapest fitting schedule
  // outside the class; `outside`: it is the latter.
  std::optional<Incumbent> fallback_;
  bool fallback_outside_ = false;
};

}  // namespace remat
