// The layer-level generators: node counts by construction, parameter counts
// against the published totals, FLOPs derived by hand, the backward
// construction rule on a tiny network, and the refusal of bad parameters.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "graphs/generators/layers.h"
#include "model/errors.h"
#include "model/graph_source.h"

namespace remat {
namespace {

using gen::Network;
using gen::Op;
using gen::Tensor;

std::vector<NodeId> Inputs(const Graph& g, NodeId v) {
  return {g.inputs(v).begin(), g.inputs(v).end()};
}

NodeId ByName(const Graph& g, const std::string& name) {
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    if (g.node_name(v) == name) return v;
  }
  ADD_FAILURE() << "no node named " << name;
  return 0;
}

std::map<NodeKind, int> CountKinds(const Graph& g) {
  std::map<NodeKind, int> counts;
  for (NodeId v = 0; v < g.num_nodes(); ++v) ++counts[g.kind(v)];
  return counts;
}

int64_t Parameters(const Graph& g) {
  return g.provenance()["parameters"].get<int64_t>();
}

// Forward FLOPs of the convolutions and linear layers: the multiply-adds
// that published FLOP counts give, times 2.
int64_t ConvLinearFlops(const Graph& g) {
  int64_t sum = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    if (g.op(v) == "conv2d" || g.op(v) == "linear") sum += g.cost(v);
  }
  return sum;
}

