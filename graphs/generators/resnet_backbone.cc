#include "graphs/generators/resnet_backbone.h"

#include <fmt/format.h>

namespace remat::gen {

std::vector<int64_t> ImageNetBlocks(int64_t depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    case 152:
      return {3, 8, 36, 3};
    case 200:
      return {3, 24, 36, 3};
    default:
      return {};
  }
}

int64_t ResNetOpCount(const ResNetLayout& layout) {
  // Per block: 3 (basic: 2) conv-bn-relu triples minus the last relu, the
  // add and its relu; counting a projection conv+bn for every stage makes
  // this an upper bound.
  const int64_t per_block = layout.bottleneck ? 10 : 7;
  int64_t ops = layout.imagenet_stem ? 4 : 3;
  for (int64_t blocks : layout.blocks) ops += blocks * per_block + 2;
  return ops;
}

namespace {

// One residual block, torchvision's BasicBlock or Bottleneck (v1.5: the
// stride sits on the 3x3 conv).
Tensor Block(Network& net, const std::string& prefix, const Tensor& x,
             const ResNetLayout& layout, int64_t planes, int64_t stride,
             int64_t dilation, bool project) {
  auto conv_bn = [&](const std::string& n, const Tensor& in, int64_t out,
                     int64_t kernel, int64_t s, int64_t d) {
    Tensor y = Conv2d(net, prefix + ".conv" + n, in, out, kernel, s,
                      kernel == 3 ? d : 0, d);
    return BatchNorm(net, prefix + ".bn" + n, y);
  };
  Tensor y;
  int64_t out_channels;
  if (layout.bottleneck) {
    out_channels = net.Mul(planes, 4);
    y = Unary(net, Op::kRelu, prefix + ".relu1",
              conv_bn("1", x, planes, 1, 1, 1));
    y = Unary(net, Op::kRelu, prefix + ".relu2",
              conv_bn("2", y, planes, 3, stride, dilation));
    y = conv_bn("3", y, out_channels, 1, 1, 1);
  } else {
    out_channels = planes;
    y = Unary(net, Op::kRelu, prefix + ".relu1",
              conv_bn("1", x, planes, 3, stride, dilation));
    y = conv_bn("2", y, planes, 3, 1, dilation);
  }
  Tensor shortcut = x;
  if (project) {
    shortcut = BatchNorm(
        net, prefix + ".downsample.1",
        Conv2d(net, prefix + ".downsample.0", x, out_channels, 1, stride));
  }
  return Unary(net, Op::kRelu, prefix + ".relu",
               Binary(net, Op::kAdd, prefix + ".add", y, shortcut));
}

}  // namespace

Tensor ResNetFeatures(Network& net, const Tensor& image,
                      const ResNetLayout& layout) {
  Tensor x;
  if (layout.imagenet_stem) {
    x = Conv2d(net, "conv1", image, layout.width, 7, 2, 3);
    x = Unary(net, Op::kRelu, "relu", BatchNorm(net, "bn1", x));
    x = MaxPool(net, "maxpool", x, 3, 2, 1);
  } else {
    x = Conv2d(net, "conv1", image, layout.width, 3, 1, 1);
    x = Unary(net, Op::kRelu, "relu", BatchNorm(net, "bn1", x));
  }
  int64_t dilation = 1;
  for (size_t stage = 0; stage < layout.blocks.size(); ++stage) {
    const int64_t planes = net.Mul(layout.width, int64_t{1} << stage);
    int64_t stride = stage == 0 ? 1 : 2;
    // As torchvision: a dilated stage's first block keeps the previous
    // dilation, the others use the new one.
    const int64_t first_dilation = dilation;
    if (stage < layout.dilate.size() && layout.dilate[stage]) {
      dilation *= stride;
      stride = 1;
    }
    for (int64_t b = 0; b < layout.blocks[stage]; ++b) {
      const std::string prefix = fmt::format("layer{}.{}", stage + 1, b);
      if (b == 0) {
        const int64_t out_channels =
            layout.bottleneck ? net.Mul(planes, 4) : planes;
        const bool project = stride != 1 || x.shape.c != out_channels;
        x = Block(net, prefix, x, layout, planes, stride, first_dilation,
                  project);
      } else {
        x = Block(net, prefix, x, layout, planes, 1, dilation, false);
      }
    }
  }
  return x;
}

}  // namespace remat::gen
