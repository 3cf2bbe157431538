// Builds Checkmate's staged MILP (the R, S, F and U variables of Jain et
// al., MLSys 2020) as column-major CBC/CLP input, and maps schedules to and
// from its points. What each row means is in checkmate_model.h.
#include "algorithms/checkmate/checkmate_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "algorithms/common/compute_once_order.h"
#include "model/limits.h"
#include "model/memory_model.h"
#include "model/params.h"
#include "model/simulator.h"

namespace remat {

MostComputed MostComputedNode(const Graph& graph,
                              std::span<const Event> schedule) {
  std::vector<int> computes(graph.num_nodes(), 0);
  MostComputed most;
  for (const Event& e : schedule) {
    if (e.op == Event::Op::kCompute && ++computes[e.node] > most.times) {
      most = {e.node, computes[e.node]};
    }
  }
  return most;
}

std::optional<std::vector<NodeId>> FirstComputeOrder(
    const Graph& graph, std::span<const Event> schedule) {
  const std::vector<uint8_t> needed = NeededNodes(graph);
  std::vector<uint8_t> seen(graph.num_nodes(), 0);
  std::vector<NodeId> order;
  for (const Event& e : schedule) {
    if (e.op != Event::Op::kCompute || seen[e.node]) continue;
    if (!needed[e.node]) return std::nullopt;
    seen[e.node] = 1;
    order.push_back(e.node);
  }
  if (order.size() != static_cast<size_t>(std::count(
                          needed.begin(), needed.end(), uint8_t{1}))) {
    return std::nullopt;
  }
  return order;
}

CheckmateModel::CheckmateModel(const Graph& graph, int64_t budget_bytes)
    : CheckmateModel(graph, budget_bytes, NoRematOrder(graph)) {}

CheckmateModel::CheckmateModel(const Graph& graph, int64_t budget_bytes,
                               std::vector<NodeId> order, int max_computes,
                               bool with_milp)
    : graph_(graph), node_(std::move(order)), has_milp_(with_milp) {
  const int n = static_cast<int>(node_.size());
  const std::vector<uint8_t> needed = NeededNodes(graph);
  index_.assign(graph.num_nodes(), -1);
  for (int i = 0; i < n; ++i) {
    if (!needed[node_[i]] || index_[node_[i]] >= 0) {
      throw std::invalid_argument(
          "stage order repeats a node or has one "
          "that is not needed");
    }
    index_[node_[i]] = i;
  }
  inputs_.resize(n);
  consumers_.resize(n);
  for (int k = 0; k < n; ++k) {
    mem_.push_back(memory_model::ResidentBytes(graph, node_[k]));
    workspace_.push_back(memory_model::TransientBytes(graph, node_[k]));
    for (NodeId u : graph.inputs(node_[k])) {
      // Inputs of a needed node are needed, so -1 means "later in order".
      if (index_[u] < 0 || index_[u] > k) {
        throw std::invalid_argument("stage order is not topological");
      }
      inputs_[k].push_back(index_[u]);
      consumers_[index_[u]].push_back(k);
    }
  }
  if (n != std::count(needed.begin(), needed.end(), uint8_t{1})) {
    throw std::invalid_argument("stage order misses a needed node");
  }
  int64_t mem_gcd = 0, cost_gcd = 0;
  for (int k = 0; k < n; ++k) {
    mem_gcd = std::gcd(mem_gcd, std::gcd(mem_[k], workspace_[k]));
    cost_gcd = std::gcd(cost_gcd, graph.cost(node_[k]));
  }
  mem_scale_ = std::max<int64_t>(mem_gcd, 1);
  cost_scale_ = std::max<int64_t>(cost_gcd, 1);
  if (!with_milp) return;
  auto scaled_mem = [&](int k) { return double(mem_[k] / mem_scale_); };
  const double inf = std::numeric_limits<double>::infinity();

  r_col_.assign(n, std::vector<int>(n, -1));
  s_col_.assign(n, std::vector<int>(n, -1));
  u_col_.assign(n, std::vector<int>(n, -1));
  free_col_.assign(n, std::vector<std::vector<std::pair<int, int>>>(n));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i <= t; ++i) {
      r_col_[t][i] = AddCol(i == t ? 1 : 0, 1,
                            double(graph.cost(node_[i]) / cost_scale_), true);
    }
    for (int i = 0; i < t; ++i) s_col_[t][i] = AddCol(0, 1, 0, true);
    for (int k = 0; k <= t; ++k) {
      u_col_[t][k] = AddCol(0, inf, 0, false);
      for (int i : inputs_[k])
        free_col_[t][k].push_back({AddCol(0, 1, 0, true), i});
      free_col_[t][k].push_back({AddCol(0, 1, 0, true), k});
    }
  }
  const double budget = ScaledBudget(budget_bytes);
  for (int t = 0; t < n; ++t) {
    for (int k = 0; k <= t; ++k) {
      // An input of a computed node is computed in the stage or kept.
      for (int i : inputs_[k]) {
        AddRow(-inf, 0, {{R(t, k), 1}, {R(t, i), -1}, {S(t, i), -1}});
      }
      // Kept into stage t+1 only if kept into t or computed in t.
      if (t + 1 < n) {
        if (k < t) {
          AddRow(-inf, 0, {{S(t + 1, k), 1}, {S(t, k), -1}, {R(t, k), -1}});
        } else {
          AddRow(-inf, 0, {{S(t + 1, k), 1}, {R(t, k), -1}});
        }
      }
      // Memory at the compute of k: what was there before, plus k, minus
      // what was freed after the previous compute.
      std::vector<std::pair<int, double>> terms = {{u_col_[t][k], 1},
                                                   {R(t, k), -scaled_mem(k)}};
      if (k == 0) {
        for (int i = 0; i < t; ++i) terms.push_back({S(t, i), -scaled_mem(i)});
      } else {
        terms.push_back({u_col_[t][k - 1], -1});
        for (auto [col, i] : free_col_[t][k - 1]) {
          terms.push_back({col, scaled_mem(i)});
        }
      }
      AddRow(0, 0, terms);
      budget_rows_.push_back(num_rows());
      AddRow(
          -inf, budget,
          {{u_col_[t][k], 1}, {R(t, k), double(workspace_[k] / mem_scale_)}});
      // F[t,i,k] = 1 exactly when k is computed, i is not kept into t+1
      // and no later consumer of i is computed in stage t, i.e. when
      // h = (1 - R[t,k]) + S[t+1,i] + sum R[t,j] is 0:
      // 1 - F <= h and kappa (1 - F) >= h, kappa = 2 + #later consumers.
      for (auto [col, i] : free_col_[t][k]) {
        std::vector<std::pair<int, double>> h = {{R(t, k), -1}};
        if (t + 1 < n) h.push_back({S(t + 1, i), 1});
        double kappa = 2;
        for (int j : consumers_[i]) {
          if (j > k && j <= t) {
            h.push_back({R(t, j), 1});
            ++kappa;
          }
        }
        h.push_back({col, 1});
        AddRow(0, inf, h);
        h.back().second = kappa;
        AddRow(-inf, kappa - 1, h);
      }
    }
  }
  if (max_computes > 0) {
    for (int i = 0; i < n; ++i) {
      std::vector<std::pair<int, double>> computes;
      for (int t = i; t < n; ++t) computes.push_back({R(t, i), 1});
      AddRow(-inf, max_computes, computes);
    }
  }
  Finish();
}

