// vgg:depth=11|13|16|19,batch=B,image=H[,classes=K][,dtype=T] — the
// training graph of VGG (Simonyan and Zisserman, ICLR 2015), configurations
// A, B, D and E in torchvision's layout: 3x3 convolutions with bias and
// ReLU, 2x2 max pools, then three fully connected layers (138,357,544
// parameters for VGG-16). The 7x7 adaptive average pool that torchvision
// puts before the classifier is an identity for 224x224 images and is only
// added for other sizes. Dropout is left out (see graphs/README.md).
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "model/errors.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

// Channels of each 3x3 convolution; 0 is a max pool.
std::vector<int64_t> Configuration(int64_t depth) {
  switch (depth) {
    case 11:
      return {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
    case 13:
      return {64, 64, 0, 128, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
    case 16:
      return {64, 64,  0,   128, 128, 0,   256, 256, 256,
              0,  512, 512, 512, 0,   512, 512, 512, 0};
    case 19:
      return {64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
              512, 512, 512, 512, 0,   512, 512, 512, 512, 0};
    default:
      return {};
  }
}

struct VggOptions : LayerOptions {
  int64_t depth = 0;
  int64_t image = 0;
  int64_t classes = 0;
};

const Options<VggOptions> kOptions(
    IntOption(&VggOptions::depth, "depth", 16,
              "number of weight layers: 11, 13, 16 or 19", 1),
    BatchOption<VggOptions>(32),
    IntOption(&VggOptions::image, "image", 224,
              "height and width of the input images (at least 32)", 32),
    ClassesOption(&VggOptions::classes, 1000, "outputs of the classifier"),
    DtypeOption<VggOptions>());

Graph GenerateVgg(const VggOptions& options, const std::string& spec) {
  const std::vector<int64_t> config = Configuration(options.depth);
  if (config.empty()) {
    throw InputError(
        fmt::format("{}: depth={} is not a VGG depth (11, 13, "
                    "16 or 19)",
                    spec, options.depth));
  }
  Network net(spec, options.element_bytes);
  const int64_t image = options.image;
  Tensor x = net.Data({options.batch, 3, image, image});
  int64_t conv = 0, pool = 0;
  for (int64_t channels : config) {
    if (channels == 0) {
      x = MaxPool(net, fmt::format("pool{}", ++pool), x, 2, 2, 0);
    } else {
      ++conv;
      x = Conv2d(net, fmt::format("conv{}", conv), x, channels, 3, 1, 1, 1,
                 /*bias=*/true);
      x = Unary(net, Op::kRelu, fmt::format("relu{}", conv), x);
    }
  }
  if (x.shape.h != 7 || x.shape.w != 7) {
    x = AdaptiveAvgPool(net, "avgpool", x, 7, 7);
  }
  x = Flatten(x);
  x = Unary(net, Op::kRelu, "fc1.relu", Linear(net, "fc1", x, 4096));
  x = Unary(net, Op::kRelu, "fc2.relu", Linear(net, "fc2", x, 4096));
  x = Linear(net, "fc3", x, options.classes);
  CrossEntropyLoss(net, x);
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "vgg",
    .description = "VGG training graph (configurations A, B, D, E)",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateVgg),
});

}  // namespace
}  // namespace remat::gen
