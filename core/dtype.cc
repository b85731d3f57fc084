#include "core/dtype.h"

#include "core/strings.h"

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
  return absl::InvalidArgumentError(StrCat(
      "unknown dtype '", name,
      "' (valid: bool, int8, uint8, int16, int32, int64, float16, float32, float64)"));
}

absl::StatusOr<DType> DTypeFromNpyDescr(std::string_view descr) {
  if (descr.size() == 3) {
    // One-byte types may be written with any byte-order mark; '=' means native (little here).
    char order = descr[0];
    std::string_view code = descr.substr(1);
    if (order == '>' && code[1] != '1') {
      return absl::InvalidArgumentError(StrCat(
          "big-endian dtype '", descr, "' is not supported; save the array little-endian ",
          "(numpy: arr.astype(arr.dtype.newbyteorder('<')))"));
    }
    if (order == '<' || order == '|' || order == '=' || order == '>') {
      for (const Info& i : kInfos) {
        if (i.descr.substr(1) == code) return i.type;
      }
    }
  }
  return absl::InvalidArgumentError(StrCat(
      "unsupported .npy dtype '", descr,
      "' (supported: bool, int8/16/32/64, uint8, float16/32/64, little-endian)"));
}

}  // namespace fanout::core