CheckmateModelSize CountCheckmateModel(const Graph& graph,
                                       std::span<const NodeId> order,
                                       int max_computes) {
  const auto n = static_cast<int64_t>(order.size());
  std::vector<int64_t> index(graph.num_nodes(), -1);
  for (int64_t k = 0; k < n; ++k) index[order[k]] = k;
  // Per stage index: its inputs, and its consumers in increasing order.
  std::vector<std::vector<int64_t>> inputs(n), consumers(n);
  for (int64_t k = 0; k < n; ++k) {
    for (NodeId u : graph.inputs(order[k])) {
      inputs[k].push_back(index[u]);
      consumers[index[u]].push_back(k);
    }
  }
  // later[i][m]: sum of n - j over consumers[i][m..], the F-row terms
  // R[t,j] (k < j <= t) of value i summed over the stages t >= k.
  std::vector<std::vector<int64_t>> later(n);
  for (int64_t i = 0; i < n; ++i) {
    later[i].assign(consumers[i].size() + 1, 0);
    for (size_t m = consumers[i].size(); m-- > 0;) {
      later[i][m] = later[i][m + 1] + (n - consumers[i][m]);
    }
  }
  CheckmateModelSize size;
  const int64_t pairs = n * (n + 1) / 2;        // (t, k) with k <= t
  size.cols = pairs + n * (n - 1) / 2 + pairs;  // R, S, U
  // Keep rows, for t < n - 1: t rows of 3 terms and one of 2.
  size.rows = n * (n - 1) / 2;
  size.nonzeros = 3 * ((n - 1) * (n - 2) / 2) + 2 * (n - 1);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t stages = n - k;  // t = k .. n-1
    const auto d = static_cast<int64_t>(inputs[k].size());
    size.cols += stages * (d + 1);  // F
    // Dependency rows (3 terms each), the memory row and the budget row.
    size.rows += stages * (d + 2);
    size.nonzeros += stages * (3 * d + 2);
    // The memory row: U, R, and S of every earlier value (k = 0) or the
    // previous U and the F columns of the previous compute.
    size.nonzeros += k == 0 ? 2 * stages + (n - 1) * n / 2
                            : stages * (3 + inputs[k - 1].size() + 1);
    // Two F rows per F column: R[t,k], S[t+1,i] below the last stage, the
    // column, and R[t,j] of the consumers j of i with k < j <= t.
    std::vector<int64_t> freed = inputs[k];
    freed.push_back(k);
    for (int64_t i : freed) {
      const auto first_later = static_cast<size_t>(
          std::upper_bound(consumers[i].begin(), consumers[i].end(), k) -
          consumers[i].begin());
      size.rows += 2 * stages;
      size.nonzeros += 2 * (3 * stages - 1 + later[i][first_later]);
    }
  }
  if (max_computes > 0) {
    size.rows += n;
    size.nonzeros += pairs;
  }
  return size;
}

