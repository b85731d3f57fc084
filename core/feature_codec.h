// Compressed node features (issue 40): how `fanout-partition --feature-dtype` stores a float
// feature row in fewer bytes, and how a reader turns it back into float32.
//
// Rows stay rows: a field's stored array is a plain NumPy array, one row per node, that servers,
// caches and the wire move as bytes without knowing the codec; the partition config names the
// codec (FieldSchema::codec) and the trainer, or the Python data plane, decodes after the fetch.
//   - none:     the stored dtype as it is (float32, float64, or float16 through core::DType).
//   - bfloat16: int16 [dim] holding each value's bfloat16 bits (the upper half of its float32,
//               rounded to nearest even): half the bytes, float32's range, 8 bits of precision.
//   - int8:     uint8 [dim + 8]: dim codes q, then the row's float32 scale and float32 offset
//               (little-endian); a value is offset + scale * q, so every row spans its own
//               [min, max] in 255 steps (FBGEMM's "fused 8-bit row-wise" layout): a quarter of
//               the bytes, error at most scale / 2 per value.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/dtype.h"

namespace fanout::core {

enum class FeatureCodec : uint8_t { kNone, kBFloat16, kInt8 };

// "" for kNone, "bfloat16", "int8": the config's and the flag's names.
std::string_view FeatureCodecName(FeatureCodec c);
absl::StatusOr<FeatureCodec> FeatureCodecFromName(std::string_view name);

// Bytes at the end of an int8 row: its float32 scale and offset.
constexpr int64_t kInt8RowTail = 8;

// The stored dtype and values per row of a row of `dim` floats under codec c (c != kNone).
DType CodecStoredDType(FeatureCodec c);
int64_t CodecStoredElems(FeatureCodec c, int64_t dim);
// The decoded width of a stored row of `stored_elems` values (its inverse); < 1 when there is none.
int64_t CodecDecodedElems(FeatureCodec c, int64_t stored_elems);

// bfloat16 bits of f, rounded to nearest even (NaN stays NaN), and back (exact).
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

// How a float feature row is stored: a plain float dtype (float32, float16, float64; codec none)
// or a codec's stored dtype. `fanout-partition --feature-dtype NAME` names one.
struct FeatureStorage {
  DType dtype = DType::kFloat32;
  FeatureCodec codec = FeatureCodec::kNone;
  int64_t stored_elems(int64_t dim) const { return CodecStoredElems(codec, dim); }
};
// "float32", "float16", "bfloat16" or "int8"; anything else is INVALID_ARGUMENT listing those.
absl::StatusOr<FeatureStorage> FeatureStorageFromName(std::string_view name);

// Stores `rows` rows of `dim` values of numeric dtype `from` at `in` as `to` (any alignment on
// both sides). Returns -1, or the first row holding a NaN or infinity when `to` is int8 (whose
// rows span their minimum to maximum); that row and the ones after it are not written.
int64_t EncodeRows(FeatureStorage to, DType from, const void* in, int64_t rows, int64_t dim, void* out);
// Decodes `rows` stored rows at `in` (CodecStoredElems(c, dim) values each) into rows x dim floats.
void DecodeRows(FeatureCodec c, const void* in, int64_t rows, int64_t dim, float* out);

}  // namespace fanout::core
