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

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "graphs/generators/resnet_backbone.h"
#include "model/errors.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

// Big enough for the 1,000-layer nets and beyond; CheckOpCount has the
// final say on size.
constexpr int64_t kMaxDepth = 10'000'000;

enum class Block { kAuto, kBasic, kBottleneck };

// The `block` choices, by name: the option's and the refusal's text.
const std::vector<std::pair<std::string, Block>> kBlockNames = {
    {"auto", Block::kAuto},
    {"basic", Block::kBasic},
    {"bottleneck", Block::kBottleneck}};

struct ResNetOptions : LayerOptions {
  int64_t depth = 0;
  int64_t image = 0;
  int64_t width = 0;
  Block block = Block::kAuto;
  int64_t classes = 0;
};

const Options<ResNetOptions> kOptions(
    IntOption(&ResNetOptions::depth, "depth", 50,
              "18, 34, 50, 101, 152, 200, 6n+2 or 9n+2", 1),
    BatchOption<ResNetOptions>(32),
    IntOption(&ResNetOptions::image, "image", 224,
              "height and width of the input images", 1),
    IntOption(&ResNetOptions::width, "width", 0,
              "channels of the first stage (0: 64 for the ImageNet layout, 16 "
              "for CIFAR); later stages double it"),
    ChoiceOption(&ResNetOptions::block, "block", Block::kAuto, kBlockNames,
                 "residual block type (auto: by depth)"),
    ClassesOption(&ResNetOptions::classes, 1000, "outputs of the classifier"),
    DtypeOption<ResNetOptions>());

ResNetLayout Layout(const ResNetOptions& options, const std::string& spec) {
  const int64_t depth = options.depth;
  const Block block = options.block;
  if (depth > kMaxDepth) {
    throw InputError(fmt::format("{}: depth={} is too large (at most {})", spec,
                                 depth, kMaxDepth));
  }
  ResNetLayout layout;
  std::vector<int64_t> imagenet = ImageNetBlocks(depth);
  const bool imagenet_bottleneck = depth >= 50;
  if (!imagenet.empty() &&
      (block == Block::kAuto ||
       (block == Block::kBottleneck) == imagenet_bottleneck)) {
    layout.bottleneck = imagenet_bottleneck;
    layout.blocks = std::move(imagenet);
    layout.width = 64;
  } else {
    layout.imagenet_stem = false;
    layout.width = 16;
    const bool basic_fits = depth >= 8 && (depth - 2) % 6 == 0;
    const bool bottleneck_fits = depth >= 11 && (depth - 2) % 9 == 0;
    if (block != Block::kBottleneck && basic_fits) {
      layout.bottleneck = false;
      layout.blocks.assign(3, (depth - 2) / 6);
    } else if (block != Block::kBasic && bottleneck_fits) {
      layout.bottleneck = true;
      layout.blocks.assign(3, (depth - 2) / 9);
    } else {
      const auto named = std::ranges::find(
          kBlockNames, block, &std::pair<std::string, Block>::second);
      throw InputError(fmt::format(
          "{}: depth={} is not a ResNet depth for block={}: use 18, 34, 50, "
          "101, 152, 200, 6n+2 (basic blocks) or 9n+2 (bottleneck blocks)",
          spec, depth, named->first));
    }
  }
  if (options.width > 0) layout.width = options.width;
  return layout;
}

Graph GenerateResNet(const ResNetOptions& options, const std::string& spec) {
  const ResNetLayout layout = Layout(options, spec);
  CheckOpCount(spec, ResNetOpCount(layout) + 3);
  Network net(spec, options.element_bytes);
  const int64_t image = options.image;
  Tensor x = net.Data({options.batch, 3, image, image});
  x = ResNetFeatures(net, x, layout);
  x = AdaptiveAvgPool(net, "avgpool", x, 1, 1);
  x = Linear(net, "fc", Flatten(x), options.classes);
  CrossEntropyLoss(net, x);
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "resnet",
    .description = "residual network training graph (ImageNet depths "
                   "18..200, CIFAR-style 6n+2 / 9n+2 for any other depth)",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateResNet),
});

}  // namespace
}  // namespace remat::gen