void CheckmateModel::NeedMilp() const {
  if (!has_milp_) {
    throw std::logic_error("the Checkmate model was built without its MILP");
  }
}

double CheckmateModel::ScaledBudget(int64_t budget_bytes) const {
  return std::floor(double(budget_bytes / mem_scale_));
}

int CheckmateModel::AddCol(double lower, double upper, double cost,
                           bool integer) {
  const int col = num_cols();
  col_lower_.push_back(lower);
  col_upper_.push_back(upper);
  objective_.push_back(cost);
  if (integer) integer_cols_.push_back(col);
  return col;
}

void CheckmateModel::AddRow(
    double lower, double upper,
    std::initializer_list<std::pair<int, double>> terms) {
  AddRow(lower, upper, std::vector<std::pair<int, double>>(terms));
}

void CheckmateModel::AddRow(double lower, double upper,
                            const std::vector<std::pair<int, double>>& terms) {
  const int row = num_rows();
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
  for (auto [col, value] : terms) {
    if (col >= 0 && value != 0) triplets_.push_back({col, row, value});
  }
}

void CheckmateModel::Finish() {
  std::sort(triplets_.begin(), triplets_.end());
  col_starts_.assign(num_cols() + 1, 0);
  for (const auto& [col, row, value] : triplets_) {
    ++col_starts_[col + 1];
    row_index_.push_back(row);
    values_.push_back(value);
  }
  std::partial_sum(col_starts_.begin(), col_starts_.end(), col_starts_.begin());
  triplets_.clear();
  triplets_.shrink_to_fit();
}

