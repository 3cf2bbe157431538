// pspnet:backbone=resnet50|resnet101,batch=B,image=H[,classes=K][,dtype=T]
// — the training graph of PSPNet (Zhao et al., CVPR 2017).
//
// The backbone is a torchvision ResNet whose last two stages are dilated
// instead of strided (output stride 8). The pyramid pooling module pools
// the 2048-channel features to 1x1, 2x2, 3x3 and 6x6 bins, reduces each to
// 512 channels (1x1 conv-bn-relu), upsamples each back to the feature size
// and concatenates them with the features; a 3x3 conv-bn-relu and a 1x1
// classifier follow, and the logits are upsampled to the image. The
// auxiliary loss of the paper and dropout are left out.
#include <fmt/format.h>

#include "graphs/generators/resnet_backbone.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

struct PspNetOptions : LayerOptions {
  int64_t backbone_depth = 0;
  int64_t image = 0;
  int64_t classes = 0;
};

const Options<PspNetOptions> kOptions(
    ChoiceOption<PspNetOptions, int64_t>(&PspNetOptions::backbone_depth,
                                         "backbone", 50,
                                         {{"resnet50", 50}, {"resnet101", 101}},
                                         "dilated ResNet backbone"),
    BatchOption<PspNetOptions>(8),
    IntOption(&PspNetOptions::image, "image", 473,
              "height and width of the input images (473 in the paper)", 1),
    ClassesOption(&PspNetOptions::classes, 21,
                  "output classes per pixel (21: PASCAL VOC)"),
    DtypeOption<PspNetOptions>());

Graph GeneratePspNet(const PspNetOptions& options, const std::string& spec) {
  ResNetLayout layout;
  layout.blocks = ImageNetBlocks(options.backbone_depth);
  layout.dilate = {false, false, true, true};
  Network net(spec, options.element_bytes);
  const int64_t image = options.image;
  Tensor features =
      ResNetFeatures(net, net.Data({options.batch, 3, image, image}), layout);

  std::vector<Tensor> pyramid = {features};
  const int64_t h = features.shape.h, w = features.shape.w;
  for (int64_t bins : {1, 2, 3, 6}) {
    const std::string prefix = fmt::format("ppm.bin{}", bins);
    Tensor y = AdaptiveAvgPool(net, prefix + ".pool", features, bins, bins);
    y = Conv2d(net, prefix + ".conv", y, 512, 1);
    y = Unary(net, Op::kRelu, prefix + ".relu",
              BatchNorm(net, prefix + ".bn", y));
    pyramid.push_back(UpsampleBilinear(net, prefix + ".upsample", y, h, w));
  }
  Tensor x = Concat(net, "ppm.concat", pyramid);
  x = Conv2d(net, "head.conv", x, 512, 3, 1, 1);
  x = Unary(net, Op::kRelu, "head.relu", BatchNorm(net, "head.bn", x));
  x = Conv2d(net, "head.classifier", x, options.classes, 1, 1, 0, 1,
             /*bias=*/true);
  x = UpsampleBilinear(net, "upsample", x, image, image);
  CrossEntropyLoss(net, x);
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "pspnet",
    .description = "PSPNet training graph (dilated ResNet, pyramid pooling "
                   "with bins 1, 2, 3, 6)",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GeneratePspNet),
});

}  // namespace
}  // namespace remat::gen
