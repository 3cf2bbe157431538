// The computation graph of docs/model.md: an immutable DAG whose nodes
// are values with a size, a compute cost and a workspace.
//
// Storage is compact (structure of arrays, both adjacency directions in CSR
// form) because the simulator and the algorithms walk it in hot loops. A
// Graph can only be made by GraphBuilder, which checks everything once, so
// code that receives a Graph may rely on: ids 0..n-1, no cycles, no duplicate
// inputs, non-negative sizes, and no int64 overflow when summing all sizes
// and workspaces (with static_bytes) or all costs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace remat {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

enum class NodeKind : uint8_t { kForward, kBackward, kLoss, kOther };

const char* NodeKindName(NodeKind kind);
// Returns nullopt for an unknown name.
std::optional<NodeKind> ParseNodeKind(std::string_view name);

// One node as a reader or generator describes it.
struct NodeSpec {
  NodeId id = kNoNode;
  std::string name;  // empty: "n<id>"
  NodeKind kind = NodeKind::kForward;
  std::string op;
  int64_t mem = 0;
  int64_t cost = 0;
  int64_t workspace = 0;
  NodeId grad_of = kNoNode;
  std::optional<bool>
      target;  // unset: true exactly for nodes without consumers
  std::vector<NodeId> inputs;
};

class Graph {
 public:
  int32_t num_nodes() const { return static_cast<int32_t>(mem_.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(in_list_.size()); }

  int64_t mem(NodeId v) const { return mem_[v]; }
  int64_t cost(NodeId v) const { return cost_[v]; }
  int64_t workspace(NodeId v) const { return workspace_[v]; }
  NodeKind kind(NodeId v) const { return kind_[v]; }
  NodeId grad_of(NodeId v) const { return grad_of_[v]; }
  bool is_target(NodeId v) const { return is_target_[v] != 0; }
  const std::string& node_name(NodeId v) const { return names_[v]; }
  const std::string& op(NodeId v) const { return ops_[v]; }

  std::span<const NodeId> inputs(NodeId v) const {
    return {in_list_.data() + in_offsets_[v],
            in_list_.data() + in_offsets_[v + 1]};
  }
  std::span<const NodeId> consumers(NodeId v) const {
    return {out_list_.data() + out_offsets_[v],
            out_list_.data() + out_offsets_[v + 1]};
  }

  // Kahn's order, smallest ready id first: the one deterministic
  // topological order every tool uses.
  std::span<const NodeId> topological_order() const { return topo_order_; }
  // Position of each node in topological_order().
  int32_t topo_rank(NodeId v) const { return topo_rank_[v]; }
  std::span<const NodeId> targets() const { return targets_; }

  const std::string& name() const { return name_; }
  int64_t static_bytes() const { return static_bytes_; }
  const std::string& memory_unit() const { return memory_unit_; }
  const std::string& cost_unit() const { return cost_unit_; }
  // Free-form description of where the graph came from (generator spec,
  // source file, exporter command); written back unchanged.
  const nlohmann::json& provenance() const { return provenance_; }

 private:
  friend class GraphBuilder;
  Graph() = default;

  std::vector<int64_t> mem_, cost_, workspace_;
  std::vector<NodeKind> kind_;
  std::vector<NodeId> grad_of_;
  std::vector<uint8_t> is_target_;
  std::vector<std::string> names_, ops_;
  std::vector<int64_t> in_offsets_, out_offsets_;
  std::vector<NodeId> in_list_, out_list_;
  std::vector<NodeId> topo_order_;
  std::vector<int32_t> topo_rank_;
  std::vector<NodeId> targets_;
  std::string name_;
  int64_t static_bytes_ = 0;
  std::string memory_unit_ = "bytes";
  std::string cost_unit_ = "abstract";
  nlohmann::json provenance_ = nlohmann::json::object();
};

// A 64-bit FNV-1a hash of everything the memory model reads (sizes, costs,
// kinds, edges, targets, static bytes), as 16 hex digits: two graphs with
// the same hash give the same figures to every algorithm.
std::string ContentHash(const Graph& graph);

// Collects nodes in any order and checks them in Build(). Every error is an
// InputError whose message starts with `source` (a file name or generator
// spec) and names the offending node.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string source) : source_(std::move(source)) {}

  GraphBuilder& set_name(std::string name);
  GraphBuilder& set_static_bytes(int64_t bytes);
  GraphBuilder& set_units(std::string memory, std::string cost);
  GraphBuilder& set_provenance(nlohmann::json provenance);
  // Appends a node; its id must be set. Checks happen in Build().
  GraphBuilder& add_node(NodeSpec node);
  // Convenience for generators and tests: appends a node with the next id
  // and returns that id.
  NodeId add(NodeKind kind, int64_t mem, int64_t cost,
             std::vector<NodeId> inputs, std::string name = {},
             NodeId grad_of = kNoNode);

  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }

  // For generators that know their size: throws InputError with the
  // estimate unless a graph of `nodes` nodes and `edges` edges fits the
  // memory limit (model/limits.h). Nodes added later are checked as
  // they come in any case; this refuses before the first is allocated.
  void Expect(int64_t nodes, int64_t edges) const;

  // Throws InputError on unknown, duplicate or missing ids, repeated inputs,
  // negative sizes, sums that overflow int64, a cycle, or a gradient of
  // itself. Here and in add_node, Stopped once a stop is requested
  // (model/stop.h): readers and generators of millions of nodes take
  // seconds.
  Graph Build() &&;

 private:
  [[noreturn]] void Fail(const NodeSpec& node, const std::string& what) const;
  // Every 2^16 nodes: refuses the graph once its estimate exceeds the
  // limit, and throws Stopped once a stop is requested.
  void CheckGrowth();

  std::string source_;
  std::string name_;
  int64_t static_bytes_ = 0;
  std::string memory_unit_ = "bytes";
  std::string cost_unit_ = "abstract";
  nlohmann::json provenance_ = nlohmann::json::object();
  std::vector<NodeSpec> nodes_;
  int64_t edges_ = 0;
};

}  // namespace remat