std::optional<CheckmateModel::Stages> CheckmateModel::ReadStages(
    std::span<const Event> schedule, bool allow_repeats) const {
  const int n = static_cast<int>(node_.size());
  Stages stages;
  stages.r.assign(n, std::vector<uint8_t>(n, 0));
  stages.s = stages.r;
  std::vector<uint8_t> live(n, 0), computed(n, 0);
  int next_stage = 0;
  bool stage_open = false;
  for (const Event& e : schedule) {
    const int v = index_[e.node];
    if (v < 0) return std::nullopt;
    if (e.op == Event::Op::kFree) {
      live[v] = 0;
      continue;
    }
    if (next_stage >= n) return std::nullopt;
    const int t = next_stage;
    if (!stage_open) {
      for (int i = 0; i < t; ++i) stages.s[t][i] = live[i];
      stage_open = true;
    }
    if (!computed[v] && v != t) return std::nullopt;
    if (stages.r[t][v] && !allow_repeats) return std::nullopt;
    stages.r[t][v] = 1;
    computed[v] = 1;
    live[v] = 1;
    if (v == t) {
      ++next_stage;
      stage_open = false;
    }
  }
  if (next_stage != n) return std::nullopt;
  return stages;
}

std::optional<Schedule> CheckmateModel::Staged(
    std::span<const Event> schedule) const {
  std::optional<Stages> stages = ReadStages(schedule, true);
  if (!stages) return std::nullopt;
  auto& [r, s] = *stages;
  // Keep a value into stage t only if stage t reads it or it is kept on:
  // a value the schedule held idle would count against the budget for the
  // whole stage in the model. Backwards, since keeping on is decided later.
  const int n = static_cast<int>(node_.size());
  for (int t = n - 1; t >= 0; --t) {
    // A named reference: C++20 lets lambdas capture structured bindings
    // but clang 14 does not, and the TSan build is clang's.
    const auto& computed = r[t];
    for (int i = 0; i < t; ++i) {
      if (!s[t][i] || (t + 1 < n && s[t + 1][i])) continue;
      s[t][i] = std::any_of(consumers_[i].begin(), consumers_[i].end(),
                            [&](int j) { return j <= t && computed[j]; });
    }
  }
  return Extract(RebuildR(s), s);
}

std::optional<std::vector<double>> CheckmateModel::PointOf(
    std::span<const Event> schedule) const {
  NeedMilp();
  const std::optional<Stages> stages = ReadStages(schedule, false);
  if (!stages) return std::nullopt;
  const auto& [r, s] = *stages;
  const int n = static_cast<int>(node_.size());
  std::vector<double> x(num_cols(), 0);
  for (int t = 0; t < n; ++t) {
    double memory = 0;
    for (int i = 0; i < t; ++i) {
      x[S(t, i)] = s[t][i];
      memory += s[t][i] * double(mem_[i] / mem_scale_);
    }
    for (int k = 0; k <= t; ++k) {
      x[R(t, k)] = r[t][k];
      memory += r[t][k] * double(mem_[k] / mem_scale_);
      x[u_col_[t][k]] = memory;
      for (auto [col, i] : free_col_[t][k]) {
        bool freed = r[t][k] && !(t + 1 < n && s[t + 1][i]);
        for (int j : consumers_[i]) {
          if (j > k && j <= t && r[t][j]) freed = false;
        }
        x[col] = freed;
        if (freed) memory -= double(mem_[i] / mem_scale_);
      }
    }
  }
  std::vector<double> activity(num_rows(), 0);
  for (int col = 0; col < num_cols(); ++col) {
    for (int p = col_starts_[col]; p < col_starts_[col + 1]; ++p) {
      activity[row_index_[p]] += values_[p] * x[col];
    }
  }
  for (int row = 0; row < num_rows(); ++row) {
    const double tolerance = 1e-6 * (1 + std::abs(activity[row]));
    if (activity[row] < row_lower_[row] - tolerance ||
        activity[row] > row_upper_[row] + tolerance) {
      return std::nullopt;
    }
  }
  return x;
}

