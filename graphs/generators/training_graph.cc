#include "graphs/generators/training_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "model/errors.h"
#include "model/limits.h"

namespace remat::gen {

namespace {

// What each backward reads (besides the gradient of the output), following
// what PyTorch's autograd saves for the operation. graphs/README.md carries
// the same table with the reasons; keep the two in step.
constexpr std::array<OpInfo, 20> kOps = {{
    // name, reads inputs, reads output, is loss
    {"conv2d", true, false, false},            // dW needs x
    {"conv_transpose2d", true, false, false},  // dW needs x
    {"linear", true, false, false},            // dW needs x
    {"matmul", true, false, false},            // dA needs B, dB needs A
    {"embedding", false, false, false},        // needs only the token ids
    {"batch_norm", true, false, false},        // x (with its batch stats)
    {"layer_norm", true, false, false},        // x (with its row stats)
    {"relu", false, true, false},              // the mask y > 0
    {"gelu", true, false, false},              // gelu'(x)
    {"sigmoid", false, true, false},           // y (1 - y)
    {"tanh", false, true, false},              // 1 - y^2
    {"softmax", false, true, false},           // y (g - sum(g y))
    {"add", false, false, false},              // passes the gradient on
    {"mul", true, false, false},               // d(a b) needs a and b
    {"max_pool2d", true, true, false},         // where the maxima were
    {"avg_pool2d", false, false, false},       // spreads the gradient
    {"upsample_bilinear2d", false, false, false},
    {"concat", false, false, false},  // splits the gradient
    // A loss's backward reads its predictions, and its own output: that is
    // where the (free) gradient seed enters, so the backward pass starts
    // after the loss, as in the chain generator.
    {"cross_entropy", true, true, true},
    {"mse_loss", true, true, true},
}};
static_assert(kOps.size() == static_cast<size_t>(Op::kMseLoss) + 1,
              "one table row per Op");

// Mul's and Add's refusal, one message for both.
[[noreturn]] void ThrowOverflow(const std::string& spec) {
  throw InputError(fmt::format(
      "{}: sizes or FLOPs overflow int64 (parameters too large)", spec));
}

}  // namespace

const OpInfo& GetOpInfo(Op op) { return kOps[static_cast<size_t>(op)]; }

void CheckOpCount(const std::string& spec, int64_t forward_ops) {
  if (forward_ops > kMaxForwardOps) {
    throw InputError(fmt::format(
        "{}: would have {} forward operations; at most {} are supported", spec,
        forward_ops, kMaxForwardOps));
  }
  // At least a node per forward operation and an edge into each but the
  // first: refused here, before the operations are made, rather than by
  // the builder once millions of them have been (mlp:layers=999999 took
  // 2.6 s under ASan to be refused at 64 MiB).
  CheckMemory(GraphBytes(forward_ops, std::max<int64_t>(forward_ops - 1, 0)),
              fmt::format("{}: a graph of at least {} nodes", spec,
                          forward_ops));
}

Network::Network(std::string spec, int64_t dtype_bytes)
    : spec_(std::move(spec)), dtype_bytes_(dtype_bytes) {}

int64_t Network::Mul(int64_t a, int64_t b) const {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) ThrowOverflow(spec_);
  return result;
}

int64_t Network::Add(int64_t a, int64_t b) const {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) ThrowOverflow(spec_);
  return result;
}

int64_t Network::Elements(const Shape& s) const {
  return Mul(Mul(s.n, s.c), Mul(s.h, s.w));
}

Tensor Network::Data(const Shape& shape, int64_t element_bytes) {
  data_bytes_ = Add(
      data_bytes_,
      Mul(Elements(shape), element_bytes == 0 ? dtype_bytes_ : element_bytes));
  return {kNoNode, shape};
}

