// Element types that fanout stores in .npy files and sends over the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fanout::core {

enum class DType : uint8_t {
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kFloat32,
  kFloat64,
};

// Size of one element in bytes.
size_t DTypeSize(DType t);
// Canonical lower-case name: "bool", "int8", ..., "float64" (numpy's names).
std::string_view DTypeName(DType t);
absl::StatusOr<DType> DTypeFromName(std::string_view name);
// numpy's little-endian descr string, e.g. "<f4", "|u1".
std::string_view DTypeNpyDescr(DType t);
// Parses a numpy descr; big-endian and non-numeric descrs are errors naming the descr.
absl::StatusOr<DType> DTypeFromNpyDescr(std::string_view descr);

// IEEE 754 half precision (numpy's float16) to and from float: exact one way; FloatToHalf rounds
// to nearest, ties to even, overflowing to infinity (NaN stays NaN).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);

// Converts n elements of dtype t at `in` to Out: float, double or int64_t (floats truncate toward
// zero as static_cast does; bool reads as 0/1; float16 through HalfToFloat).
template <typename Out>
void ConvertElements(DType t, const void* in, size_t n, Out* out);

template <typename T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<bool>() { return DType::kBool; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType DTypeOf<int16_t>() { return DType::kInt16; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }

}  // namespace fanout::core
