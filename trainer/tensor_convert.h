// Stored values as LibTorch tensors, the conversions that batch_tensors.h and feature_cache.h
// share: a stored dtype's scalar type, stored feature rows decoded to float32, and int64 vectors.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/feature_codec.h"

namespace fanout::trainer {

// LibTorch's scalar type for a stored dtype.
at::ScalarType ScalarTypeOf(core::DType t);

// Stored feature rows (any dtype and device; [n, stored values]) as float32 [n, dim] on the same
// device, decoded by `codec` (core/feature_codec.h): the values as they are for none, bfloat16
// bits widened, int8 codes times their row's scale plus its offset.
at::Tensor DecodeFeatures(const at::Tensor& stored, core::FeatureCodec codec);

// A new int64 CPU tensor holding `v`.
at::Tensor Int64Tensor(const std::vector<int64_t>& v);

}  // namespace fanout::trainer
