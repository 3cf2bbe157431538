// lstm:steps=T,hidden=H,batch=B[,input=I][,classes=K][,dtype=T] — the
// training graph of an LSTM (Hochreiter and Schmidhuber 1997) unrolled
// over T steps, with a classifier on the last hidden state.
//
// Step t, as torch.nn.LSTM computes it: gates = W [x_t; h_(t-1)] + b (one
// matmul for all four gates), sigmoid of the input, forget and output gates,
// tanh of the cell candidate g, c_t = f c_(t-1) + i g, h_t = o tanh(c_t).
// The gates are slices (views) of one value. The weights are shared by all
// steps and counted once: 4H(I+H) + 8H parameters, like torch.nn.LSTM. The
// initial state is zero, so step 1 has no f c_0 term. The inputs x_t are
// the input batch.
#include <fmt/format.h>

#include "graphs/generators/layers.h"
#include "model/errors.h"
#include "model/registry.h"

namespace remat::gen {
namespace {

struct LstmOptions : LayerOptions {
  int64_t steps = 0;
  int64_t hidden = 0;
  int64_t input = 0;
  int64_t classes = 0;
};

const Options<LstmOptions> kOptions(
    IntOption(&LstmOptions::steps, "steps", 64, "time steps", 1),
    IntOption(&LstmOptions::hidden, "hidden", 512, "hidden and cell state size",
              1),
    BatchOption<LstmOptions>(32),
    IntOption(&LstmOptions::input, "input", 0,
              "input features per step (0: hidden)"),
    ClassesOption(&LstmOptions::classes, 10, "outputs of the classifier"),
    DtypeOption<LstmOptions>());

Graph GenerateLstm(const LstmOptions& options, const std::string& spec) {
  const int64_t steps = options.steps;
  CheckOpCount(spec, steps > kMaxForwardOps ? steps : 8 * steps + 2);
  Network net(spec, options.element_bytes);
  const int64_t batch = options.batch;
  const int64_t hidden = options.hidden;
  const int64_t input = options.input > 0 ? options.input : hidden;
  const int64_t gate_rows = net.Mul(4, hidden);
  const int64_t weights = net.Mul(gate_rows, net.Add(input, hidden));
  const int64_t gate_flops = net.Mul(2, net.Mul(batch, weights));
  net.Data({batch, input, steps, 1});

  auto slice = [&](const Tensor& t, int64_t channels) {
    return Tensor{t.node, {batch, channels, 1, 1}};
  };
  Tensor h, c;  // kNoNode at first: the zero initial state
  for (int64_t t = 1; t <= steps; ++t) {
    const std::string p = fmt::format("t{}.", t);
    std::vector<Tensor> gate_inputs;
    if (t > 1) gate_inputs.push_back(h);
    Tensor gates = net.AddOp(
        Op::kLinear, p + "gates", gate_inputs, {batch, gate_rows, 1, 1},
        gate_flops, t == 1 ? net.Add(weights, net.Mul(2, gate_rows)) : 0);
    Tensor ifo = Unary(net, Op::kSigmoid, p + "sigmoid",
                       slice(gates, net.Mul(3, hidden)));
    Tensor g = Unary(net, Op::kTanh, p + "tanh_g", slice(gates, hidden));
    Tensor ig = Binary(net, Op::kMul, p + "i_g", slice(ifo, hidden), g);
    if (t > 1) {
      Tensor fc = Binary(net, Op::kMul, p + "f_c", slice(ifo, hidden), c);
      c = Binary(net, Op::kAdd, p + "c", fc, ig);
    } else {
      c = ig;
    }
    Tensor tanh_c = Unary(net, Op::kTanh, p + "tanh_c", c);
    h = Binary(net, Op::kMul, p + "h", slice(ifo, hidden), tanh_c);
  }
  CrossEntropyLoss(net, Linear(net, "fc", h, options.classes));
  return std::move(net).Build();
}

const bool kRegistered = RegisterGenerator({
    .name = "lstm",
    .description = "unrolled LSTM training graph with a classifier on the "
                   "last hidden state",
    .params = kOptions.Specs(),
    .generate = GenerateWith(kOptions, GenerateLstm),
});

}  // namespace
}  // namespace remat::gen
