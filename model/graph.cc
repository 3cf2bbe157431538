#include "model/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>

#include "model/errors.h"
#include "model/limits.h"
#include "model/stop.h"

namespace remat {

const char* NodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kForward:
      return "forward";
    case NodeKind::kBackward:
      return "backward";
    case NodeKind::kLoss:
      return "loss";
    case NodeKind::kOther:
      return "other";
  }
  return "other";
}

std::optional<NodeKind> ParseNodeKind(std::string_view name) {
  for (NodeKind kind : {NodeKind::kForward, NodeKind::kBackward,
                        NodeKind::kLoss, NodeKind::kOther}) {
    if (name == NodeKindName(kind)) return kind;
  }
  return std::nullopt;
}

GraphBuilder& GraphBuilder::set_name(std::string name) {
  name_ = std::move(name);
  return *this;
}

GraphBuilder& GraphBuilder::set_static_bytes(int64_t bytes) {
  if (bytes < 0) {
    throw InputError(
        fmt::format("{}: static_bytes is negative ({})", source_, bytes));
  }
  static_bytes_ = bytes;
  return *this;
}

GraphBuilder& GraphBuilder::set_units(std::string memory, std::string cost) {
  memory_unit_ = std::move(memory);
  cost_unit_ = std::move(cost);
  return *this;
}

GraphBuilder& GraphBuilder::set_provenance(nlohmann::json provenance) {
  provenance_ = std::move(provenance);
  return *this;
}

GraphBuilder& GraphBuilder::add_node(NodeSpec node) {
  edges_ += static_cast<int64_t>(node.inputs.size());
  nodes_.push_back(std::move(node));
  CheckGrowth();
  return *this;
}

void GraphBuilder::Expect(int64_t nodes, int64_t edges) const {
  CheckMemory(GraphBytes(nodes, edges),
              fmt::format("{}: a graph of {} nodes and {} edges", source_,
                          nodes, edges));
}

void GraphBuilder::CheckGrowth() {
  if (nodes_.size() % 65536 == 0) {
    Expect(static_cast<int64_t>(nodes_.size()), edges_);
    ThrowIfStopped();
  }
}

NodeId GraphBuilder::add(NodeKind kind, int64_t mem, int64_t cost,
                         std::vector<NodeId> inputs, std::string name,
                         NodeId grad_of) {
  NodeSpec node;
  node.id = size();
  node.kind = kind;
  node.mem = mem;
  node.cost = cost;
  node.inputs = std::move(inputs);
  node.name = std::move(name);
  node.grad_of = grad_of;
  add_node(std::move(node));
  return size() - 1;
}

void GraphBuilder::Fail(const NodeSpec& node, const std::string& what) const {
  if (node.name.empty()) {
    throw InputError(fmt::format("{}: node {}: {}", source_, node.id, what));
  }
  throw InputError(
      fmt::format("{}: node {} ('{}'): {}", source_, node.id, node.name, what));
}

namespace {

// Adds `value` to `sum`; false on int64 overflow.
bool AddChecked(int64_t& sum, int64_t value) {
  return !__builtin_add_overflow(sum, value, &sum);
}

}  // namespace

