// The layers the generators are made of, each one forward operation of a
// Network with its output shape, FLOPs and parameter count.
//
// Cost model (FLOPs, one multiply-add = 2):
//   convolution   2 K_h K_w C_in C_out H_out W_out N (bias adds ignored)
//   transposed    2 K_h K_w C_in C_out H_in W_in N
//   linear        2 rows in out; matmul 2 M N K per product
//   pooling       one per window element read: K_h K_w per output element,
//                 an adaptive average pool one per input element
//   element-wise  one per output element (activations, add, mul, norms,
//                 softmax, upsampling, concat)
//   losses        one per prediction element
#pragma once

#include <string>
#include <vector>

#include "graphs/generators/training_graph.h"

namespace remat::gen {

// Output length of a sliding window along one axis; throws an InputError
// naming the spec when the input is too small for the window.
int64_t WindowOutput(const Network& net, int64_t in, int64_t kernel,
                     int64_t stride, int64_t pad, int64_t dilation = 1);

Tensor Conv2d(Network& net, std::string name, const Tensor& x,
              int64_t out_channels, int64_t kernel, int64_t stride = 1,
              int64_t pad = 0, int64_t dilation = 1, bool bias = false);
// Non-overlapping transposed convolution (kernel = stride), the U-Net
// up-convolution: the output is `kernel` times larger in H and W.
Tensor ConvTranspose2d(Network& net, std::string name, const Tensor& x,
                       int64_t out_channels, int64_t kernel, bool bias);
// Acts on the features (c) of every row (n, h, w).
Tensor Linear(Network& net, std::string name, const Tensor& x,
              int64_t out_features, bool bias = true);

// Per-channel scale and shift: 2 C parameters.
Tensor BatchNorm(Network& net, std::string name, const Tensor& x);
// Normalizes over the features c with 2 C parameters.
Tensor LayerNorm(Network& net, std::string name, const Tensor& x);
// A parameter-free operation whose output has the input's shape: relu,
// gelu, sigmoid, tanh, softmax (over c).
Tensor Unary(Network& net, Op op, std::string name, const Tensor& x);
// Element-wise add or mul of two tensors of the same shape.
Tensor Binary(Network& net, Op op, std::string name, const Tensor& a,
              const Tensor& b);

Tensor MaxPool(Network& net, std::string name, const Tensor& x, int64_t kernel,
               int64_t stride, int64_t pad);
// PyTorch's AdaptiveAvgPool2d to out_h x out_w.
Tensor AdaptiveAvgPool(Network& net, std::string name, const Tensor& x,
                       int64_t out_h, int64_t out_w);
Tensor UpsampleBilinear(Network& net, std::string name, const Tensor& x,
                        int64_t out_h, int64_t out_w);
// Concatenation along c; the inputs share n, h and w.
Tensor Concat(Network& net, std::string name, const std::vector<Tensor>& xs);

// (n, c, h, w) -> (n, c h w, 1, 1): a view, no operation.
Tensor Flatten(const Tensor& x);

// Cross-entropy of logits (classes in c) against int64 labels, one per
// (n, h, w) position; the labels are part of the input batch.
Tensor CrossEntropyLoss(Network& net, const Tensor& logits);
// Mean squared error against a target batch of the prediction's shape.
Tensor MseLoss(Network& net, const Tensor& prediction);

}  // namespace remat::gen
