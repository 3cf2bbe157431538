#include "graphs/generators/layers.h"

#include <fmt/format.h>

#include <utility>

#include "model/errors.h"

namespace remat::gen {

int64_t WindowOutput(const Network& net, int64_t in, int64_t kernel,
                     int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = net.Add(net.Mul(dilation, kernel - 1), 1);
  const int64_t padded = net.Add(in, net.Mul(2, pad));
  if (padded < span) {
    throw InputError(fmt::format(
        "{}: a {}x{} window does not fit a feature map of size {} (the image "
        "is too small for this network)",
        net.spec(), kernel, kernel, in));
  }
  return (padded - span) / stride + 1;
}

namespace {

// Adds a kernel x kernel convolution, plain or transposed, from x to `out`:
// its parameters (weights and the optional bias) and two flops per weight
// at each position of `positions` (the output for a plain convolution, the
// input for a transposed one, whose every input pixel meets every weight).
Tensor AddConvolution(Network& net, Op op, std::string name, const Tensor& x,
                      const Shape& out, int64_t kernel, const Shape& positions,
                      bool bias) {
  const int64_t weights =
      net.Mul(net.Mul(kernel, kernel), net.Mul(x.shape.c, out.c));
  const int64_t flops = net.Mul(
      2, net.Mul(weights,
                 net.Mul(positions.n, net.Mul(positions.h, positions.w))));
  return net.AddOp(op, std::move(name), {x}, out, flops,
                   net.Add(weights, bias ? out.c : 0));
}

}  // namespace

Tensor Conv2d(Network& net, std::string name, const Tensor& x,
              int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad,
              int64_t dilation, bool bias) {
  const Shape& in = x.shape;
  const Shape out{in.n, out_channels,
                  WindowOutput(net, in.h, kernel, stride, pad, dilation),
                  WindowOutput(net, in.w, kernel, stride, pad, dilation)};
  return AddConvolution(net, Op::kConv2d, std::move(name), x, out, kernel,
                        /*positions=*/out, bias);
}

Tensor ConvTranspose2d(Network& net, std::string name, const Tensor& x,
                       int64_t out_channels, int64_t kernel, bool bias) {
  const Shape& in = x.shape;
  const Shape out{in.n, out_channels, net.Mul(in.h, kernel),
                  net.Mul(in.w, kernel)};
  return AddConvolution(net, Op::kConvTranspose2d, std::move(name), x, out,
                        kernel, /*positions=*/in, bias);
}

Tensor Linear(Network& net, std::string name, const Tensor& x,
              int64_t out_features, bool bias) {
  const Shape& in = x.shape;
  const Shape out{in.n, out_features, in.h, in.w};
  const int64_t rows = net.Mul(in.n, net.Mul(in.h, in.w));
  const int64_t weights = net.Mul(in.c, out_features);
  return net.AddOp(Op::kLinear, std::move(name), {x}, out,
                   net.Mul(2, net.Mul(rows, weights)),
                   net.Add(weights, bias ? out_features : 0));
}

Tensor BatchNorm(Network& net, std::string name, const Tensor& x) {
  return net.AddOp(Op::kBatchNorm, std::move(name), {x}, x.shape,
                   net.Elements(x.shape), net.Mul(2, x.shape.c));
}

Tensor LayerNorm(Network& net, std::string name, const Tensor& x) {
  return net.AddOp(Op::kLayerNorm, std::move(name), {x}, x.shape,
                   net.Elements(x.shape), net.Mul(2, x.shape.c));
}

Tensor Unary(Network& net, Op op, std::string name, const Tensor& x) {
  return net.AddOp(op, std::move(name), {x}, x.shape, net.Elements(x.shape), 0);
}

Tensor Binary(Network& net, Op op, std::string name, const Tensor& a,
              const Tensor& b) {
  return net.AddOp(op, std::move(name), {a, b}, a.shape, net.Elements(a.shape),
                   0);
}

Tensor MaxPool(Network& net, std::string name, const Tensor& x, int64_t kernel,
               int64_t stride, int64_t pad) {
  const Shape& in = x.shape;
  const Shape out{in.n, in.c, WindowOutput(net, in.h, kernel, stride, pad),
                  WindowOutput(net, in.w, kernel, stride, pad)};
  return net.AddOp(Op::kMaxPool, std::move(name), {x}, out,
                   net.Mul(net.Elements(out), net.Mul(kernel, kernel)), 0);
}

Tensor AdaptiveAvgPool(Network& net, std::string name, const Tensor& x,
                       int64_t out_h, int64_t out_w) {
  const Shape out{x.shape.n, x.shape.c, out_h, out_w};
  return net.AddOp(Op::kAvgPool, std::move(name), {x}, out,
                   net.Elements(x.shape), 0);
}

Tensor UpsampleBilinear(Network& net, std::string name, const Tensor& x,
                        int64_t out_h, int64_t out_w) {
  const Shape out{x.shape.n, x.shape.c, out_h, out_w};
  return net.AddOp(Op::kUpsample, std::move(name), {x}, out, net.Elements(out),
                   0);
}

Tensor Concat(Network& net, std::string name, const std::vector<Tensor>& xs) {
  Shape out = xs.front().shape;
  out.c = 0;
  for (const Tensor& x : xs) out.c = net.Add(out.c, x.shape.c);
  return net.AddOp(Op::kConcat, std::move(name), xs, out, net.Elements(out), 0);
}

Tensor Flatten(const Tensor& x) {
  return {x.node, {x.shape.n, x.shape.c * x.shape.h * x.shape.w, 1, 1}};
}

Tensor CrossEntropyLoss(Network& net, const Tensor& logits) {
  const Shape& s = logits.shape;
  net.Data({s.n, 1, s.h, s.w}, /*element_bytes=*/8);
  return net.AddOp(Op::kCrossEntropy, "loss", {logits}, {}, net.Elements(s), 0);
}

Tensor MseLoss(Network& net, const Tensor& prediction) {
  net.Data(prediction.shape);
  return net.AddOp(Op::kMseLoss, "loss", {prediction}, {},
                   net.Elements(prediction.shape), 0);
}

}  // namespace remat::gen
