// Builds the lower-set families of Kusumoto et al.'s DPs: the forward graph
// G, every lower set (enumerated without a hash table) or the ancestor
// closures, and the per-set quantities the DP reads (lower_sets.h).
#include "algorithms/kusumoto/lower_sets.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <string_view>
#include <unordered_map>

#include "algorithms/common/forward_backward.h"
#include "model/limits.h"
#include "model/memory_model.h"
#include "model/params.h"
#include "model/simulator.h"

namespace remat {
namespace {

int32_t WordsFor(int32_t n) { return (n + 63) / 64; }

// Whether `to` is `from` or reachable from it in G. Kusumoto's and the
// chain's graphs only ever ask about a direct successor, which `to`'s
// predecessors answer: a value read by 3*10^5 others has as many
// successors, and searching them (with a fresh array of n marks) for each
// of their gradients was quadratic. The search is for other exporters'
// conventions.
class ReachableInG {
 public:
  explicit ReachableInG(const LowerSetGraph& g) : g_(g), seen_(g.size(), 0) {}

  bool operator()(int32_t from, int32_t to) {
    if (from == to) return true;
    const std::span<const int32_t> preds = g_.pred(to);
    if (std::find(preds.begin(), preds.end(), from) != preds.end()) {
      return true;
    }
    ++stamp_;
    stack_.assign(1, from);
    while (!stack_.empty()) {
      const int32_t v = stack_.back();
      stack_.pop_back();
      for (int32_t w : g_.succ(v)) {
        if (w == to) return true;
        if (seen_[w] != stamp_ && w < to) {  // local order is topological
          seen_[w] = stamp_;
          stack_.push_back(w);
        }
      }
    }
    return false;
  }