namespace {

// The n x n 0/1 matrix of a stage-by-value variable: entry [t][i] is
// decide(t, i), asked row by row, for the values a stage can hold (i < t
// for S; also i == t, with `diagonal`, for R); the rest are 0.
template <typename Decide>
std::vector<std::vector<uint8_t>> StageMatrix(int n, bool diagonal,
                                              Decide decide) {
  std::vector<std::vector<uint8_t>> m(n, std::vector<uint8_t>(n, 0));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < t + (diagonal ? 1 : 0); ++i) m[t][i] = decide(t, i);
  }
  return m;
}

}  // namespace

std::vector<std::vector<uint8_t>> CheckmateModel::RoundR(
    std::span<const double> x, double threshold) const {
  NeedMilp();
  return StageMatrix(static_cast<int>(node_.size()), /*diagonal=*/true,
                     [&](int t, int i) { return x[R(t, i)] > threshold; });
}

std::vector<std::vector<uint8_t>> CheckmateModel::RoundS(
    std::span<const double> x, double threshold) const {
  NeedMilp();
  return StageMatrix(static_cast<int>(node_.size()), /*diagonal=*/false,
                     [&](int t, int i) { return x[S(t, i)] > threshold; });
}

std::vector<std::vector<uint8_t>> CheckmateModel::SampleS(
    std::span<const double> x, std::mt19937_64& rng) const {
  NeedMilp();
  std::uniform_real_distribution<double> uniform(0, 1);
  return StageMatrix(static_cast<int>(node_.size()), /*diagonal=*/false,
                     [&](int t, int i) { return uniform(rng) < x[S(t, i)]; });
}

std::vector<std::vector<uint8_t>> CheckmateModel::RebuildR(
    const std::vector<std::vector<uint8_t>>& s) const {
  const int n = static_cast<int>(node_.size());
  std::vector<std::vector<uint8_t>> r(n, std::vector<uint8_t>(n, 0));
  for (int t = 0; t < n; ++t) {
    r[t][t] = 1;
    if (t + 1 < n) {
      for (int i = 0; i < t; ++i) r[t][i] = s[t + 1][i] && !s[t][i];
    }
    // Inputs have smaller indices, so one descending pass closes R.
    for (int k = t; k >= 0; --k) {
      if (!r[t][k]) continue;
      for (int i : inputs_[k]) {
        if (!s[t][i]) r[t][i] = 1;
      }
    }
  }
  return r;
}

Schedule CheckmateModel::Extract(
    const std::vector<std::vector<uint8_t>>& r,
    const std::vector<std::vector<uint8_t>>& s) const {
  const int n = static_cast<int>(node_.size());
  std::vector<uint8_t> live(n, 0);
  Schedule schedule;
  auto release = [&](int i) {
    live[i] = 0;
    schedule.push_back(Event::Free(node_[i]));
  };
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < n; ++i) {
      if (live[i] && !(i < t && s[t][i])) release(i);
    }
    auto kept_on = [&](int i) { return t + 1 < n && s[t + 1][i]; };
    for (int k = 0; k <= t; ++k) {
      if (!r[t][k]) continue;
      if (!live[k]) {
        schedule.push_back(Event::Compute(node_[k]));
        live[k] = 1;
      }
      std::vector<int> done = inputs_[k];
      done.push_back(k);
      for (int i : done) {
        if (!live[i] || kept_on(i)) continue;
        const bool read_later =
            std::any_of(consumers_[i].begin(), consumers_[i].end(),
                        [&](int j) { return j > k && j <= t && r[t][j]; });
        if (!read_later) release(i);
      }
    }
  }
  return schedule;
}

