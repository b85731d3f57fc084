#include "trainer/tensor_convert.h"

#include <ATen/ops/empty.h>

#include <cstring>

#include "base/check.h"

namespace fanout::trainer {

at::ScalarType ScalarTypeOf(core::DType t) {
  switch (t) {
    case core::DType::kBool: return at::kBool;
    case core::DType::kInt8: return at::kChar;
    case core::DType::kUInt8: return at::kByte;
    case core::DType::kInt16: return at::kShort;
    case core::DType::kInt32: return at::kInt;
    case core::DType::kInt64: return at::kLong;
    case core::DType::kFloat16: return at::kHalf;
    case core::DType::kFloat32: return at::kFloat;
    case core::DType::kFloat64: return at::kDouble;
  }
  FANOUT_CHECK(false);
  return at::kFloat;
}

at::Tensor DecodeFeatures(const at::Tensor& stored, core::FeatureCodec codec) {
  switch (codec) {
    case core::FeatureCodec::kNone:
      return stored.scalar_type() == at::kFloat ? stored : stored.to(at::kFloat);
    case core::FeatureCodec::kBFloat16:
      return stored.view(at::kBFloat16).to(at::kFloat);
    case core::FeatureCodec::kInt8: {
      const int64_t dim = stored.size(1) - core::kInt8RowTail;
      const at::Tensor tail = stored.narrow(1, dim, core::kInt8RowTail).contiguous().view(at::kFloat);  // [n, 2]
      return stored.narrow(1, 0, dim).to(at::kFloat).mul_(tail.narrow(1, 0, 1)).add_(tail.narrow(1, 1, 1));
    }
  }
  FANOUT_CHECK(false);
  return stored;
}

at::Tensor Int64Tensor(const std::vector<int64_t>& v) {
  at::Tensor t = at::empty({static_cast<int64_t>(v.size())}, at::kLong);
  if (!v.empty()) std::memcpy(t.data_ptr<int64_t>(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

}  // namespace fanout::trainer
