// mlp:layers=L,width=W,batch=B[,input=I][,classes=K][,dtype=T] — the
// training graph of a multilayer perceptron: L hidden layers of W units
// (linear with bias, then ReLU) and a linear classifier with cross-entropy.
// The simplest layer-level graph: a chain with the real per-op backward
// dependencies (a linear's backward reads its input, a relu's its output).
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "harness/registry.h"

namespace remat::gen {
namespace {

Graph GenerateMlp(const Params& params, const std::string& spec) {
  const int64_t layers = params.Int("layers");
  CheckOpCount(spec, layers > kMaxForwardOps ? layers : 2 * layers + 2);
  Network net(spec, DtypeBytes(params.String("dtype")));
  Tensor x = net.Data({params.Int("batch"), params.Int("input"), 1, 1});
  for (int64_t i = 1; i <= layers; ++i) {
    x = Linear(net, fmt::format("fc{}", i), x, params.Int("width"));
    x = Unary(net, Op::kRelu, fmt::format("relu{}", i), x);
  }
  CrossEntropyLoss(net, Linear(net, "classifier", x, params.Int("classes")));
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "mlp",
    .description = "multilayer perceptron training graph (linear-relu "
                   "layers, linear classifier)",
    .params = {{.name = "layers",
                .type = ParamSpec::Type::kInt,
                .default_value = "8",
                .description = "hidden layers",
                .min_int = 0},
               {.name = "width",
                .type = ParamSpec::Type::kInt,
                .default_value = "1024",
                .description = "units per hidden layer",
                .min_int = 1},
               BatchParam("64"),
               {.name = "input",
                .type = ParamSpec::Type::kInt,
                .default_value = "784",
                .description = "input features",
                .min_int = 1},
               ClassesParam("10", "outputs of the classifier"),
               DtypeParam()},
    .generate = GenerateMlp,
});

}  // namespace
}  // namespace remat::gen
