// Dropout as one fused pass, with or without a ReLU before it: the mask is a counter-based hash
// (kernels/kernels.h) instead of a stored Bernoulli tensor. LibTorch 1.13's CPU dropout draws
// every element from a Mersenne Twister and multiplies by a separate mask tensor; at the size of
// a hidden layer's output (50K x 256 per products-scale batch) that was a tenth of a step.
#pragma once

#include <ATen/core/Tensor.h>

namespace fanout::trainer {

// In training with p > 0: dropout(relu(x)) (relu = true) or dropout(x), each kept element scaled
// by 1 / (1 - p), the mask seeded by one draw from LibTorch's default CPU generator (so
// SeedTorch makes it repeatable). Otherwise relu(x) or x. Differentiable in x. float32 CPU
// tensors take the fused kernel; others the ATen ops.
at::Tensor Dropout(const at::Tensor& x, double p, bool training, bool relu = false);

// Dropout(x, p, training, relu = true) written over x: saves a tensor of x's size per call. x must
// be a temporary that no other operation's backward pass needs (an add's or a matrix product's
// output, not a parameter or a layer's input); LibTorch's version counter refuses the backward
// pass otherwise.
at::Tensor ReluDropoutInPlace(const at::Tensor& x, double p, bool training);

}  // namespace fanout::trainer