std::optional<AlgorithmOutput> RefuseCheckmateRequest(
    const Graph& graph, const SolveRequest& request,
    const CheckmateOptions& options, CheckmateLimitsFor limits) {
  if (request.budget_bytes < MemoryLowerBound(graph)) {
    return AlgorithmOutput::NoSchedule(
        Status::kInfeasible, "budget is below the memory lower bound");
  }
  const int64_t max_nodes = options.max_nodes;
  const std::vector<NodeId> order = NoRematOrder(graph);
  if (max_nodes > 0 && static_cast<int64_t>(order.size()) > max_nodes) {
    return AlgorithmOutput::NoSchedule(
        Status::kTooLarge,
        fmt::format("{} needed nodes > max_nodes={} (the model has n "
                    "binaries per edge and per node)",
                    order.size(), max_nodes));
  }
  if (limits == CheckmateLimitsFor::kNoMilp) return std::nullopt;
  // A raised max_nodes lets in models that Clp cannot hold: once
  // checkmate_lp with max_nodes=2000 on 1,163 nodes grew to 5 GB before it
  // was killed. The stage order the algorithm ends up with may differ from
  // the graph's, which changes the count a little, not its scale.
  const CheckmateModelSize size = CountCheckmateModel(graph, order);
  const std::string model =
      fmt::format("the model would have {} columns, {} rows and {} nonzeros",
                  size.cols, size.rows, size.nonzeros);
  if (std::max({size.cols, size.rows, size.nonzeros}) > INT_MAX) {
    return AlgorithmOutput::NoSchedule(
        Status::kTooLarge,
        fmt::format("{}: more than the solvers' int indices hold (lower "
                    "max_nodes={})",
                    model, max_nodes));
  }
  const double per_second = options.nonzeros_per_second;
  const double seconds = request.deadline.SecondsLeft();
  if (limits == CheckmateLimitsFor::kMilpSolver && per_second > 0 &&
      seconds < 1e9 &&
      static_cast<double>(size.nonzeros) > per_second * seconds) {
    return AlgorithmOutput::NoSchedule(
        Status::kTooLarge,
        fmt::format("{}: more than the {:.0f} (nonzeros_per_second={} x the "
                    "{:.1f} s left) that the MILP solvers were measured to "
                    "answer in time (docs/algorithms.md); raise the time "
                    "limit or nonzeros_per_second",
                    model, per_second * seconds, per_second, seconds));
  }
  const int64_t bytes = size.nonzeros * kCheckmateBytesPerNonzero;
  if (bytes > MemoryLimit()) {
    return AlgorithmOutput::NoSchedule(
        Status::kTooLarge,
        fmt::format("{}: about {} to solve even its LP relaxation, more than "
                    "the {} of {} (lower max_nodes={})",
                    model, FormatBytes(bytes), FormatBytes(MemoryLimit()),
                    MemoryLimitSource(), max_nodes));
  }
  return std::nullopt;
}

std::vector<OptionField<CheckmateOptions>> CheckmateOptionFields(
    const std::string& owner, const std::string& warm_start,
    const CheckmateLimits& limits) {
  return {
      ListOption(&CheckmateOptions::warm_start,
                 WarmStartParam(owner, warm_start)),
      ChoiceOption(&CheckmateOptions::stage_order, "stage_order",
                   StageOrder::kIncumbent,
                   {{"incumbent", StageOrder::kIncumbent},
                    {"graph", StageOrder::kGraph},
                    {"least_peak", StageOrder::kLeastPeak}},
                   "stage order of the model: incumbent (the first computes "
                   "of the cheapest heuristic schedule, which staged is the "
                   "MILP's start; where none is staged within the budget, "
                   "the compute-once order of least peak found), graph "
                   "(the graph's topological order) or least_peak (the "
                   "compute-once order of least peak found)"),
      IntOption(&CheckmateOptions::max_nodes, "max_nodes", limits.max_nodes,
                "refuse (too_large) graphs with more needed nodes than this "
                "(0: no such limit; the model grows with n^2)"),
      DoubleOption(&CheckmateOptions::nonzeros_per_second,
                   "nonzeros_per_second", limits.nonzeros_per_second,
                   "refuse (too_large) models with more nonzeros than this x "
                   "the seconds left (0: no such limit; the default is the "
                   "MILP solvers' measured speed, docs/algorithms.md)"),
      DoubleOption(&CheckmateOptions::warm_start_seconds, "warm_start_seconds",
                   5,
                   "time limit of each heuristic run for the warm start "
                   "(together at most a quarter of the time left)")};
}

