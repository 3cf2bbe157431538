// The residual network body shared by the resnet and pspnet generators:
// the torchvision layout (He et al., CVPR 2016) with its option of dilated
// stages (replace_stride_with_dilation), and the CIFAR layout of the same
// paper (3x3 stem, three stages) that the very deep variants use.
#pragma once

#include <cstdint>
#include <vector>

#include "graphs/generators/layers.h"

namespace remat::gen {

struct ResNetLayout {
  bool bottleneck = true;  // 1x1-3x3-1x1 blocks (x4 expansion), else 3x3-3x3
  // True: 7x7/2 conv and 3x3/2 max pool, stages of width, 2 width, 4 width,
  // 8 width. False (CIFAR): one 3x3 conv, stages of width, 2 width, ...
  bool imagenet_stem = true;
  std::vector<int64_t> blocks;  // residual blocks per stage
  int64_t width = 64;           // channels of the first stage's 3x3 convs
  // Per stage: replace the stride-2 downsampling by dilation (torchvision's
  // replace_stride_with_dilation; PSPNet dilates the last two stages).
  std::vector<bool> dilate;
};

// Standard block counts of the ImageNet ResNets, or empty if `depth` is not
// one of 18, 34, 50, 101, 152, 200.
std::vector<int64_t> ImageNetBlocks(int64_t depth);

// An upper bound on the forward operations of `layout` (stem and blocks,
// no head), for CheckOpCount.
int64_t ResNetOpCount(const ResNetLayout& layout);

// Adds the stem and all stages on top of `image`; returns the last stage's
// feature map. Operation names are torchvision's module paths
// (layer3.4.conv2).
Tensor ResNetFeatures(Network& net, const Tensor& image,
                      const ResNetLayout& layout);

}  // namespace remat::gen