std::string ErrorOf(const std::string& spec) {
  try {
    LoadGraph(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// x -> c1 = conv -> r = relu -> c2 = conv -> s = add(r, c2) -> mse loss.
TEST(TrainingGraph, BackwardReadsWhatTheOperationTableSays) {
  Network net("tiny", 4);
  Tensor x = net.Data({1, 4, 8, 8});
  Tensor c1 = gen::Conv2d(net, "c1", x, 4, 3, 1, 1);
  Tensor r = gen::Unary(net, Op::kRelu, "r", c1);
  Tensor c2 = gen::Conv2d(net, "c2", r, 4, 3, 1, 1);
  Tensor s = gen::Binary(net, Op::kAdd, "s", r, c2);
  gen::MseLoss(net, s);
  Graph g = std::move(net).Build();

  ASSERT_EQ(g.num_nodes(), 10);
  // Forward ids 0..4 in order, backward ids from the loss back.
  EXPECT_EQ(g.kind(4), NodeKind::kLoss);
  for (NodeId v = 5; v < 10; ++v) {
    EXPECT_EQ(g.kind(v), NodeKind::kBackward);
    EXPECT_EQ(g.grad_of(v), 9 - v);
  }
  EXPECT_EQ(g.node_name(7), "c2_bwd");
  EXPECT_EQ(g.op(7), "conv2d_backward");
  EXPECT_EQ(Inputs(g, 5), (std::vector<NodeId>{3, 4}));     // loss: x, seed
  EXPECT_EQ(Inputs(g, 6), (std::vector<NodeId>{5}));        // add: neither
  EXPECT_EQ(Inputs(g, 7), (std::vector<NodeId>{6, 1}));     // conv: input
  EXPECT_EQ(Inputs(g, 8), (std::vector<NodeId>{7, 6, 1}));  // relu: output
  EXPECT_EQ(Inputs(g, 9), (std::vector<NodeId>{8}));        // data input

  const int64_t bytes = 4 * 8 * 8 * 4;
  EXPECT_EQ(g.mem(0), bytes);
  EXPECT_EQ(g.mem(4), 4);          // the scalar loss
  EXPECT_EQ(g.mem(5), bytes);      // d loss / d s
  EXPECT_EQ(g.mem(6), 2 * bytes);  // gradients of both addends
  EXPECT_EQ(g.mem(9), 0);          // no gradient for the input batch
  const int64_t conv_flops = 2 * 3 * 3 * 4 * 4 * 8 * 8;
  EXPECT_EQ(g.cost(0), conv_flops);
  EXPECT_EQ(g.cost(7), 2 * conv_flops);
  EXPECT_EQ(g.cost(9), conv_flops);  // only the weight gradient
  EXPECT_EQ(g.cost(1), 256);         // element-wise: one per element
  EXPECT_EQ(g.cost(8), 2 * 256);
  // Two 3x3x4x4 kernels and their gradients, the input and the target.
  EXPECT_EQ(g.static_bytes(), 2 * 288 * 4 + 2 * bytes);
  EXPECT_EQ(std::vector<NodeId>(g.targets().begin(), g.targets().end()),
            (std::vector<NodeId>{9}));
  EXPECT_EQ(g.cost_unit(), "flop");
}

TEST(Layers, ConvolutionFlopsFollowTheFormula) {
  Network net("conv", 4);
  Tensor y = gen::Conv2d(net, "c", net.Data({2, 64, 56, 56}), 128, 3, 2, 1);
  EXPECT_EQ(y.shape.h, 28);
  Graph g = std::move(net).Build();
  // 2 K K Cin Cout Hout Wout N.
  EXPECT_EQ(g.cost(0), int64_t{2} * 3 * 3 * 64 * 128 * 28 * 28 * 2);
  EXPECT_EQ(g.mem(0), int64_t{2} * 128 * 28 * 28 * 4);
}

TEST(Layers, DilationKeepsTheSizeWithMatchingPadding) {
  Network net("dilated", 4);
  Tensor y = gen::Conv2d(net, "c", net.Data({1, 8, 60, 60}), 8, 3, 1, 4, 4);
  EXPECT_EQ(y.shape.h, 60);
  EXPECT_EQ(gen::WindowOutput(net, 237, 3, 2, 1), 119);
  EXPECT_THROW(gen::WindowOutput(net, 1, 2, 2, 0), InputError);
}

TEST(ResNet, FiftyLayersMatchTorchvision) {
  Graph g = LoadGraph("resnet:depth=50,batch=1,image=224");
  // Stem 4 (conv, bn, relu, pool), 16 bottlenecks of 10 operations, 4
  // projections of 2, pool and fc; the loss; one backward for each.
  auto kinds = CountKinds(g);
  EXPECT_EQ(kinds[NodeKind::kForward], 4 + 16 * 10 + 4 * 2 + 2);
  EXPECT_EQ(kinds[NodeKind::kLoss], 1);
  EXPECT_EQ(kinds[NodeKind::kBackward], 175);
  EXPECT_EQ(Parameters(g), 25'557'032);
  // 4,089,184,256 multiply-adds, summed by hand stage by stage:
  // stem 118,013,952; stages 667,942,912 + 1,027,604,480 + 1,464,336,384 +
  // 809,238,528; fc 2,048,000.
  EXPECT_EQ(ConvLinearFlops(g), int64_t{2} * 4'089'184'256);
  EXPECT_EQ(g.mem(ByName(g, "layer4.2.relu")), 2048 * 7 * 7 * 4);
  // With the element-wise operations: about 8.2e9 in all.
  const auto total = g.provenance()["forward_flop"].get<int64_t>();
  EXPECT_GT(total, int64_t{2} * 4'089'184'256);
  EXPECT_LT(total, 8'250'000'000);
}

TEST(ResNet, ParameterCountsOfTheImageNetFamily) {
  EXPECT_EQ(Parameters(LoadGraph("resnet:depth=18,batch=1")), 11'689'512);
  EXPECT_EQ(Parameters(LoadGraph("resnet:depth=34,batch=1")), 21'797'672);
  EXPECT_EQ(Parameters(LoadGraph("resnet:depth=101,batch=1")), 44'549'160);
  EXPECT_EQ(Parameters(LoadGraph("resnet:depth=152,batch=1")), 60'192'808);
}

TEST(ResNet, StaticBytesAreParametersGradientsAndTheBatch) {
  Graph g = LoadGraph("resnet:depth=50,batch=32,image=224");
  EXPECT_EQ(g.static_bytes(), 2 * 25'557'032 * 4            // weights and grads
                                  + 32 * 3 * 224 * 224 * 4  // images
                                  + 32 * 8);                // int64 labels
  Graph half = LoadGraph("resnet:depth=50,batch=32,image=224,dtype=bf16");
  EXPECT_EQ(half.static_bytes(),
            2 * 25'557'032 * 2 + 32 * 3 * 224 * 224 * 2 + 32 * 8);
  NodeId conv1 = ByName(g, "conv1");
  EXPECT_EQ(half.mem(ByName(half, "conv1")) * 2, g.mem(conv1));
  EXPECT_EQ(g.mem(conv1), int64_t{32} * 64 * 112 * 112 * 4);
}

TEST(ResNet, CifarDepthsHaveTheirBlockCounts) {
  // 6n+2 with n = 9: stem 3, 27 basic blocks of 7, 2 projections of 2.
  Graph basic = LoadGraph("resnet:depth=56,batch=2,image=32,block=basic");
  EXPECT_EQ(CountKinds(basic)[NodeKind::kForward], 3 + 27 * 7 + 2 * 2 + 2);
  // 9n+2 with n = 111 (ResNet-1001): 333 bottlenecks of 10, 3 projections.
  Graph deep = LoadGraph("resnet:depth=1001,batch=2,image=32");
  EXPECT_EQ(CountKinds(deep)[NodeKind::kForward], 3 + 333 * 10 + 3 * 2 + 2);
  EXPECT_EQ(deep.mem(ByName(deep, "layer3.110.relu")),
            int64_t{2} * 256 * 8 * 8 * 4);
  // 56 is also 9n+2: block=bottleneck gives 18 bottleneck blocks.
  Graph other = LoadGraph("resnet:depth=56,batch=2,image=32,block=bottleneck");
  EXPECT_EQ(CountKinds(other)[NodeKind::kForward], 3 + 18 * 10 + 3 * 2 + 2);
}

TEST(Vgg, SixteenLayersMatchTheirPublishedFigures) {
  Graph g = LoadGraph("vgg:depth=16,batch=1,image=224");
  // 13 conv + 13 relu, 5 pools, 3 fc + 2 relu.
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 36);
  EXPECT_EQ(CountKinds(g)[NodeKind::kBackward], 37);
  EXPECT_EQ(Parameters(g), 138'357'544);
  // 15,346,630,656 conv multiply-adds (by layer: 3x3 Cin Cout H W) plus
  // 123,633,664 in the classifier.
  EXPECT_EQ(ConvLinearFlops(g), int64_t{2} * 15'470'264'320);
}

TEST(Vgg, ParameterCountsOfTheFamily) {
  EXPECT_EQ(Parameters(LoadGraph("vgg:depth=11,batch=1")), 132'863'336);
  EXPECT_EQ(Parameters(LoadGraph("vgg:depth=13,batch=1")), 133'047'848);
  EXPECT_EQ(Parameters(LoadGraph("vgg:depth=19,batch=1")), 143'667'240);
  // Another image size needs the adaptive pool; the classifier is the same.
  Graph small = LoadGraph("vgg:depth=19,batch=1,image=64");
  EXPECT_EQ(Parameters(small), 143'667'240);
  EXPECT_EQ(small.op(ByName(small, "avgpool")), "avg_pool2d");
}

TEST(UNet, SkipConnectionsAndCounts) {
  // 15 L - 8 operations: L double convs (6), L-1 pools, L-1 up levels of
  // upconv, concat and double conv, the output conv.
  Graph g = LoadGraph("unet:levels=3,base=8,batch=1,image=32");
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 15 * 3 - 8);
  // The first level's output is read by the pool and the last concat.
  NodeId skip = ByName(g, "down0.relu2");
  std::set<NodeId> readers(g.consumers(skip).begin(), g.consumers(skip).end());
  EXPECT_TRUE(readers.count(ByName(g, "down1.pool")));
  EXPECT_TRUE(readers.count(ByName(g, "up0.concat")));
  EXPECT_EQ(g.mem(ByName(g, "up0.concat")), int64_t{16} * 32 * 32 * 4);

  // Parameters by hand for levels=2, base=4, 3 input channels, 2 classes:
  // down0 108+8+144+8, down1 288+16+576+16, upconv 2*2*8*4+4,
  // up0 288+8+144+8, output 4*2+2.
  EXPECT_EQ(Parameters(LoadGraph("unet:levels=2,base=4,batch=1,image=8")),
            268 + 896 + 132 + 448 + 10);
  // The paper's size, as the common PyTorch port (milesial/Pytorch-UNet
  // with transposed convs) counts it.
  EXPECT_EQ(Parameters(LoadGraph("unet:levels=5,base=64,batch=1,image=32")),
            31'037'698);
}

// Parameters of the paper's U-Net (Ronneberger et al. 2015, Fig. 1) by
// formula: 3x3 convs and 2x2 up-convs with bias, no norm, a 1x1 output conv.
int64_t PaperUNetParameters(int64_t levels, int64_t base, int64_t in,
                            int64_t classes) {
  auto conv = [](int64_t k, int64_t i, int64_t o) { return k * k * i * o + o; };
  int64_t sum = 0, channels = in;
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t c = base << l;
    sum += conv(3, channels, c) + conv(3, c, c);
    channels = c;
  }
  for (int64_t l = levels - 2; l >= 0; --l) {
    const int64_t c = base << l;
    sum += conv(2, channels, c) + conv(3, 2 * c, c) + conv(3, c, c);
    channels = c;
  }
  return sum + conv(1, channels, classes);
}

TEST(UNet, PaperNetworkUnpaddedWithCroppedSkips) {
  Graph g = LoadGraph(
      "unet:levels=5,base=64,batch=8,image=572,channels=1,padding=valid,"
      "norm=none");
  // 31,030,658: the count of the 572 -> 388 network with 1 input channel
  // and 2 classes that Keras/TensorFlow ports of the paper report (the
  // paper prints no total; Fig. 1 gives the layers).
  EXPECT_EQ(PaperUNetParameters(5, 64, 1, 2), 31'030'658);
  EXPECT_EQ(Parameters(g), 31'030'658);
  // Per double conv conv-relu-conv-relu: 11 L - 6 operations without norm.
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 11 * 5 - 6);
  // Sizes of Fig. 1: 572 -> 568 at level 0, 28 at the bottom, 388 out.
  EXPECT_EQ(g.mem(ByName(g, "down0.relu2")), int64_t{8} * 64 * 568 * 568 * 4);
  EXPECT_EQ(g.mem(ByName(g, "down4.relu2")), int64_t{8} * 1024 * 28 * 28 * 4);
  EXPECT_EQ(g.mem(ByName(g, "out")), int64_t{8} * 2 * 388 * 388 * 4);
  // The skip of level 3 (64x64) is cropped to the up-conv's 56x56; the crop
  // is a slice of the skip, which the concat reads.
  EXPECT_EQ(g.mem(ByName(g, "up3.concat")), int64_t{8} * 1024 * 56 * 56 * 4);
  NodeId skip = ByName(g, "down0.relu2");
  std::set<NodeId> readers(g.consumers(skip).begin(), g.consumers(skip).end());
  EXPECT_TRUE(readers.count(ByName(g, "up0.concat")));
  EXPECT_EQ(g.mem(ByName(g, "up0.concat")), int64_t{8} * 128 * 392 * 392 * 4);
  // Parameters and their gradients, the 572x572 batch, int64 labels.
  EXPECT_EQ(g.static_bytes(), 2 * 31'030'658 * int64_t{4} +
                                  int64_t{8} * 572 * 572 * 4 +
                                  int64_t{8} * 388 * 388 * 8);

  // Padding changes sizes, not parameters: levels=2, base=4 as above.
  Graph small =
      LoadGraph("unet:levels=2,base=4,batch=1,image=20,padding=valid");
  EXPECT_EQ(Parameters(small), 268 + 896 + 132 + 448 + 10);
  // 20 -> 16, pooled 8 -> 4, up 8 -> 4: the 16x16 skip cropped to 8x8.
  EXPECT_EQ(small.mem(ByName(small, "up0.concat")), int64_t{8} * 8 * 8 * 4);
  EXPECT_EQ(small.mem(ByName(small, "out")), int64_t{2} * 4 * 4 * 4);
  EXPECT_EQ(PaperUNetParameters(2, 4, 3, 2),
            Parameters(LoadGraph("unet:levels=2,base=4,batch=1,image=8,"
                                 "norm=none")));
}

TEST(PspNet, DilatedBackboneAndPyramid) {
  Graph g = LoadGraph("pspnet:backbone=resnet50,batch=2,image=473");
  // Backbone 172, four pyramid branches of 5, concat, head 4, upsample.
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 172 + 20 + 1 + 4 + 1);
  // 473 -> 237 -> 119 -> 60, then dilation keeps 60 x 60.
  EXPECT_EQ(g.mem(ByName(g, "layer4.2.relu")), int64_t{2} * 2048 * 60 * 60 * 4);
  EXPECT_EQ(g.mem(ByName(g, "ppm.bin6.pool")), int64_t{2} * 2048 * 6 * 6 * 4);
  EXPECT_EQ(g.mem(ByName(g, "ppm.concat")), int64_t{2} * 4096 * 60 * 60 * 4);
  EXPECT_EQ(g.mem(ByName(g, "upsample")), int64_t{2} * 21 * 473 * 473 * 4);
  Graph deep = LoadGraph("pspnet:backbone=resnet101,batch=1,image=64");
  EXPECT_EQ(CountKinds(deep)[NodeKind::kForward], 172 + 17 * 10 + 26);
}

TEST(Transformer, EncoderLayerByHand) {
  Graph g =
      LoadGraph("transformer:layers=1,d_model=16,heads=4,seq=8,batch=2,ffn=32");
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 14);
  EXPECT_EQ(CountKinds(g)[NodeKind::kBackward], 15);
  // q, k, v, out: 4 (D^2 + D); two norms 2 * 2D; FFN D F + F + F D + D.
  EXPECT_EQ(Parameters(g), 4 * (256 + 16) + 2 * 32 + (512 + 32) + (512 + 16));
  // Projections 4 * 2 B S D^2, scores and context 2 * 2 B S^2 D, FFN
  // 2 * 2 B S D F, softmax B H S^2, two adds and two norms B S D each, relu
  // B S F, the loss B S D.
  EXPECT_EQ(g.provenance()["forward_flop"].get<int64_t>(),
            32768 + 8192 + 32768 + 512 + 512 + 512 + 512 + 256);
  EXPECT_EQ(g.mem(ByName(g, "enc0.attn.scores")), 2 * 4 * 8 * 8 * 4);
  // The scores' backward reads q and k; the softmax's reads its output.
  NodeId scores = ByName(g, "enc0.attn.scores");
  NodeId softmax = ByName(g, "enc0.attn.softmax");
  std::vector<NodeId> reads = Inputs(g, ByName(g, "enc0.attn.scores_bwd"));
  EXPECT_EQ(reads, (std::vector<NodeId>{ByName(g, "enc0.attn.softmax_bwd"),
                                        ByName(g, "enc0.attn.q"),
                                        ByName(g, "enc0.attn.k")}));
  EXPECT_EQ(Inputs(g, ByName(g, "enc0.attn.softmax_bwd")),
            (std::vector<NodeId>{ByName(g, "enc0.attn.context_bwd"), softmax}));
  EXPECT_NE(scores, softmax);
}

TEST(Transformer, EncoderDecoderAndVocabulary) {
  Graph g = LoadGraph(
      "transformer:layers=2,d_model=16,heads=2,seq=4,batch=1,decoder=1,"
      "vocab=50");
  // Embeddings 2, encoder layers 14, decoder layers 23, final norms 2, head.
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 2 + 2 * 14 + 2 * 23 + 2 + 1);
  // The encoder output feeds the k and v projections of every
  // cross-attention, and their backward nodes read it.
  std::set<std::string> readers;
  for (NodeId v : g.consumers(ByName(g, "enc.norm"))) {
    readers.insert(g.node_name(v));
  }
  EXPECT_EQ(readers, (std::set<std::string>{
                         "dec0.cross_attn.k", "dec0.cross_attn.v",
                         "dec1.cross_attn.k", "dec1.cross_attn.v",
                         "dec0.cross_attn.k_bwd", "dec0.cross_attn.v_bwd",
                         "dec1.cross_attn.k_bwd", "dec1.cross_attn.v_bwd"}));
  EXPECT_EQ(g.op(ByName(g, "embed")), "embedding");
  EXPECT_EQ(g.mem(ByName(g, "head")), 1 * 4 * 50 * 4);
  // torch.nn.Transformer() with its defaults, and its encoder alone
  // (3,152,384 per layer).
  EXPECT_EQ(Parameters(LoadGraph("transformer:decoder=1,seq=4,batch=1")),
            44'140'544);
  EXPECT_EQ(Parameters(LoadGraph("transformer:seq=4,batch=1")), 6 * 3'152'384);
}

