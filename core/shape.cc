#include "core/shape.h"

#include <vector>

#include "base/strings.h"

namespace fanout::core {
namespace {
std::string Dims(absl::Span<const int64_t> shape) {
  return base::StrJoin(std::vector<int64_t>(shape.begin(), shape.end()), ", ");
}
}  // namespace

absl::StatusOr<int64_t> ShapeElements(absl::Span<const int64_t> shape, std::string_view what) {
  // The product of the non-zero dimensions must fit too: a zero in one place must not hide an
  // overflow that a per-row size (the product of the others) would then hit.
  int64_t nonzero = 1;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(base::StrCat(what, ": dimension ", i, " is negative (", shape[i], ")"));
    }
    if (shape[i] == 0) {
      empty = true;
      continue;
    }
    if (!CheckedMul(nonzero, shape[i], &nonzero)) {
      return absl::InvalidArgumentError(
          base::StrCat(what, ": shape [", Dims(shape), "] has more elements than fit in 64 bits"));
    }
  }
  return empty ? 0 : nonzero;
}

absl::StatusOr<int64_t> ShapeBytes(absl::Span<const int64_t> shape, size_t elem_size, std::string_view what,
                                   int64_t max_bytes) {
  auto n = ShapeElements(shape, what);
  if (!n.ok()) return n.status();
  int64_t bytes;
  if (!CheckedMul(*n, static_cast<int64_t>(elem_size), &bytes)) {
    return absl::InvalidArgumentError(
        base::StrCat(what, ": shape [", Dims(shape), "] of ", elem_size, "-byte elements overflows 64 bits"));
  }
  if (bytes > max_bytes) {
    return absl::ResourceExhaustedError(base::StrCat(what, ": shape [", Dims(shape), "] is ", bytes,
                                               " bytes, over the limit of ", max_bytes));
  }
  return bytes;
}

}  // namespace fanout::core