 private:
  const LowerSetGraph& g_;
  std::vector<int64_t> seen_;
  int64_t stamp_ = 0;
  std::vector<int32_t> stack_;
};

// Every lower set, each generated once without a hash table: in a
// topological numbering the largest member of a lower set is maximal, so
// each nonempty set has one parent (itself minus that member) and the
// children of L are L ∪ {v} for v beyond max(L) whose predecessors are in L.
LowerSetLookup EnumerateAll(const LowerSetGraph& g, int64_t max_sets,
                            const Deadline& deadline,
                            std::vector<uint64_t>& bits) {
  const int32_t n = g.size();
  const int32_t words = WordsFor(n);
  // The sets the memory limit holds (twice: FromBitsets copies them), all
  // reserved at once so that the vector is never copied to grow: doubling
  // gigabytes of the lower sets of a training star (3*10^5 leaves) ran
  // 11 s past --timeout 5. Reserving touches no page.
  const int64_t fit = MemoryLimit() / (2 * 8 * int64_t{words});
  const int64_t capacity = std::min(max_sets, std::max<int64_t>(fit, 1));
  bits.reserve(static_cast<size_t>(capacity) * words);
  bits.assign(words, 0);
  std::vector<std::pair<int64_t, int32_t>> stack = {{0, -1}};  // (set, max)
  int64_t sets = 1, copied = 0;
  while (!stack.empty()) {
    auto [s, top] = stack.back();
    stack.pop_back();
    for (int32_t v = top + 1; v < n; ++v) {
      const uint64_t* set = bits.data() + s * words;
      bool closed = true;
      for (int32_t p : g.pred(v)) {
        if (!((set[p >> 6] >> (p & 63)) & 1)) {
          closed = false;
          break;
        }
      }
      if (!closed) continue;
      if (sets >= max_sets) {
        return {nullptr, Status::kTooLarge,
                fmt::format("more than max_lower_sets={} lower sets (stopped "
                            "at {}; G has {} nodes)",
                            max_sets, sets, n)};
      }
      if (sets >= capacity) {
        return {nullptr, Status::kTooLarge,
                fmt::format("more than {} lower sets of {} nodes, which as "
                            "bitsets need more than the {} of {}",
                            sets, n, FormatBytes(MemoryLimit()),
                            MemoryLimitSource())};
      }
      // Every 4096 sets, or 2^16 words copied when sets are long (n bits
      // each: G of 3*10^5 nodes copied gigabytes between checks).
      copied += words;
      if ((sets & 4095) == 0 || copied >= (1 << 16)) {
        copied = 0;
        if (deadline.Expired()) {
          return {nullptr, Status::kTimeout,
                  fmt::format("deadline reached after enumerating {} lower "
                              "sets",
                              sets)};
        }
      }
      bits.insert(bits.end(), bits.begin() + s * words,
                  bits.begin() + (s + 1) * words);
      bits[sets * words + (v >> 6)] |= uint64_t{1} << (v & 63);
      stack.push_back({sets, v});
      ++sets;
    }
  }
  return {};
}

// For each of all the lower sets (indices into `bits`), the sets L ∪ {v}
// with the node v, ascending in v, found by looking the bitsets up;
// nullopt when `deadline` expires first.
std::optional<std::vector<std::vector<LowerSetFamily::Cover>>> OneNodeCovers(
    const LowerSetGraph& g, const std::vector<uint64_t>& bits,
    const Deadline& deadline) {
  const int32_t n = g.size();
  const int32_t words = WordsFor(n);
  const auto sets = static_cast<int32_t>(bits.size() / words);
  auto view = [&](const uint64_t* set) {
    return std::string_view(reinterpret_cast<const char*>(set),
                            sizeof(uint64_t) * words);
  };
  std::unordered_map<std::string_view, int32_t> index;
  index.reserve(sets);
  for (int32_t s = 0; s < sets; ++s) {
    index.emplace(view(bits.data() + static_cast<size_t>(s) * words), s);
  }
  std::vector<std::vector<LowerSetFamily::Cover>> covers(sets);
  std::vector<uint64_t> grown(words);
  for (int32_t s = 0; s < sets; ++s) {
    if (deadline.Expired()) return std::nullopt;  // a set costs O(n) or more
    const uint64_t* set = bits.data() + static_cast<size_t>(s) * words;
    auto in = [&](int32_t v) { return (set[v >> 6] >> (v & 63)) & 1; };
    for (int32_t v = 0; v < n; ++v) {
      // Only a v whose inputs are all in L makes a lower set, which alone
      // can be found: copying and hashing n bits for every other v made
      // chain:n=20000 run past a minute with --timeout 5.
      if (in(v) || !std::all_of(g.pred(v).begin(), g.pred(v).end(), in)) {
        continue;
      }
      std::copy_n(set, words, grown.begin());
      grown[v >> 6] |= uint64_t{1} << (v & 63);
      auto it = index.find(view(grown.data()));
      if (it != index.end()) covers[s].push_back({it->second, v});
    }
  }
  return covers;
}

// ∅, the ancestor closure {v} ∪ ancestors(v) of every v (distinct: v is
// the only maximal member of its own), and G when no closure is all of G.
// Returns their covers (see LowerSetFamily::ForEachSuperset).
// nullopt when `deadline` expires first.
std::optional<std::vector<std::vector<LowerSetFamily::Cover>>> AncestorClosures(
    const LowerSetGraph& g, std::vector<uint64_t>& bits,
    const Deadline& deadline) {
  const int32_t n = g.size();
  const int32_t words = WordsFor(n);
  bits.assign(static_cast<size_t>(n + 1) * words, 0);
  std::vector<std::vector<LowerSetFamily::Cover>> covers(n + 1);
  bool has_full = false;
  for (int32_t v = 0; v < n; ++v) {
    if ((v & 63) == 63 && deadline.Expired()) return std::nullopt;
    uint64_t* set = bits.data() + static_cast<size_t>(v + 1) * words;
    for (int32_t p : g.pred(v)) {
      const uint64_t* closure =
          bits.data() + static_cast<size_t>(p + 1) * words;
      for (int32_t w = 0; w < words; ++w) set[w] |= closure[w];
    }
    set[v >> 6] |= uint64_t{1} << (v & 63);
    int64_t members = 0;
    for (int32_t w = 0; w < words; ++w) members += std::popcount(set[w]);
    has_full = has_full || members == n;
    if (g.pred(v).empty()) covers[0].push_back({v + 1, v});
    for (int32_t w : g.succ(v)) covers[v + 1].push_back({w + 1, w});
  }
  if (!has_full) {
    bits.resize(bits.size() + words, 0);
    uint64_t* full = bits.data() + bits.size() - words;
    for (int32_t v = 0; v < n; ++v) full[v >> 6] |= uint64_t{1} << (v & 63);
    covers.emplace_back();
    for (int32_t v = 0; v < n; ++v) {
      if (g.succ(v).empty()) covers[v + 1].push_back({n + 1, -1});
    }
  }
  return covers;
}

}  // namespace

std::optional<LowerSetGraph> ExtractLowerSetGraph(const Graph& graph,
                                                  std::string& why) {
  std::optional<ForwardBackward> split = SplitForwardBackward(graph, why);
  if (!split) return std::nullopt;
  const std::vector<uint8_t> needed = NeededNodes(graph);
  LowerSetGraph g;
  g.local.assign(graph.num_nodes(), -1);
  for (NodeId v : split->forward) {
    if (!needed[v]) continue;
    g.local[v] = g.size();
    g.node.push_back(v);
    g.mem.push_back(memory_model::ResidentBytes(graph, v));
    g.cost.push_back(graph.cost(v));
  }
  if (g.size() == 0) {
    why = "no needed forward values";
    return std::nullopt;
  }
  auto name = [&](NodeId v) {
    return fmt::format("{} ('{}')", v, graph.node_name(v));
  };
  // Adjacency inside G; a forward value may only read forward values,
  // because the forward pass runs before any backward node.
  std::vector<std::vector<int32_t>> succ_lists(g.size());
  g.pred_offsets.push_back(0);
  for (int32_t v = 0; v < g.size(); ++v) {
    for (NodeId u : graph.inputs(g.node[v])) {
      if (g.local[u] < 0) {
        why = fmt::format(
            "forward value {} reads {}, which is not a forward "
            "value",
            name(g.node[v]), name(u));
        return std::nullopt;
      }
      g.preds.push_back(g.local[u]);
      succ_lists[g.local[u]].push_back(v);
    }
    g.pred_offsets.push_back(static_cast<int32_t>(g.preds.size()));
  }
  g.succ_offsets.push_back(0);
  for (const auto& list : succ_lists) {
    g.succs.insert(g.succs.end(), list.begin(), list.end());
    g.succ_offsets.push_back(static_cast<int32_t>(g.succs.size()));
  }
  // The backward pass runs segment by segment from the last: a backward
  // node may read gradients only of its own value's descendants, which are
  // in the same or a later segment under every strategy.
  g.backward_of.assign(g.size(), {});
  ReachableInG reaches(g);
  for (NodeId b : graph.topological_order()) {
    if (!needed[b] || split->is_forward[b]) continue;
    if (graph.kind(b) != NodeKind::kBackward) {
      why = fmt::format(
          "needed node {} is of kind {}: the canonical schedule "
          "places only forward and backward nodes",
          name(b), NodeKindName(graph.kind(b)));
      return std::nullopt;
    }
    const int32_t f = g.local[graph.grad_of(b)];
    if (f < 0) {
      why = fmt::format(
          "backward node {} is the gradient of {}, which is not "
          "needed",
          name(b), name(graph.grad_of(b)));
      return std::nullopt;
    }
    for (NodeId u : graph.inputs(b)) {
      if (split->is_forward[u]) continue;
      if (graph.kind(u) != NodeKind::kBackward ||
          !reaches(f, g.local[graph.grad_of(u)])) {
        why = fmt::format(
            "backward node {} reads {}, which is not the "
            "gradient of a descendant of {}",
            name(b), name(u), name(graph.grad_of(b)));
        return std::nullopt;
      }
    }
    g.backward_of[f].push_back(b);
  }
  return g;
}

std::optional<LowerSetFamily> LowerSetFamily::FromBitsets(
    const LowerSetGraph& g, std::vector<uint64_t> bits,
    const std::vector<std::vector<Cover>>& covers, bool one_node_covers,
    const Deadline& deadline) {
  const int32_t n = g.size();
  const int32_t words = WordsFor(n);
  const auto sets = static_cast<int32_t>(bits.size() / words);
  // Unsorted per-set figures first, then one permutation.
  std::vector<int64_t> mem(sets), cost(sets), ab(sets), bmem(sets), bcost(sets);
  std::vector<int32_t> count(sets);
  std::vector<std::vector<int32_t>> boundary(sets);
  std::vector<int32_t> stamp(n, -1), members, outside;
  for (int32_t s = 0; s < sets; ++s) {
    // Each set costs its n bits and its members' edges: for the n ancestor
    // closures of a wide G, O(n^2) in all.
    if ((s & 63) == 63 && deadline.Expired()) return std::nullopt;
    const uint64_t* set = bits.data() + static_cast<size_t>(s) * words;
    auto in = [&](int32_t v) { return (set[v >> 6] >> (v & 63)) & 1; };
    members.clear();
    for (int32_t w = 0; w < words; ++w) {
      for (uint64_t x = set[w]; x; x &= x - 1) {
        members.push_back(w * 64 + std::countr_zero(x));
      }
    }
    count[s] = static_cast<int32_t>(members.size());
    outside.clear();  // A(L), marked with stamp s
    for (int32_t v : members) {
      mem[s] += g.mem[v];
      cost[s] += g.cost[v];
      bool on_boundary = false;
      for (int32_t w : g.succ(v)) {
        if (in(w)) continue;
        on_boundary = true;
        if (stamp[w] != s) {
          stamp[w] = s;
          outside.push_back(w);
          ab[s] += g.mem[w];
        }
      }
      if (on_boundary) {
        boundary[s].push_back(v);
        bmem[s] += g.mem[v];
        bcost[s] += g.cost[v];
      }
    }
    for (size_t i = 0, a_size = outside.size(); i < a_size; ++i) {
      for (int32_t p : g.pred(outside[i])) {
        if (!in(p) && stamp[p] != s) {  // B(L): not in L, not yet in A or B
          stamp[p] = s;
          outside.push_back(p);
          ab[s] += g.mem[p];
        }
      }
    }
  }
  std::vector<int32_t> order(sets);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return mem[a] != mem[b] ? mem[a] < mem[b] : count[a] < count[b];
  });
  LowerSetFamily f;
  f.words_ = words;
  f.node_mem_ = g.mem;
  f.node_cost_ = g.cost;
  f.bits_.resize(bits.size());
  f.boundary_offsets_.push_back(0);
  for (int32_t s : order) {
    std::copy_n(bits.data() + static_cast<size_t>(s) * words, words,
                f.bits_.data() + f.mem_.size() * words);
    f.mem_.push_back(mem[s]);
    f.cost_.push_back(cost[s]);
    f.count_.push_back(count[s]);
    f.ab_mem_.push_back(ab[s]);
    f.boundary_mem_.push_back(bmem[s]);
    f.boundary_cost_.push_back(bcost[s]);
    f.boundary_.insert(f.boundary_.end(), boundary[s].begin(),
                       boundary[s].end());
    f.boundary_offsets_.push_back(static_cast<int32_t>(f.boundary_.size()));
  }
  std::vector<int32_t> position(sets);
  for (int32_t i = 0; i < sets; ++i) position[order[i]] = i;
  f.one_node_covers_ = one_node_covers;
  f.cover_offsets_.push_back(0);
  for (int32_t s : order) {
    for (Cover c : covers[s]) f.covers_.push_back({position[c.set], c.node});
    f.cover_offsets_.push_back(static_cast<int32_t>(f.covers_.size()));
  }
  return f;
}