TEST(Lstm, UnrolledStepsByHand) {
  Graph g = LoadGraph("lstm:steps=3,hidden=8,batch=2,input=8,classes=10");
  // Step 1 has 6 operations (no f c_0), the others 8; fc and the loss.
  EXPECT_EQ(CountKinds(g)[NodeKind::kForward], 6 + 8 + 8 + 1);
  EXPECT_EQ(CountKinds(g)[NodeKind::kBackward], 24);
  // Shared weights once: 4H (I + H) + 8H; classifier H K + K.
  EXPECT_EQ(Parameters(g), 4 * 8 * 16 + 64 + 8 * 10 + 10);
  EXPECT_EQ(g.cost(ByName(g, "t2.gates")), 2 * 2 * 32 * 16);
  EXPECT_EQ(Inputs(g, ByName(g, "t2.gates")),
            (std::vector<NodeId>{ByName(g, "t1.h")}));
  // A slice's gradient is the slice's size: d(i g) / d(i, g) is 2 x B H.
  EXPECT_EQ(g.mem(ByName(g, "t2.i_g_bwd")), 2 * 2 * 8 * 4);
}

TEST(Mlp, LayersByHand) {
  Graph g = LoadGraph("mlp:layers=2,width=16,batch=4,input=8,classes=3");
  EXPECT_EQ(g.num_nodes(), 12);
  EXPECT_EQ(Parameters(g), (8 * 16 + 16) + (16 * 16 + 16) + (16 * 3 + 3));
  EXPECT_EQ(g.provenance()["forward_flop"].get<int64_t>(),
            1024 + 64 + 2048 + 64 + 384 + 12);
}

