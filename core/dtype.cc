#include "core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "base/strings.h"

namespace fanout::core {
namespace {
struct Info {
  DType type;
  size_t size;
  std::string_view name;
  std::string_view descr;
};
constexpr Info kInfos[] = {
    {DType::kBool, 1, "bool", "|b1"},       {DType::kInt8, 1, "int8", "|i1"},
    {DType::kUInt8, 1, "uint8", "|u1"},     {DType::kInt16, 2, "int16", "<i2"},
    {DType::kInt32, 4, "int32", "<i4"},     {DType::kInt64, 8, "int64", "<i8"},
    {DType::kFloat16, 2, "float16", "<f2"}, {DType::kFloat32, 4, "float32", "<f4"},
    {DType::kFloat64, 8, "float64", "<f8"},
};
const Info& InfoOf(DType t) { return kInfos[static_cast<int>(t)]; }
}  // namespace

size_t DTypeSize(DType t) { return InfoOf(t).size; }
std::string_view DTypeName(DType t) { return InfoOf(t).name; }
std::string_view DTypeNpyDescr(DType t) { return InfoOf(t).descr; }

absl::StatusOr<DType> DTypeFromName(std::string_view name) {
  for (const Info& i : kInfos) {
    if (i.name == name) return i.type;
  }
  return absl::InvalidArgumentError(base::StrCat(
      "unknown dtype '", name,
      "' (valid: bool, int8, uint8, int16, int32, int64, float16, float32, float64)"));
}

absl::StatusOr<DType> DTypeFromNpyDescr(std::string_view descr) {
  if (descr.size() == 3) {
    // One-byte types may be written with any byte-order mark; '=' means native (little here).
    char order = descr[0];
    std::string_view code = descr.substr(1);
    if (order == '>' && code[1] != '1') {
      return absl::InvalidArgumentError(base::StrCat(
          "big-endian dtype '", descr, "' is not supported; save the array little-endian ",
          "(numpy: arr.astype(arr.dtype.newbyteorder('<')))"));
    }
    if (order == '<' || order == '|' || order == '=' || order == '>') {
      for (const Info& i : kInfos) {
        if (i.descr.substr(1) == code) return i.type;
      }
    }
  }
  return absl::InvalidArgumentError(base::StrCat(
      "unsupported .npy dtype '", descr,
      "' (supported: bool, int8/16/32/64, uint8, float16/32/64, little-endian)"));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {  // infinity or NaN
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {  // normal
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {  // zero
    bits = sign;
  } else {  // subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // infinity or NaN (a NaN keeps a set quiet bit)
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds past 65504: infinity
  if (abs < 0x38800000u) {                       // below 2^-14: a subnormal half (or zero)
    // The value in units of 2^-24, rounded to nearest even by the FPU's default mode.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

namespace {
template <typename In, typename Out>
void Widen(const void* in, size_t n, Out* out) {
  for (size_t i = 0; i < n; ++i) {
    In v;
    std::memcpy(&v, static_cast<const char*>(in) + i * sizeof(In), sizeof(In));  // any alignment
    out[i] = static_cast<Out>(v);
  }
}
}  // namespace

template <typename Out>
void ConvertElements(DType t, const void* in, size_t n, Out* out) {
  switch (t) {
    case DType::kBool:
    case DType::kUInt8: return Widen<uint8_t>(in, n, out);
    case DType::kInt8: return Widen<int8_t>(in, n, out);
    case DType::kInt16: return Widen<int16_t>(in, n, out);
    case DType::kInt32: return Widen<int32_t>(in, n, out);
    case DType::kInt64: return Widen<int64_t>(in, n, out);
    case DType::kFloat32: return Widen<float>(in, n, out);
    case DType::kFloat64: return Widen<double>(in, n, out);
    case DType::kFloat16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, static_cast<const char*>(in) + i * 2, 2);
        out[i] = static_cast<Out>(HalfToFloat(h));
      }
      return;
  }
}

template void ConvertElements<float>(DType, const void*, size_t, float*);
template void ConvertElements<double>(DType, const void*, size_t, double*);
template void ConvertElements<int64_t>(DType, const void*, size_t, int64_t*);

}  // namespace fanout::core