std::optional<AlgorithmOutput> BaseCostAnswer(const Graph& graph,
                                              const StagedStart& start) {
  const int64_t base_cost = BaseCost(graph);
  if (!start.incumbent || start.incumbent->cost > base_cost) {
    return std::nullopt;
  }
  AlgorithmOutput out = AlgorithmOutput::Found(
      start.incumbent->schedule,
      fmt::format("warm start {} costs the base cost, which bounds every "
                  "schedule: optimal, no solver run",
                  start.incumbent->algorithm));
  out.optimal = true;
  out.lower_bound_cost = base_cost;
  out.staged_lower_bound_cost = base_cost;
  out.extra["stage_order"] = start.order_source;
  return out;
}

ClassAnswer::ClassAnswer(const Graph& graph, const SolveRequest& request,
                         const StagedStart& start, std::string_view solver)
    : graph_(graph),
      budget_bytes_(request.budget_bytes),
      stage_order_(start.order_source),
      fallback_(start.incumbent) {
  if (!start.outside_class.empty()) {
    outside_names_ = fmt::format("; fitting heuristics outside the class: {}",
                                 fmt::join(start.outside_class, ", "));
  }
  if (start.cheapest_outside &&
      (!fallback_ || start.cheapest_outside->cost < fallback_->cost)) {
    fallback_ = start.cheapest_outside;
    fallback_outside_ = true;
  }
  if (request.standby && fallback_) {
    AlgorithmOutput standby = AlgorithmOutput::Found(
        fallback_->schedule, fmt::format("{} did not finish; warm start: {}",
                                         solver, fallback_->algorithm));
    standby.status = Status::kTimeout;
    request.standby->Offer(std::move(standby));
  }
}

AlgorithmOutput ClassAnswer::Answer(AlgorithmOutput in_class) const {
  in_class.message += outside_names_;
  in_class.extra["stage_order"] = stage_order_;
  if (!fallback_ || in_class.status == Status::kError) return in_class;
  if (in_class.schedule) {
    const SimulationResult sim = Simulate(graph_, *in_class.schedule);
    if (sim.valid && sim.peak_bytes <= budget_bytes_ &&
        sim.cost <= fallback_->cost) {
      return in_class;
    }
  }
  AlgorithmOutput out = AlgorithmOutput::Found(
      fallback_->schedule,
      fmt::format("{}'s schedule (cost {}){}, {}: {}", fallback_->algorithm,
                  fallback_->cost,
                  fallback_outside_ ? ", outside the class" : ", the start",
                  in_class.schedule ? "is cheaper than the class's answer"
                                    : "fits where the class has no schedule",
                  in_class.message));
  // Out of time, the class may still hold a cheaper schedule.
  if (in_class.status == Status::kTimeout) out.status = Status::kTimeout;
  out.staged_lower_bound_cost = in_class.staged_lower_bound_cost;
  out.extra = std::move(in_class.extra);
  if (fallback_outside_) out.extra["outside_class"] = fallback_->algorithm;
  return out;
}