bool SameGraph(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes() || a.num_edges() != b.num_edges()) {
    return false;
  }
  for (NodeId v = 0; v < a.num_nodes(); ++v) {
    if (Inputs(a, v) != Inputs(b, v) || a.mem(v) != b.mem(v) ||
        a.cost(v) != b.cost(v)) {
      return false;
    }
  }
  return true;
}

TEST(RandomLayered, DeterministicSingleSourceAndSink) {
  Graph a = LoadGraph("random_layered:n=500,seed=7");
  ASSERT_EQ(a.num_nodes(), 500);
  EXPECT_TRUE(SameGraph(a, LoadGraph("random_layered:n=500,seed=7")));
  EXPECT_FALSE(SameGraph(a, LoadGraph("random_layered:n=500,seed=8")));
  EXPECT_EQ(std::vector<NodeId>(a.targets().begin(), a.targets().end()),
            (std::vector<NodeId>{499}));
  for (NodeId v = 1; v < a.num_nodes(); ++v) {
    EXPECT_FALSE(a.inputs(v).empty()) << v;
    EXPECT_GE(a.mem(v), 10);
    EXPECT_LE(a.mem(v), 7500);
  }
  EXPECT_EQ(a.cost(0), 0);
}

TEST(RandomLayered, SkipEdgesAreTheRequestedShare) {
  // The same seed draws the same layers and adjacent edges; skip edges are
  // drawn after them, so the difference in edges is the skip edges.
  Graph g = LoadGraph("random_layered:n=2000,seed=1,skip=0.25");
  Graph plain = LoadGraph("random_layered:n=2000,seed=1,skip=0");
  EXPECT_GT(g.provenance()["layers"].get<int64_t>(), 10);
  EXPECT_NEAR(static_cast<double>(g.num_edges() - plain.num_edges()) /
                  static_cast<double>(g.num_edges()),
              0.25, 0.01);
}