LowerSetLookup AnalyzeLowerSets(const Graph& graph, LowerSetKind kind,
                                int64_t max_sets, const Deadline& deadline) {
  std::string why;
  std::optional<LowerSetGraph> g = ExtractLowerSetGraph(graph, why);
  if (!g) return {nullptr, Status::kUnsupported, why};
  const LowerSetLookup timeout = {nullptr, Status::kTimeout,
                                  "deadline reached while analysing the "
                                  "lower sets"};
  std::vector<uint64_t> bits;
  std::vector<std::vector<LowerSetFamily::Cover>> covers;
  if (kind == LowerSetKind::kAll) {
    LowerSetLookup failed = EnumerateAll(*g, max_sets, deadline, bits);
    if (failed.status != Status::kFeasible) return failed;
    auto one_node = OneNodeCovers(*g, bits, deadline);
    if (!one_node) return timeout;
    covers = std::move(*one_node);
  } else {
    // A bitset of n bits per node, held twice (FromBitsets copies them in
    // its order): 300,001 forward values would take 22.5 GB.
    const int64_t n = g->size();
    const int64_t bytes = 2 * (n + 2) * WordsFor(g->size()) * 8;
    if (bytes > MemoryLimit()) {
      return {nullptr, Status::kTooLarge,
              fmt::format("the {} ancestor closures of G's {} nodes need "
                          "about {} as bitsets, more than the {} of {}",
                          n + 1, n, FormatBytes(bytes),
                          FormatBytes(MemoryLimit()), MemoryLimitSource())};
    }
    auto closures = AncestorClosures(*g, bits, deadline);
    if (!closures) return timeout;
    covers = std::move(*closures);
  }
  std::optional<LowerSetFamily> family = LowerSetFamily::FromBitsets(
      *g, std::move(bits), covers, kind == LowerSetKind::kAll, deadline);
  if (!family) return timeout;
  auto analysis = std::make_shared<LowerSetAnalysis>();
  analysis->family = std::move(*family);
  analysis->graph = std::move(*g);
  return {analysis};
}

}  // namespace remat