StagedStart BestStagedStart(const Graph& graph, const SolveRequest& request,
                            const CheckmateOptions& options, int max_computes,
                            bool with_milp) {
  const int64_t budget_bytes = request.budget_bytes;
  const StageOrder order = options.stage_order;
  // The compute-once order of least peak found: below its peak every
  // schedule of the class recomputes, and each byte it saves is a byte
  // left for keeping values (docs/algorithms.md, "checkmate_milp"). It gets
  // a heuristic's time, no time where the heuristics get none
  // (warm_start_seconds=0; Deadline::In(0) would be no deadline).
  // With its order_source: "least_peak", or "graph" where it found none
  // below NoRemat's.
  using SourcedModel = std::pair<CheckmateModel, std::string>;
  auto least_peak = [&]() -> SourcedModel {
    LeastPeakOrder least = FindLeastPeakOrder(
        graph, OrderSearchOptions{},
        Deadline::In(std::max(std::min(options.warm_start_seconds,
                                       request.deadline.SecondsLeft() / 10),
                              1e-9)));
    const bool lower = least.peak_bytes < NoRematPeak(graph);
    return {CheckmateModel(graph, budget_bytes, std::move(least.order),
                           max_computes, with_milp),
            lower ? "least_peak" : "graph"};
  };
  // The model where its order does not follow the incumbent.
  std::optional<SourcedModel> fixed_order;
  if (order == StageOrder::kGraph) {
    fixed_order.emplace(CheckmateModel(graph, budget_bytes, NoRematOrder(graph),
                                       max_computes, with_milp),
                        "graph");
  } else if (order == StageOrder::kLeastPeak) {
    fixed_order.emplace(least_peak());
  }
  // A staged schedule that computes a value more than max_computes times
  // is no point of the model, so it cannot be the MIP start: a dearer one
  // within the cap can. `why`: why the last schedule was dropped.
  std::string why;
  auto within_cap = [&](std::optional<Schedule> s) -> std::optional<Schedule> {
    if (!s) {
      why = "its first computes give no staged schedule";
      return s;
    }
    if (max_computes <= 0) return s;
    if (const MostComputed most = MostComputedNode(graph, *s);
        most.times > max_computes) {
      why = fmt::format("staged, it computes node {} {} times", most.node,
                        most.times);
      return std::nullopt;
    }
    return s;
  };
  // The staged classes compute and free only: a schedule that moves values
  // to host memory is neither a start nor, outside the class, an answer
  // (its cost leaves out the copies' time).
  auto moves_values = [](const Schedule& s) {
    return std::ranges::any_of(s, &Event::is_transfer);
  };
  auto staged = [&](const Schedule& s) -> std::optional<Schedule> {
    if (moves_values(s)) return std::nullopt;
    if (fixed_order) return within_cap(fixed_order->first.Staged(s));
    std::optional<std::vector<NodeId>> first = FirstComputeOrder(graph, s);
    if (!first) {
      why = "it computes a node that is not needed or misses a needed one";
      return std::nullopt;
    }
    return within_cap(
        CheckmateModel(graph, budget_bytes, std::move(*first), 0, with_milp)
            .Staged(s));
  };
  std::vector<std::string> outside;
  std::optional<Incumbent> cheapest_outside;
  auto dropped = [&](const Incumbent& fitting, bool over_budget) {
    if (moves_values(fitting.schedule)) return;
    outside.push_back(
        fmt::format("{} ({})", fitting.algorithm,
                    over_budget ? "staged, its peak is over the budget" : why));
    if (!cheapest_outside || fitting.cost < cheapest_outside->cost) {
      cheapest_outside = fitting;
    }
  };
  // The heuristics together get at most a quarter of the time left: the
  // rest is the solver's.
  const double heuristics = static_cast<double>(options.warm_start.size());
  std::optional<Incumbent> incumbent = BestWarmStart(
      graph, request, options.warm_start,
      std::min(options.warm_start_seconds,
               request.deadline.SecondsLeft() / 4 / std::max(1.0, heuristics)),
      staged, dropped);
  if (fixed_order) {
    return {order,
            std::move(incumbent),
            std::move(fixed_order->first),
            std::move(fixed_order->second),
            std::move(outside),
            std::move(cheapest_outside)};
  }
  if (!incumbent) {
    // No heuristic offers an order with a schedule of the class.
    auto [model, source] = least_peak();
    return {order,
            std::nullopt,
            std::move(model),
            std::move(source),
            std::move(outside),
            std::move(cheapest_outside)};
  }
  CheckmateModel model(graph, budget_bytes,
                       *FirstComputeOrder(graph, incumbent->schedule),
                       max_computes, with_milp);
  std::string source = incumbent->algorithm;
  return {order,
          std::move(incumbent),
          std::move(model),
          std::move(source),
          std::move(outside),
          std::move(cheapest_outside)};
}

void LoadRelaxation(const CheckmateModel& model, OsiClpSolverInterface& lp) {
  lp.loadProblem(model.num_cols(), model.num_rows(), model.col_starts().data(),
                 model.row_index().data(), model.values().data(),
                 model.col_lower().data(), model.col_upper().data(),
                 model.objective().data(), model.row_lower().data(),
                 model.row_upper().data());
}

}  // namespace remat