TEST(Generators, EveryGeneratorBuildsAConsistentTrainingGraph) {
  for (const std::string spec :
       {"vgg", "resnet", "unet", "pspnet:image=128", "transformer", "lstm",
        "mlp", "transformer:decoder=1,layers=2", "resnet:depth=18"}) {
    SCOPED_TRACE(spec);
    Graph g = LoadGraph(spec);
    auto kinds = CountKinds(g);
    EXPECT_EQ(kinds[NodeKind::kLoss], 1);
    EXPECT_EQ(kinds[NodeKind::kBackward],
              kinds[NodeKind::kForward] + kinds[NodeKind::kLoss]);
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      if (g.kind(v) == NodeKind::kBackward) {
        ASSERT_NE(g.grad_of(v), kNoNode);
        EXPECT_EQ(g.op(v), g.op(g.grad_of(v)) + "_backward");
      } else {
        EXPECT_GT(g.mem(v), 0);
      }
    }
    EXPECT_GT(g.static_bytes(), 0);
  }
  EXPECT_EQ(LoadGraph("random_layered").num_nodes(), 100);
}

TEST(Generators, RefuseBadParametersWithTheSpec) {
  EXPECT_TRUE(ErrorOf("vgg:depth=12").starts_with("vgg:depth=12: depth=12"));
  EXPECT_TRUE(ErrorOf("resnet:depth=9").starts_with("resnet:depth=9: "));
  EXPECT_NE(ErrorOf("resnet:depth=29,block=basic").find("not a ResNet depth"),
            std::string::npos);
  EXPECT_NE(ErrorOf("resnet:batch=4000000000000000000").find("overflow"),
            std::string::npos);
  EXPECT_NE(ErrorOf("transformer:layers=1000000").find("at most 2500000"),
            std::string::npos);
  EXPECT_NE(ErrorOf("transformer:d_model=510").find("not divisible"),
            std::string::npos);
  EXPECT_NE(ErrorOf("unet:levels=5,image=100").find("divisible"),
            std::string::npos);
  // 100 -> 96 -> 48 -> 44 -> 22 -> 18 -> 9 -> 5: odd before a pool.
  EXPECT_NE(ErrorOf("unet:levels=5,image=100,padding=valid")
                .find("level 3 has 5 pixels"),
            std::string::npos);
  EXPECT_NE(ErrorOf("unet:levels=2,image=14,padding=valid").find("no pixels"),
            std::string::npos);
  EXPECT_NE(ErrorOf("vgg:depth=16,image=31").find("must be >= 32"),
            std::string::npos);
  EXPECT_NE(ErrorOf("random_layered:density=1.5").find("[0, 1]"),
            std::string::npos);
  EXPECT_NE(ErrorOf("random_layered:mem_min=9,mem_max=8").find("exceeds"),
            std::string::npos);
}

}  // namespace
}  // namespace remat
