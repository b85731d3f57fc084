#include "rpc/rpc_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/status.h"
#include "base/strings.h"
#include "core/shape.h"

namespace fanout::rpc {

using base::StrCat;

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

v1::DType ToProtoDType(core::DType t) {
  return static_cast<v1::DType>(static_cast<int>(t) + 1);  // same order, 0 = unspecified
}

absl::StatusOr<core::DType> FromProtoDType(v1::DType t) {
  int i = static_cast<int>(t);
  if (i < 1 || i > static_cast<int>(core::DType::kFloat64) + 1) {
    return absl::InvalidArgumentError(StrCat("unknown or unspecified dtype ", i));
  }
  return static_cast<core::DType>(i - 1);
}

void FillTensor(core::DType dtype, const std::vector<int64_t>& shape, std::string data, v1::Tensor* out) {
  out->set_dtype(ToProtoDType(dtype));
  out->mutable_shape()->Assign(shape.begin(), shape.end());
  *out->mutable_data() = std::move(data);
}

namespace {

template <typename T>
void FillVectorTensor(const std::vector<T>& v, v1::DType dtype, v1::Tensor* out) {
  out->set_dtype(dtype);
  out->clear_shape();
  out->add_shape(static_cast<int64_t>(v.size()));
  out->mutable_data()->assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

void FillInt64Tensor(const std::vector<int64_t>& v, v1::Tensor* out) { FillVectorTensor(v, v1::INT64, out); }
void FillInt32Tensor(const std::vector<int32_t>& v, v1::Tensor* out) { FillVectorTensor(v, v1::INT32, out); }

absl::Status CheckTensor(const v1::Tensor& t, const char* what) {
  ASSIGN_OR_RETURN(core::DType dtype, FromProtoDType(t.dtype()));
  // Overflow-checked: a shape's product is never trusted to fit.
  ASSIGN_OR_RETURN(int64_t bytes, core::ShapeBytes(t.shape(), core::DTypeSize(dtype), what));
  if (static_cast<uint64_t>(bytes) != t.data().size()) {
    return absl::InvalidArgumentError(StrCat(what, ": ", core::DTypeName(dtype), " tensor of shape [",
                                             base::StrJoin(std::vector<int64_t>(t.shape().begin(), t.shape().end()), ", "),
                                             "] needs ", bytes, " bytes, data has ", t.data().size()));
  }
  return absl::OkStatus();
}

namespace {

template <typename T>
absl::StatusOr<std::vector<T>> VectorOf(const v1::Tensor& t, v1::DType dtype, const char* what) {
  if (t.dtype() != dtype) {
    return absl::InvalidArgumentError(StrCat(what, " must be ", core::DTypeName(*FromProtoDType(dtype)), ", got ",
                                             v1::DType_Name(t.dtype())));
  }
  if (t.shape_size() != 1) {
    return absl::InvalidArgumentError(StrCat(what, " must be 1-D, got ", t.shape_size(), " dimensions"));
  }
  RETURN_IF_ERROR(CheckTensor(t, what));
  std::vector<T> v(t.shape(0));
  if (!v.empty()) std::memcpy(v.data(), t.data().data(), v.size() * sizeof(T));
  return v;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> Int64Vector(const v1::Tensor& t, const char* what) {
  return VectorOf<int64_t>(t, v1::INT64, what);
}
absl::StatusOr<std::vector<int32_t>> Int32Vector(const v1::Tensor& t, const char* what) {
  return VectorOf<int32_t>(t, v1::INT32, what);
}

void FillIdTensor(const std::vector<int64_t>& values, v1::Tensor* out) {
  const bool narrow = std::all_of(values.begin(), values.end(), [](int64_t v) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  });
  if (!narrow) return FillInt64Tensor(values, out);
  FillInt32Tensor(std::vector<int32_t>(values.begin(), values.end()), out);
}

absl::StatusOr<std::vector<int64_t>> IdVector(const v1::Tensor& t, const char* what) {
  if (t.dtype() != v1::INT32) return Int64Vector(t, what);
  ASSIGN_OR_RETURN(std::vector<int32_t> narrow, Int32Vector(t, what));
  return std::vector<int64_t>(narrow.begin(), narrow.end());
}

}  // namespace fanout::rpc
