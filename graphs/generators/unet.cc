// unet:levels=L,base=C,batch=B,image=H[,classes=K][,dtype=T] — the training
// graph of U-Net (Ronneberger et al., MICCAI 2015) as it is usually
// trained today: padded 3x3 convolutions, so the skip connections need no
// cropping, with batch norm (the layout of the common PyTorch ports).
//
// Level i (0-based) works at 1 / 2^i of the image with C 2^i channels.
// Encoder: a double conv (conv-bn-relu twice) per level, a 2x2 max pool
// between levels. Decoder, from the bottom up: a 2x2 transposed conv that
// halves the channels, concat with the encoder output of the same level
// (the skip connection that keeps that output live across the whole net),
// a double conv. A final 1x1 conv gives per-pixel logits.
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "harness/errors.h"
#include "harness/registry.h"

namespace remat::gen {
namespace {

Tensor DoubleConv(Network& net, const std::string& prefix, Tensor x,
                  int64_t channels) {
  for (int i = 1; i <= 2; ++i) {
    x = Conv2d(net, fmt::format("{}.conv{}", prefix, i), x, channels, 3, 1, 1);
    x = BatchNorm(net, fmt::format("{}.bn{}", prefix, i), x);
    x = Unary(net, Op::kRelu, fmt::format("{}.relu{}", prefix, i), x);
  }
  return x;
}

Graph GenerateUNet(const Params& params, const std::string& spec) {
  const int64_t levels = params.Int("levels");
  const int64_t image = params.Int("image");
  // Every level halves the image, which must stay a whole number of pixels
  // so that the decoder's outputs match the skip connections.
  if (levels > 30) {
    throw InputError(
        fmt::format("{}: levels={} is too large (at most 30)", spec, levels));
  }
  if (image % (int64_t{1} << (levels - 1)) != 0) {
    throw InputError(fmt::format(
        "{}: image={} must be divisible by 2^(levels-1) for levels={}", spec,
        image, levels));
  }
  Network net(spec, DtypeBytes(params.String("dtype")));
  const int64_t base = params.Int("base");
  Tensor x = net.Data({params.Int("batch"), 3, image, image});
  std::vector<Tensor> skips;
  for (int64_t level = 0; level < levels; ++level) {
    if (level > 0) {
      x = MaxPool(net, fmt::format("down{}.pool", level), x, 2, 2, 0);
    }
    x = DoubleConv(net, fmt::format("down{}", level), x,
                   net.Mul(base, int64_t{1} << level));
    skips.push_back(x);
  }
  for (int64_t level = levels - 2; level >= 0; --level) {
    const int64_t channels = net.Mul(base, int64_t{1} << level);
    const std::string prefix = fmt::format("up{}", level);
    x = ConvTranspose2d(net, prefix + ".upconv", x, channels, 2,
                        /*bias=*/true);
    x = Concat(net, prefix + ".concat", {skips[level], x});
    x = DoubleConv(net, prefix, x, channels);
  }
  x = Conv2d(net, "out", x, params.Int("classes"), 1, 1, 0, 1, /*bias=*/true);
  CrossEntropyLoss(net, x);
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "unet",
    .description = "U-Net training graph (padded convs, batch norm, "
                   "transposed-conv upsampling, skip concatenations)",
    .params = {{.name = "levels",
                .type = ParamSpec::Type::kInt,
                .default_value = "5",
                .description = "resolution levels (5 in the paper)",
                .min_int = 1},
               {.name = "base",
                .type = ParamSpec::Type::kInt,
                .default_value = "64",
                .description = "channels of the first level, doubled per "
                               "level",
                .min_int = 1},
               BatchParam("4"),
               {.name = "image",
                .type = ParamSpec::Type::kInt,
                .default_value = "256",
                .description = "height and width of the input images",
                .min_int = 1},
               ClassesParam("2", "output classes per pixel"),
               DtypeParam()},
    .generate = GenerateUNet,
});

}  // namespace
}  // namespace remat::gen
