// unet:levels=L,base=C,batch=B,image=H[,channels=I][,classes=K]
//      [,padding=same|valid][,norm=batch|none][,dtype=T] — the training
// graph of U-Net (Ronneberger et al., MICCAI 2015).
//
// Level i (0-based) works at about 1 / 2^i of the image with C 2^i
// channels. Encoder: a double conv (two 3x3 convs, each followed by its
// norm and a ReLU) per level, a 2x2 max pool between levels. Decoder, from
// the bottom up: a 2x2 transposed conv that halves the channels, concat with
// the encoder output of the same level (the skip connection that keeps that
// output live across the whole net), a double conv. A final 1x1 conv gives
// per-pixel logits.
//
// padding=same (default) is the network as usually trained today (the
// common PyTorch ports): padded convs, so the skips need no cropping, and
// batch norm with bias-free convs. The paper's own network is
// padding=valid,norm=none,channels=1: unpadded 3x3 convs with bias (each
// loses a 2-pixel border), so every skip is center-cropped to the decoder's
// size before the concat — a slice, which holds the whole skip output live
// as PyTorch's view does — and a 572x572 input gives a 388x388 output map.
// The paper's dropout at the end of the contracting path is left out, as
// everywhere (graphs/README.md).
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "model/errors.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

struct Layout {
  bool padded;
  bool batch_norm;
};

Tensor DoubleConv(Network& net, const std::string& prefix, Tensor x,
                  int64_t channels, const Layout& layout) {
  for (int i = 1; i <= 2; ++i) {
    x = Conv2d(net, fmt::format("{}.conv{}", prefix, i), x, channels, 3, 1,
               layout.padded ? 1 : 0, 1, /*bias=*/!layout.batch_norm);
    if (layout.batch_norm) {
      x = BatchNorm(net, fmt::format("{}.bn{}", prefix, i), x);
    }
    x = Unary(net, Op::kRelu, fmt::format("{}.relu{}", prefix, i), x);
  }
  return x;
}

// Refuses an image size for which some max pool would see an odd size (the
// decoder's outputs would then not line up with the skips) or a valid conv
// would run out of pixels; the paper picks 572 for this reason.
void CheckImageSize(const std::string& spec, int64_t image, int64_t levels,
                    bool padded) {
  if (padded) {
    if (image % (int64_t{1} << (levels - 1)) != 0) {
      throw InputError(fmt::format(
          "{}: image={} must be divisible by 2^(levels-1) for levels={}", spec,
          image, levels));
    }
    return;
  }
  int64_t size = image;
  for (int64_t level = 0; level < levels; ++level) {
    size -= 4;  // two unpadded 3x3 convs
    const bool pooled = level + 1 < levels;
    if (size < 1 || (pooled && size % 2 != 0)) {
      throw InputError(fmt::format(
          "{}: image={} does not fit levels={} with padding=valid: level {} "
          "has {} pixels after its convs (need at least 1, and an even "
          "number before each 2x2 max pool; 572 fits levels=5)",
          spec, image, levels, level, size));
    }
    if (pooled) size /= 2;
  }
  for (int64_t level = levels - 2; level >= 0; --level) {
    size = size * 2 - 4;
    if (size < 1) {
      throw InputError(fmt::format(
          "{}: image={} is too small for levels={} with padding=valid: the "
          "decoder's level {} has no pixels left",
          spec, image, levels, level));
    }
  }
}

struct UNetOptions : LayerOptions {
  int64_t levels = 0;
  int64_t base = 0;
  int64_t image = 0;
  int64_t channels = 0;
  int64_t classes = 0;
  Layout layout{};
  int64_t element_bytes = 0;
};

const Options<UNetOptions> kOptions(
    IntOption(&UNetOptions::levels, "levels", 5,
              "resolution levels (5 in the paper)", 1),
    IntOption(&UNetOptions::base, "base", 64,
              "channels of the first level, doubled per level", 1),
    BatchOption<UNetOptions>(4),
    IntOption(&UNetOptions::image, "image", 256,
              "height and width of the input images (572 in the paper)", 1),
    IntOption(&UNetOptions::channels, "channels", 3,
              "channels of the input images (1 in the paper)", 1),
    ClassesOption(&UNetOptions::classes, 2, "output classes per pixel"),
    NestedOptions<UNetOptions, Layout>(
        &UNetOptions::layout,
        {ChoiceOption(&Layout::padded, "padding", true,
                      {{"same", true}, {"valid", false}},
                      "same: padded 3x3 convs; valid: unpadded, skips "
                      "center-cropped (the paper)"),
         ChoiceOption(&Layout::batch_norm, "norm", true,
                      {{"batch", true}, {"none", false}},
                      "batch: batch norm after each 3x3 conv, convs without "
                      "bias; none: convs with bias (the paper)")}),
    DtypeOption<UNetOptions>());

Graph GenerateUNet(const UNetOptions& options, const std::string& spec) {
  const int64_t levels = options.levels;
  const int64_t image = options.image;
  const Layout& layout = options.layout;
  if (levels > 30) {
    throw InputError(
        fmt::format("{}: levels={} is too large (at most 30)", spec, levels));
  }
  CheckImageSize(spec, image, levels, layout.padded);
  Network net(spec, options.element_bytes);
  const int64_t base = options.base;
  Tensor x = net.Data({options.batch, options.channels, image, image});
  std::vector<Tensor> skips;
  for (int64_t level = 0; level < levels; ++level) {
    if (level > 0) {
      x = MaxPool(net, fmt::format("down{}.pool", level), x, 2, 2, 0);
    }
    x = DoubleConv(net, fmt::format("down{}", level), x,
                   net.Mul(base, int64_t{1} << level), layout);
    skips.push_back(x);
  }
  for (int64_t level = levels - 2; level >= 0; --level) {
    const int64_t channels = net.Mul(base, int64_t{1} << level);
    const std::string prefix = fmt::format("up{}", level);
    x = ConvTranspose2d(net, prefix + ".upconv", x, channels, 2,
                        /*bias=*/true);
    // The center crop of the skip to the decoder's size (a no-op when
    // padded); CheckImageSize keeps the border even.
    Tensor skip = skips[level];
    skip.shape.h = x.shape.h;
    skip.shape.w = x.shape.w;
    x = Concat(net, prefix + ".concat", {skip, x});
    x = DoubleConv(net, prefix, x, channels, layout);
  }
  x = Conv2d(net, "out", x, options.classes, 1, 1, 0, 1, /*bias=*/true);
  CrossEntropyLoss(net, x);
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "unet",
    .description = "U-Net training graph (transposed-conv upsampling, skip "
                   "concatenations); padded convs with batch norm, or the "
                   "paper's network: padding=valid,norm=none,channels=1, "
                   "image=572",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateUNet),
});

}  // namespace
}  // namespace remat::gen
