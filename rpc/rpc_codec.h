// Conversions between the wire types (fanout.v1 protos, grpc::Status) and fanout's domain types.
// The only place that knows both; one conversion pair for statuses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "fanout/v1/graph.pb.h"
#include "grpcpp/support/status.h"

namespace fanout::rpc {

grpc::Status ToGrpcStatus(const absl::Status& s);
absl::Status FromGrpcStatus(const grpc::Status& s);

v1::DType ToProtoDType(core::DType t);
absl::StatusOr<core::DType> FromProtoDType(v1::DType t);

// Fills `out` with a tensor of `dtype` and `shape` whose bytes are `data` (one copy).
void FillTensor(core::DType dtype, const std::vector<int64_t>& shape, std::string data, v1::Tensor* out);
void FillInt64Tensor(const std::vector<int64_t>& values, v1::Tensor* out);
void FillInt32Tensor(const std::vector<int32_t>& values, v1::Tensor* out);

// The int64 (int32) [n] vector in `t`. Errors name `what` (e.g. "ids") and what is wrong.
absl::StatusOr<std::vector<int64_t>> Int64Vector(const v1::Tensor& t, const char* what);
absl::StatusOr<std::vector<int32_t>> Int32Vector(const v1::Tensor& t, const char* what);
// IDs as int64 or, where every one fits, int32 (the compact sampling answer), and back.
void FillIdTensor(const std::vector<int64_t>& values, v1::Tensor* out);
absl::StatusOr<std::vector<int64_t>> IdVector(const v1::Tensor& t, const char* what);
// Checks that `t` holds a well-formed tensor (known dtype, data size = prod(shape) * size).
absl::Status CheckTensor(const v1::Tensor& t, const char* what);

}  // namespace fanout::rpc
