// mlp:layers=L,width=W,batch=B[,input=I][,classes=K][,dtype=T] — the
// training graph of a multilayer perceptron: L hidden layers of W units
// (linear with bias, then ReLU) and a linear classifier with cross-entropy.
// The simplest layer-level graph: a chain with the real per-op backward
// dependencies (a linear's backward reads its input, a relu's its output).
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

struct MlpOptions : LayerOptions {
  int64_t layers = 0;
  int64_t width = 0;
  int64_t input = 0;
  int64_t classes = 0;
};

const Options<MlpOptions> kOptions(
    IntOption(&MlpOptions::layers, "layers", 8, "hidden layers"),
    IntOption(&MlpOptions::width, "width", 1024, "units per hidden layer", 1),
    BatchOption<MlpOptions>(64),
    IntOption(&MlpOptions::input, "input", 784, "input features", 1),
    ClassesOption(&MlpOptions::classes, 10, "outputs of the classifier"),
    DtypeOption<MlpOptions>());

Graph GenerateMlp(const MlpOptions& options, const std::string& spec) {
  const int64_t layers = options.layers;
  CheckOpCount(spec, layers > kMaxForwardOps ? layers : 2 * layers + 2);
  Network net(spec, options.element_bytes);
  Tensor x = net.Data({options.batch, options.input, 1, 1});
  for (int64_t i = 1; i <= layers; ++i) {
    x = Linear(net, fmt::format("fc{}", i), x, options.width);
    x = Unary(net, Op::kRelu, fmt::format("relu{}", i), x);
  }
  CrossEntropyLoss(net, Linear(net, "classifier", x, options.classes));
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "mlp",
    .description = "multilayer perceptron training graph (linear-relu "
                   "layers, linear classifier)",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateMlp),
});

}  // namespace
}  // namespace remat::gen
