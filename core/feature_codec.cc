#include "core/feature_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/strings.h"

namespace fanout::core {

std::string_view FeatureCodecName(FeatureCodec c) {
  switch (c) {
    case FeatureCodec::kNone: return "";
    case FeatureCodec::kBFloat16: return "bfloat16";
    case FeatureCodec::kInt8: return "int8";
  }
  return "";
}

absl::StatusOr<FeatureCodec> FeatureCodecFromName(std::string_view name) {
  for (FeatureCodec c : {FeatureCodec::kNone, FeatureCodec::kBFloat16, FeatureCodec::kInt8}) {
    if (name == FeatureCodecName(c)) return c;
  }
  return absl::InvalidArgumentError(base::StrCat("unknown feature codec '", name, "' (bfloat16 or int8)"));
}

DType CodecStoredDType(FeatureCodec c) {
  return c == FeatureCodec::kInt8 ? DType::kUInt8 : c == FeatureCodec::kBFloat16 ? DType::kInt16 : DType::kFloat32;
}

int64_t CodecStoredElems(FeatureCodec c, int64_t dim) { return c == FeatureCodec::kInt8 ? dim + kInt8RowTail : dim; }

int64_t CodecDecodedElems(FeatureCodec c, int64_t stored_elems) {
  return c == FeatureCodec::kInt8 ? stored_elems - kInt8RowTail : stored_elems;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet, sign kept
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even (may carry into inf)
  return static_cast<uint16_t>(bits >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

absl::StatusOr<FeatureStorage> FeatureStorageFromName(std::string_view name) {
  if (name == "float32") return FeatureStorage{DType::kFloat32, FeatureCodec::kNone};
  if (name == "float16") return FeatureStorage{DType::kFloat16, FeatureCodec::kNone};
  if (absl::StatusOr<FeatureCodec> c = FeatureCodecFromName(name); c.ok() && *c != FeatureCodec::kNone) {
    return FeatureStorage{CodecStoredDType(*c), *c};
  }
  return absl::InvalidArgumentError(base::StrCat("unknown feature dtype '", name, "' (float32, float16, bfloat16 or int8)"));
}

namespace {

// One row of `dim` floats at `in` into `out` as `to`; false when `to` is int8 and a value is not finite.
bool EncodeRow(FeatureStorage to, const float* in, int64_t dim, char* out) {
  if (to.codec == FeatureCodec::kNone) {
    if (to.dtype == DType::kFloat16) {
      for (int64_t j = 0; j < dim; ++j) {
        const uint16_t h = FloatToHalf(in[j]);
        std::memcpy(out + 2 * j, &h, 2);
      }
    } else if (to.dtype == DType::kFloat64) {
      for (int64_t j = 0; j < dim; ++j) {
        const double x = in[j];
        std::memcpy(out + 8 * j, &x, 8);
      }
    } else {
      std::memcpy(out, in, static_cast<size_t>(dim) * sizeof(float));
    }
    return true;
  }
  if (to.codec == FeatureCodec::kBFloat16) {
    for (int64_t j = 0; j < dim; ++j) {
      const uint16_t b = FloatToBFloat16(in[j]);
      std::memcpy(out + 2 * j, &b, 2);
    }
    return true;
  }
  float lo = dim > 0 ? in[0] : 0, hi = lo;
  for (int64_t j = 0; j < dim; ++j) {
    if (!std::isfinite(in[j])) return false;
    lo = std::min(lo, in[j]);
    hi = std::max(hi, in[j]);
  }
  const float scale = (hi - lo) / 255.0f;
  for (int64_t j = 0; j < dim; ++j) {
    const float q = scale > 0 ? std::nearbyint((in[j] - lo) / scale) : 0.0f;
    out[j] = static_cast<char>(static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f)));
  }
  std::memcpy(out + dim, &scale, 4);
  std::memcpy(out + dim + 4, &lo, 4);
  return true;
}

}  // namespace

int64_t EncodeRows(FeatureStorage to, DType from, const void* in, int64_t rows, int64_t dim, void* out) {
  std::vector<float> row(static_cast<size_t>(dim));
  const size_t in_bytes = static_cast<size_t>(dim) * DTypeSize(from);
  const size_t out_bytes = static_cast<size_t>(to.stored_elems(dim)) * DTypeSize(to.dtype);
  for (int64_t r = 0; r < rows; ++r) {
    ConvertElements<float>(from, static_cast<const char*>(in) + r * in_bytes, static_cast<size_t>(dim), row.data());
    if (!EncodeRow(to, row.data(), dim, static_cast<char*>(out) + r * out_bytes)) return r;
  }
  return -1;
}

void DecodeRows(FeatureCodec c, const void* in, int64_t rows, int64_t dim, float* out) {
  const char* p = static_cast<const char*>(in);
  switch (c) {
    case FeatureCodec::kNone:
      std::memcpy(out, p, static_cast<size_t>(rows * dim) * sizeof(float));
      return;
    case FeatureCodec::kBFloat16:
      for (int64_t i = 0; i < rows * dim; ++i) {
        uint16_t b;
        std::memcpy(&b, p + 2 * i, 2);
        out[i] = BFloat16ToFloat(b);
      }
      return;
    case FeatureCodec::kInt8:
      for (int64_t r = 0; r < rows; ++r) {
        const char* row = p + r * (dim + kInt8RowTail);
        float scale, offset;
        std::memcpy(&scale, row + dim, 4);
        std::memcpy(&offset, row + dim + 4, 4);
        for (int64_t j = 0; j < dim; ++j) {
          const float q = static_cast<float>(static_cast<uint8_t>(row[j]));
          out[r * dim + j] = q * scale + offset;
        }
      }
      return;
  }
}

}  // namespace fanout::core
