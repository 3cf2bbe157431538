// transformer:layers=N,d_model=D,heads=H,seq=S,batch=B[,ffn=F][,decoder=0|1]
// [,vocab=V][,dtype=T] — the training graph of a Transformer (Vaswani et
// al., NeurIPS 2017) in torch.nn.Transformer's post-norm layout.
//
// Attention is built from its real operations: q, k and v projections, the
// scores q k^T of every head (a batched matmul; the 1/sqrt(d_k) scale and
// any mask are fused into the softmax), the softmax, the weighted sum of v,
// the output projection; then residual add and layer norm, and a
// feed-forward block (linear-relu-linear, add, layer norm). Splitting into
// heads and merging them are views, not operations.
//
// decoder=0: an encoder stack. decoder=1: torch.nn.Transformer, N encoder
// and N decoder layers (causal self-attention, cross-attention on the
// encoder output, feed-forward) with final layer norms on both stacks.
// vocab=0: the inputs are a batch of embeddings and the loss is the mean
// squared error against a target batch; vocab=V: token ids, an embedding
// table, a linear head to V logits and cross-entropy. Dropout and
// positional encodings are left out.
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "model/errors.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

// Multi-head attention of `query` over `memory` (the same tensor for
// self-attention), with the residual add and layer norm after it.
Tensor AttentionBlock(Network& net, const std::string& prefix,
                      const Tensor& query, const Tensor& memory,
                      int64_t heads) {
  const Shape& s = query.shape;  // (batch, d_model, seq, 1)
  const int64_t d = s.c;
  Tensor q = Linear(net, prefix + ".q", query, d);
  Tensor k = Linear(net, prefix + ".k", memory, d);
  Tensor v = Linear(net, prefix + ".v", memory, d);
  // Per head: (S x d_k) times (d_k x S), then (S x S) times (S x d_k).
  const int64_t products =
      net.Mul(2, net.Mul(net.Mul(s.n, d), net.Mul(s.h, memory.shape.h)));
  Tensor scores = net.AddOp(Op::kMatmul, prefix + ".scores", {q, k},
                            {s.n, heads, s.h, memory.shape.h}, products, 0);
  Tensor probs = Unary(net, Op::kSoftmax, prefix + ".softmax", scores);
  Tensor context =
      net.AddOp(Op::kMatmul, prefix + ".context", {probs, v}, s, products, 0);
  Tensor out = Linear(net, prefix + ".out", context, d);
  return LayerNorm(net, prefix + ".norm",
                   Binary(net, Op::kAdd, prefix + ".add", query, out));
}

Tensor FeedForwardBlock(Network& net, const std::string& prefix,
                        const Tensor& x, int64_t ffn) {
  Tensor h = Linear(net, prefix + ".linear1", x, ffn);
  h = Unary(net, Op::kRelu, prefix + ".relu", h);
  h = Linear(net, prefix + ".linear2", h, x.shape.c);
  return LayerNorm(net, prefix + ".norm",
                   Binary(net, Op::kAdd, prefix + ".add", x, h));
}

struct TransformerOptions : LayerOptions {
  int64_t layers = 0;
  int64_t d_model = 0;
  int64_t heads = 0;
  int64_t seq = 0;
  int64_t ffn = 0;
  bool decoder = false;
  int64_t vocab = 0;
};

const Options<TransformerOptions> kOptions(
    IntOption(&TransformerOptions::layers, "layers", 6, "layers per stack", 1),
    IntOption(&TransformerOptions::d_model, "d_model", 512, "model width", 1),
    IntOption(&TransformerOptions::heads, "heads", 8,
              "attention heads (divide d_model)", 1),
    IntOption(&TransformerOptions::seq, "seq", 512, "sequence length", 1),
    BatchOption<TransformerOptions>(8),
    IntOption(&TransformerOptions::ffn, "ffn", 0,
              "feed-forward width (0: 4 d_model)"),
    ChoiceOption(&TransformerOptions::decoder, "decoder", false,
                 {{"0", false}, {"1", true}},
                 "1: encoder-decoder (torch.nn.Transformer), 0: encoder only"),
    IntOption(&TransformerOptions::vocab, "vocab", 0,
              "vocabulary for token inputs and a logits head (0: embedding "
              "inputs, mean squared error loss)"),
    DtypeOption<TransformerOptions>());

Graph GenerateTransformer(const TransformerOptions& options,
                          const std::string& spec) {
  const int64_t layers = options.layers;
  const int64_t d = options.d_model;
  const int64_t heads = options.heads;
  const int64_t vocab = options.vocab;
  const bool decoder = options.decoder;
  if (d % heads != 0) {
    throw InputError(fmt::format("{}: d_model={} is not divisible by heads={}",
                                 spec, d, heads));
  }
  // Encoder layers have 14 operations, decoder layers 23.
  const int64_t per_layer = decoder ? 14 + 23 : 14;
  CheckOpCount(spec, layers > kMaxForwardOps ? layers : layers * per_layer + 8);
  Network net(spec, options.element_bytes);
  const int64_t ffn = options.ffn > 0 ? options.ffn : net.Mul(4, d);
  const Shape shape{options.batch, d, options.seq, 1};
  auto input = [&](const std::string& name) {
    if (vocab == 0) return net.Data(shape);
    Tensor tokens = net.Data({shape.n, 1, shape.h, 1}, /*element_bytes=*/8);
    return net.AddOp(Op::kEmbedding, name, {tokens}, shape, net.Elements(shape),
                     net.Mul(vocab, d));
  };

  Tensor x = input("embed");
  for (int64_t i = 0; i < layers; ++i) {
    const std::string prefix = fmt::format("enc{}", i);
    x = AttentionBlock(net, prefix + ".attn", x, x, heads);
    x = FeedForwardBlock(net, prefix + ".ffn", x, ffn);
  }
  if (decoder) {
    const Tensor memory = LayerNorm(net, "enc.norm", x);
    x = input("dec.embed");
    for (int64_t i = 0; i < layers; ++i) {
      const std::string prefix = fmt::format("dec{}", i);
      x = AttentionBlock(net, prefix + ".self_attn", x, x, heads);
      x = AttentionBlock(net, prefix + ".cross_attn", x, memory, heads);
      x = FeedForwardBlock(net, prefix + ".ffn", x, ffn);
    }
    x = LayerNorm(net, "dec.norm", x);
  }
  if (vocab == 0) {
    MseLoss(net, x);
  } else {
    CrossEntropyLoss(net, Linear(net, "head", x, vocab));
  }
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "transformer",
    .description = "Transformer training graph (attention as projections, "
                   "scores, softmax, weighted sum, output projection)",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateTransformer),
});

}  // namespace
}  // namespace remat::gen