Graph GraphBuilder::Build() && {
  const auto n = static_cast<int64_t>(nodes_.size());
  if (n > INT32_MAX - 1) {
    throw InputError(fmt::format("{}: too many nodes ({})", source_, n));
  }

  // Place every node at its id; reject ids out of range or seen twice.
  std::vector<int32_t> slot(n, -1);
  for (int32_t i = 0; i < n; ++i) {
    const NodeSpec& node = nodes_[i];
    if (node.id < 0 || node.id >= n) {
      Fail(node, fmt::format("id out of range (ids must be 0..{})", n - 1));
    }
    if (slot[node.id] != -1) Fail(node, "duplicate id");
    slot[node.id] = i;
  }

  Graph g;
  g.name_ = name_.empty() ? source_ : name_;
  g.static_bytes_ = static_bytes_;
  g.memory_unit_ = memory_unit_;
  g.cost_unit_ = cost_unit_;
  g.provenance_ = std::move(provenance_);
  g.mem_.resize(n);
  g.cost_.resize(n);
  g.workspace_.resize(n);
  g.kind_.resize(n);
  g.grad_of_.resize(n);
  g.is_target_.resize(n);
  g.names_.resize(n);
  g.ops_.resize(n);
  g.in_offsets_.assign(n + 1, 0);
  g.out_offsets_.assign(n + 1, 0);

  // Memory sums start from static_bytes, so that static_bytes plus any
  // peak (total_peak_bytes) fits in int64 too.
  int64_t total_mem = static_bytes_, total_workspace = 0, total_cost = 0;
  std::vector<int32_t> seen_as_input_of(n, -1);
  // A graph of millions of nodes takes seconds: a stop ends it.
  StopPoll stop;
  for (NodeId v = 0; v < n; ++v) {
    stop.Tick();
    NodeSpec& node = nodes_[slot[v]];
    if (node.mem < 0) Fail(node, fmt::format("mem is negative ({})", node.mem));
    if (node.cost < 0) {
      Fail(node, fmt::format("cost is negative ({})", node.cost));
    }
    if (node.workspace < 0) {
      Fail(node, fmt::format("workspace is negative ({})", node.workspace));
    }
    if (!AddChecked(total_mem, node.mem) ||
        !AddChecked(total_workspace, node.workspace) ||
        !AddChecked(total_mem, node.workspace)) {
      Fail(node, static_bytes_ > 0
                     ? "total memory of the graph, static_bytes included, "
                       "overflows int64"
                     : "total memory of the graph overflows int64");
    }
    if (!AddChecked(total_cost, node.cost)) {
      Fail(node, "total cost of the graph overflows int64");
    }
    if (node.grad_of != kNoNode && (node.grad_of < 0 || node.grad_of >= n)) {
      Fail(node, fmt::format("grad_of names unknown node {}", node.grad_of));
    }
    if (node.grad_of == v) Fail(node, "grad_of names the node itself");
    for (NodeId u : node.inputs) {
      if (u < 0 || u >= n) {
        Fail(node, fmt::format("input {} is not a node id", u));
      }
      if (u == v) Fail(node, "reads itself (a cycle)");
      if (seen_as_input_of[u] == v) {
        Fail(node, fmt::format("input {} is listed twice", u));
      }
      seen_as_input_of[u] = v;
      ++g.out_offsets_[u + 1];
    }
    g.in_offsets_[v + 1] = g.in_offsets_[v] + node.inputs.size();
    g.mem_[v] = node.mem;
    g.cost_[v] = node.cost;
    g.workspace_[v] = node.workspace;
    g.kind_[v] = node.kind;
    g.grad_of_[v] = node.grad_of;
    g.names_[v] = node.name.empty() ? fmt::format("n{}", v) : node.name;
    g.ops_[v] = std::move(node.op);
  }

  // CSR in both directions.
  g.in_list_.reserve(g.in_offsets_[n]);
  for (NodeId v = 0; v < n; ++v) {
    const auto& inputs = nodes_[slot[v]].inputs;
    g.in_list_.insert(g.in_list_.end(), inputs.begin(), inputs.end());
  }
  for (NodeId v = 0; v < n; ++v) g.out_offsets_[v + 1] += g.out_offsets_[v];
  g.out_list_.resize(g.out_offsets_[n]);
  {
    std::vector<int64_t> fill(g.out_offsets_.begin(), g.out_offsets_.end() - 1);
    for (NodeId v = 0; v < n; ++v) {
      for (NodeId u : g.inputs(v)) g.out_list_[fill[u]++] = v;
    }
  }

  // Targets: as given, else exactly the nodes without consumers.
  for (NodeId v = 0; v < n; ++v) {
    const auto& target = nodes_[slot[v]].target;
    bool is_target = target.has_value() ? *target : g.consumers(v).empty();
    g.is_target_[v] = is_target;
    if (is_target) g.targets_.push_back(v);
  }

  // Kahn's algorithm, smallest ready id first; it also detects cycles.
  std::vector<int32_t> pending(n);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (NodeId v = 0; v < n; ++v) {
    pending[v] = static_cast<int32_t>(g.inputs(v).size());
    if (pending[v] == 0) ready.push(v);
  }
  g.topo_order_.reserve(n);
  while (!ready.empty()) {
    stop.Tick();
    NodeId v = ready.top();
    ready.pop();
    g.topo_order_.push_back(v);
    for (NodeId w : g.consumers(v)) {
      if (--pending[w] == 0) ready.push(w);
    }
  }
  if (static_cast<int64_t>(g.topo_order_.size()) != n) {
    // Every unordered node has an unordered input; walking inputs from one
    // of them must revisit a node, which lies on a cycle.
    NodeId v = 0;
    while (pending[v] == 0) ++v;
    std::vector<uint8_t> visited(n, 0);
    while (!visited[v]) {
      visited[v] = 1;
      for (NodeId u : g.inputs(v)) {
        if (pending[u] != 0) {
          v = u;
          break;
        }
      }
    }
    Fail(nodes_[slot[v]], "lies on a cycle");
  }
  g.topo_rank_.resize(n);
  for (int32_t i = 0; i < n; ++i) g.topo_rank_[g.topo_order_[i]] = i;
  return g;
}

namespace {

class Fnv1a {
 public:
  void Add(int64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= static_cast<uint64_t>(value >> (8 * i)) & 0xff;
      hash_ *= 0x100000001b3ULL;
    }
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::string ContentHash(const Graph& g) {
  Fnv1a h;
  h.Add(g.num_nodes());
  h.Add(g.static_bytes());
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    h.Add(g.mem(v));
    h.Add(g.cost(v));
    h.Add(g.workspace(v));
    h.Add(static_cast<int64_t>(g.kind(v)));
    h.Add(g.grad_of(v));
    h.Add(g.is_target(v));
    h.Add(static_cast<int64_t>(g.inputs(v).size()));
    for (NodeId u : g.inputs(v)) h.Add(u);
  }
  return fmt::format("{:016x}", h.hash());
}

}  // namespace remat
