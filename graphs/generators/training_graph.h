// The one routine that turns a forward network into a training graph
// (docs/model.md, "Training graphs"), shared by every layer-level
// generator so that they all follow the same convention.
//
// A generator describes only the forward pass: it adds operations to a
// Network with their output shapes, FLOPs and parameter counts (layers.h
// has the usual layers). Network::Build() then adds one backward node per
// forward operation. Which forward values that backward node reads is fixed
// per operation type by the table in training_graph.cc (graphs/README.md
// documents it): this is the only place the generators encode it.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/graph.h"
#include "model/options.h"

namespace remat::gen {

// Operation types of the layer-level generators. The table in
// training_graph.cc gives each one its name and the forward values its
// backward reads.
enum class Op : uint8_t {
  kConv2d,
  kConvTranspose2d,
  kLinear,
  kMatmul,
  kEmbedding,
  kBatchNorm,
  kLayerNorm,
  kRelu,
  kGelu,
  kSigmoid,
  kTanh,
  kSoftmax,
  kAdd,
  kMul,
  kMaxPool,
  kAvgPool,
  kUpsample,
  kConcat,
  kCrossEntropy,
  kMseLoss,
};

// What the backward of an operation reads besides the gradient of its
// output: its inputs, its output, both or neither.
struct OpInfo {
  const char* name;
  bool backward_reads_inputs;
  bool backward_reads_output;
  bool is_loss;
};
const OpInfo& GetOpInfo(Op op);

// A logical tensor shape. Every generator fits its tensors into four
// dimensions: images are NCHW; sequences are (batch, features, seq, 1);
// attention scores are (batch, heads, seq, seq). Layers that act on
// "features" act on `c`.
struct Shape {
  int64_t n = 1, c = 1, h = 1, w = 1;
};

// A value flowing through the network: the node that holds it (kNoNode for
// data from the input batch, which is static memory, not a node) and its
// logical shape. A slice or reshape is a Tensor with the same node and
// another shape: views take no memory of their own.
struct Tensor {
  NodeId node = kNoNode;
  Shape shape;
};

// The options every layer-level generator has: its options struct T
// derives from LayerOptions and declares them with DtypeOption<T>() and
// BatchOption<T>(...); ClassesOption declares the `classes` of those that
// end in a classifier.
struct LayerOptions {
  int64_t batch = 0;
  int64_t element_bytes = 0;  // dtype: 4 for fp32, 2 for fp16 and bf16
};

template <std::derived_from<LayerOptions> T>
OptionField<T> DtypeOption() {
  return ChoiceOption<T, int64_t>(&T::element_bytes, "dtype", 4,
                                  {{"fp32", 4}, {"fp16", 2}, {"bf16", 2}},
                                  "element type of activations and parameters");
}
template <std::derived_from<LayerOptions> T>
OptionField<T> BatchOption(int64_t default_value) {
  return IntOption<T, int64_t>(&T::batch, "batch", default_value, "batch size",
                               1);
}
template <typename T>
OptionField<T> ClassesOption(int64_t T::*classes, int64_t default_value,
                             std::string description) {
  return IntOption(classes, "classes", default_value, std::move(description),
                   1);
}

// Upper bound on forward operations of one generated graph: the training
// graph has about twice as many nodes, and 5 million nodes already take a
// few GiB to build and analyse.
inline constexpr int64_t kMaxForwardOps = 2'500'000;
// Throws an InputError naming `spec` when a generator would create more
// than kMaxForwardOps operations, or a graph that the memory limit cannot
// hold even at one node per operation; generators call it before
// building.
void CheckOpCount(const std::string& spec, int64_t forward_ops);

class Network {
 public:
  // `spec` names the graph and starts every error message.
  Network(std::string spec, int64_t dtype_bytes);

  const std::string& spec() const { return spec_; }

  // Checked arithmetic for sizes and FLOPs: throws an InputError naming the
  // spec instead of overflowing on absurd parameters.
  int64_t Mul(int64_t a, int64_t b) const;
  int64_t Add(int64_t a, int64_t b) const;
  int64_t Elements(const Shape& shape) const;

  // A tensor of the input batch: its bytes go to static_bytes.
  // `element_bytes` 0 means the dtype (labels are int64: pass 8).
  Tensor Data(const Shape& shape, int64_t element_bytes = 0);

  // Appends a forward operation. Inputs that are data (node kNoNode) are not
  // graph edges. `params` counts the operation's trainable parameters
  // (elements); they and their gradients go to static_bytes.
  Tensor AddOp(Op op, std::string name, const std::vector<Tensor>& inputs,
               const Shape& output, int64_t flops, int64_t params);

  // Adds the backward pass and returns the training graph. Units are bytes
  // and FLOPs; the provenance records the spec, dtype, parameter count and
  // forward FLOPs.
  Graph Build() &&;

 private:
  struct ForwardOp {
    Op op;
    std::string name;
    std::vector<NodeId> inputs;  // activation nodes, each once
    int64_t input_grad_bytes;    // gradients w.r.t. those inputs
    int64_t mem;
    int64_t flops;
    bool has_params;
  };

  std::string spec_;
  int64_t dtype_bytes_;
  std::vector<ForwardOp> ops_;
  int64_t parameters_ = 0;
  int64_t data_bytes_ = 0;
  int64_t forward_flops_ = 0;
};

}  // namespace remat::gen