Tensor Network::AddOp(Op op, std::string name,
                      const std::vector<Tensor>& inputs, const Shape& output,
                      int64_t flops, int64_t params) {
  ForwardOp f{.op = op,
              .name = std::move(name),
              .inputs = {},
              .input_grad_bytes = 0,
              .mem = Mul(Elements(output), dtype_bytes_),
              .flops = flops,
              .has_params = params > 0};
  for (const Tensor& t : inputs) {
    if (t.node == kNoNode) continue;
    // Two slices of one value are one edge, but two gradients.
    f.input_grad_bytes =
        Add(f.input_grad_bytes, Mul(Elements(t.shape), dtype_bytes_));
    bool seen = false;
    for (NodeId u : f.inputs) seen = seen || u == t.node;
    if (!seen) f.inputs.push_back(t.node);
  }
  parameters_ = Add(parameters_, params);
  forward_flops_ = Add(forward_flops_, flops);
  ops_.push_back(std::move(f));
  return {static_cast<NodeId>(ops_.size() - 1), output};
}

Graph Network::Build() && {
  const auto n = static_cast<NodeId>(ops_.size());
  // Consumers of each forward op, in CSR form.
  std::vector<int64_t> offsets(n + 1, 0);
  for (const ForwardOp& f : ops_) {
    for (NodeId u : f.inputs) ++offsets[u + 1];
  }
  for (NodeId v = 0; v < n; ++v) offsets[v + 1] += offsets[v];
  std::vector<NodeId> consumers(offsets[n]);
  {
    std::vector<int64_t> fill(offsets.begin(), offsets.end() - 1);
    for (NodeId v = 0; v < n; ++v) {
      for (NodeId u : ops_[v].inputs) consumers[fill[u]++] = v;
    }
  }

  // An operation needs a backward node when a gradient flows through it to
  // an activation or to its parameters. Backward ids follow the reverse
  // forward order, so that ids are a topological order.
  std::vector<NodeId> backward(n, kNoNode);
  NodeId next = n;
  for (NodeId v = n - 1; v >= 0; --v) {
    if (ops_[v].has_params || !ops_[v].inputs.empty()) backward[v] = next++;
  }

  GraphBuilder b(spec_);
  const int64_t static_bytes =
      Add(Mul(Mul(parameters_, 2), dtype_bytes_), data_bytes_);
  b.set_name(spec_)
      .set_units("bytes", "flop")
      .set_static_bytes(static_bytes)
      .set_provenance({{"generator", spec_},
                       {"dtype_bytes", dtype_bytes_},
                       {"parameters", parameters_},
                       {"forward_flop", forward_flops_}});
  for (NodeId v = 0; v < n; ++v) {
    ForwardOp& f = ops_[v];
    const OpInfo& info = GetOpInfo(f.op);
    if (backward[v] != kNoNode) {
      NodeSpec g;
      g.id = backward[v];
      g.name = f.name + "_bwd";
      g.kind = NodeKind::kBackward;
      g.op = std::string(info.name) + "_backward";
      g.mem = f.input_grad_bytes;
      // Backward = gradient w.r.t. the inputs + w.r.t. the parameters, each
      // about one forward (docs/model.md's 2x); with no activation input only
      // the parameter gradient is computed.
      g.cost = f.inputs.empty() ? f.flops : Mul(f.flops, 2);
      g.grad_of = v;
      for (int64_t i = offsets[v]; i < offsets[v + 1]; ++i) {
        if (backward[consumers[i]] != kNoNode) {
          g.inputs.push_back(backward[consumers[i]]);
        }
      }
      if (info.backward_reads_inputs) {
        g.inputs.insert(g.inputs.end(), f.inputs.begin(), f.inputs.end());
      }
      if (info.backward_reads_output) g.inputs.push_back(v);
      b.add_node(std::move(g));
    }
    NodeSpec node;
    node.id = v;
    node.name = std::move(f.name);
    node.kind = info.is_loss ? NodeKind::kLoss : NodeKind::kForward;
    node.op = info.name;
    node.mem = f.mem;
    node.cost = f.flops;
    node.inputs = std::move(f.inputs);
    b.add_node(std::move(node));
  }
  return std::move(b).Build();
}

}  // namespace remat::gen
