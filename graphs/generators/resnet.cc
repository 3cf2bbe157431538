// resnet:depth=D,batch=B,image=H[,width=W][,block=...][,classes=K][,dtype=T]
// — the training graph of a residual network (He et al., CVPR 2016).
//
// depth 18, 34, 50, 101, 152 and 200 are the ImageNet networks (torchvision's
// layout: 25,557,032 parameters for ResNet-50). Any other depth is the CIFAR
// layout of the same paper: 6n+2 layers of basic blocks or 9n+2 layers of
// bottleneck blocks (He et al., ECCV 2016), which is how the very deep
// variants (ResNet-1001, the 1,000-layer nets of Chen et al. 2016) are
// built. `block` picks between the two when a depth is both 6n+2 and 9n+2
// (e.g. 56, 164). Shortcuts that change shape are 1x1 projections.
#include <fmt/format.h>

#include "graphs/generators/resnet_backbone.h"
#include "harness/errors.h"
#include "harness/registry.h"

namespace remat::gen {
namespace {

// Big enough for the 1,000-layer nets and beyond; CheckOpCount has the
// final say on size.
constexpr int64_t kMaxDepth = 10'000'000;

ResNetLayout Layout(const Params& params, const std::string& spec) {
  const int64_t depth = params.Int("depth");
  const std::string& block = params.String("block");
  if (depth > kMaxDepth) {
    throw InputError(fmt::format("{}: depth={} is too large (at most {})", spec,
                                 depth, kMaxDepth));
  }
  ResNetLayout layout;
  std::vector<int64_t> imagenet = ImageNetBlocks(depth);
  const bool imagenet_bottleneck = depth >= 50;
  if (!imagenet.empty() &&
      (block == "auto" || (block == "bottleneck") == imagenet_bottleneck)) {
    layout.bottleneck = imagenet_bottleneck;
    layout.blocks = std::move(imagenet);
    layout.width = 64;
  } else {
    layout.imagenet_stem = false;
    layout.width = 16;
    const bool basic_fits = depth >= 8 && (depth - 2) % 6 == 0;
    const bool bottleneck_fits = depth >= 11 && (depth - 2) % 9 == 0;
    if (block != "bottleneck" && basic_fits) {
      layout.bottleneck = false;
      layout.blocks.assign(3, (depth - 2) / 6);
    } else if (block != "basic" && bottleneck_fits) {
      layout.bottleneck = true;
      layout.blocks.assign(3, (depth - 2) / 9);
    } else {
      throw InputError(fmt::format(
          "{}: depth={} is not a ResNet depth for block={}: use 18, 34, 50, "
          "101, 152, 200, 6n+2 (basic blocks) or 9n+2 (bottleneck blocks)",
          spec, depth, block));
    }
  }
  if (params.Int("width") > 0) layout.width = params.Int("width");
  return layout;
}

Graph GenerateResNet(const Params& params, const std::string& spec) {
  const ResNetLayout layout = Layout(params, spec);
  CheckOpCount(spec, ResNetOpCount(layout) + 3);
  Network net(spec, DtypeBytes(params.String("dtype")));
  const int64_t image = params.Int("image");
  Tensor x = net.Data({params.Int("batch"), 3, image, image});
  x = ResNetFeatures(net, x, layout);
  x = AdaptiveAvgPool(net, "avgpool", x, 1, 1);
  x = Linear(net, "fc", Flatten(x), params.Int("classes"));
  CrossEntropyLoss(net, x);
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "resnet",
    .description = "residual network training graph (ImageNet depths "
                   "18..200, CIFAR-style 6n+2 / 9n+2 for any other depth)",
    .params = {{.name = "depth",
                .type = ParamSpec::Type::kInt,
                .default_value = "50",
                .description = "18, 34, 50, 101, 152, 200, 6n+2 or 9n+2",
                .min_int = 1},
               BatchParam("32"),
               {.name = "image",
                .type = ParamSpec::Type::kInt,
                .default_value = "224",
                .description = "height and width of the input images",
                .min_int = 1},
               {.name = "width",
                .type = ParamSpec::Type::kInt,
                .default_value = "0",
                .description = "channels of the first stage (0: 64 for the "
                               "ImageNet layout, 16 for CIFAR); later stages "
                               "double it"},
               {.name = "block",
                .type = ParamSpec::Type::kChoice,
                .default_value = "auto",
                .description = "residual block type (auto: by depth)",
                .choices = {"auto", "basic", "bottleneck"}},
               ClassesParam("1000", "outputs of the classifier"),
               DtypeParam()},
    .generate = GenerateResNet,
});

}  // namespace
}  // namespace remat::gen
