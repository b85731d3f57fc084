#include "rpc/rpc_codec.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::rpc {
namespace {

v1::Tensor Make(v1::DType dtype, std::vector<int64_t> shape, size_t data_bytes) {
  v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t d : shape) t.add_shape(d);
  t.mutable_data()->assign(data_bytes, '\0');
  return t;
}

TEST(RpcCodecTest, AcceptsWellFormedTensors) {
  EXPECT_TRUE(CheckTensor(Make(v1::FLOAT32, {2, 3}, 24), "x").ok());
  EXPECT_TRUE(CheckTensor(Make(v1::FLOAT16, {}, 2), "x").ok());
  EXPECT_TRUE(CheckTensor(Make(v1::INT64, {0, 5}, 0), "x").ok());
  auto v = Int64Vector(Make(v1::INT64, {2}, 16), "ids");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, (std::vector<int64_t>{0, 0}));
}

TEST(RpcCodecTest, RejectsMalformedTensorsNamingThem) {
  struct Case {
    v1::Tensor t;
    const char* expect;
  } cases[] = {
      {Make(v1::INT64, {3}, 16), "needs 24 bytes, data has 16"},
      {Make(v1::FLOAT32, {-1, -4}, 16), "negative"},
  };
  for (const auto& c : cases) {
    absl::Status s = CheckTensor(c.t, "seeds");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(std::string(s.message()).find("seeds"), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find(c.expect), std::string::npos) << s;
  }
  absl::Status s = CheckTensor(Make(v1::DTYPE_UNSPECIFIED, {1}, 1), "seeds");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find("unspecified dtype"), std::string::npos) << s;
}

TEST(RpcCodecTest, RejectsShapesWhoseSizeOverflows) {
  // Found by fuzzing (issue 11): 2^61 + 1 int64 elements are 2^64 + 8 bytes, which wrapped to 8,
  // so 8 bytes of data passed and Int64Vector then allocated 2^61 + 1 elements; a 2-D product
  // overflowed int64 (undefined behaviour).
  v1::Tensor wrap = Make(v1::INT64, {(int64_t{1} << 61) + 1}, 8);
  v1::Tensor product = Make(v1::FLOAT32, {int64_t{1} << 62, 4}, 0);
  for (const v1::Tensor* t : {&wrap, &product}) {
    absl::Status s = CheckTensor(*t, "ids");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(std::string(s.message()).find("64 bits"), std::string::npos) << s;
  }
  auto v = Int64Vector(wrap, "ids");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << v.status();
}

}  // namespace
}  // namespace fanout::rpc
