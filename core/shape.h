// Overflow-checked shape arithmetic, for every place that turns an untrusted shape (a .npy
// header, an RPC tensor, a server's answer) into a size: element counts and byte counts are
// computed with checked multiplication and compared against a limit before anything is
// allocated, read or mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fanout::core {

// a * b into *out; false (and *out untouched) when the product overflows int64 or either is < 0.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

// a + b into *out; false when it overflows int64 or either is < 0.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

// The number of elements of `shape`, or INVALID_ARGUMENT naming `what` when a dimension is
// negative or the product does not fit in int64. An empty shape is a scalar (1 element).
absl::StatusOr<int64_t> ShapeElements(absl::Span<const int64_t> shape, std::string_view what);

// Bytes of a tensor of `shape` with `elem_size`-byte elements, or INVALID_ARGUMENT as above;
// RESOURCE_EXHAUSTED when it is over `max_bytes`.
absl::StatusOr<int64_t> ShapeBytes(absl::Span<const int64_t> shape, size_t elem_size, std::string_view what,
                                   int64_t max_bytes = std::numeric_limits<int64_t>::max());

}  // namespace fanout::core
