// .npy files: numpy's array format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
// fanout reads and writes versions 1.0-3.0, C order, little-endian, the dtypes in dtype.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/unique_fd.h"
#include "core/dtype.h"

namespace fanout::core {

// Builds the header bytes (magic through the padded dict) for a C-order little-endian array: the
// data starts 64-byte aligned, or on a 4 KiB page for an array of 1 MiB or more.
std::string EncodeNpyHeader(DType dtype, const std::vector<int64_t>& shape);

// An array in .npy layout, either mapped read-only from a file (shared with every other process
// mapping the same file, never copied) or owning a heap buffer. Move-only. Const methods are
// thread-safe.
class NpyArray {
 public:
  NpyArray() = default;
  ~NpyArray();
  NpyArray(NpyArray&& other) noexcept;
  NpyArray& operator=(NpyArray&& other) noexcept;
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;

  // Maps `path` read-only.
  static absl::StatusOr<NpyArray> Map(const std::string& path);
  // Maps `path` copy-on-write: reads share the page cache with every other mapping of the file,
  // writes (through mutable_data) go to private pages of this process; the file never changes.
  static absl::StatusOr<NpyArray> MapCopyOnWrite(const std::string& path);
  // A zero-filled owned array.
  static NpyArray Owned(DType dtype, std::vector<int64_t> shape);
  // Takes over `v` (no copy) as an owned array of `shape`, whose element count must match.
  template <typename T>
  static NpyArray Adopt(std::vector<T>&& v, std::vector<int64_t> shape) {
    auto holder = std::make_shared<std::vector<T>>(std::move(v));
    NpyArray a;
    a.dtype_ = DTypeOf<T>();
    a.shape_ = std::move(shape);
    a.CheckSize(holder->size());
    a.data_ = holder->data();
    a.owned_ = std::move(holder);
    return a;
  }

  // `data` (nbytes of `shape`), kept valid by `owner`, which the array holds on to.
  static NpyArray Wrap(DType dtype, std::vector<int64_t> shape, void* data, std::shared_ptr<void> owner) {
    NpyArray a;
    a.dtype_ = dtype;
    a.shape_ = std::move(shape);
    a.data_ = data;
    a.owned_ = std::move(owner);
    return a;
  }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Length of the first axis (1 for a 0-d array).
  int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }
  // Elements per row: the product of every axis after the first.
  int64_t row_elems() const;
  size_t row_bytes() const { return static_cast<size_t>(row_elems()) * DTypeSize(dtype_); }
  int64_t num_elements() const;
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype_); }
  bool is_mapped() const { return map_base_ != nullptr; }
  // The file this array was mapped from; empty for owned arrays.
  const std::string& path() const { return path_; }

  const void* data() const { return data_; }
  const char* row(int64_t i) const { return static_cast<const char*>(data_) + i * row_bytes(); }
  // Owned and copy-on-write arrays only.
  void* mutable_data();

  template <typename T>
  const T* data_as() const {
    CheckType(DTypeOf<T>());
    return static_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data_as() {
    CheckType(DTypeOf<T>());
    return static_cast<T*>(mutable_data());
  }

  // Tells the kernel that the mapped bytes [begin, end) of the data are no longer needed, so a
  // streaming pass over a large mapped file keeps its resident set flat. No-op for owned arrays.
  void DropPages(size_t begin, size_t end) const;

 private:
  void CheckType(DType t) const;
  void CheckSize(size_t elements) const;
  void Reset();

  DType dtype_ = DType::kUInt8;
  std::vector<int64_t> shape_;
  std::string path_;
  void* data_ = nullptr;
  static absl::StatusOr<NpyArray> MapWith(const std::string& path, bool copy_on_write);

  void* map_base_ = nullptr;  // non-null when mapped
  bool writable_ = false;
  size_t map_len_ = 0;
  std::shared_ptr<void> owned_;  // keeps an owned buffer alive; unique to this array
};

// An .npy file opened for reading rows with pread rather than mapped (a field larger than the
// memory a server may hold): its descriptor, element type, shape and where the data starts.
struct NpyFile {
  base::UniqueFd fd;
  std::string path;
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
  size_t row_bytes() const;
};
// Opens and checks `path` as NpyArray::Map would (header, size), reading only its header.
absl::StatusOr<NpyFile> OpenNpyFile(const std::string& path);

// Writes an array of known shape in one call. The file is complete when this returns OK.
absl::Status WriteNpy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                      const void* data);

template <typename T>
absl::Status WriteNpy(const std::string& path, const std::vector<T>& v) {
  return WriteNpy(path, DTypeOf<T>(), {static_cast<int64_t>(v.size())}, v.data());
}

// A run of IDs or offsets stored as int32 or int64 (a partition's ID widths), read as int64.
struct IdView {
  const void* data = nullptr;
  bool narrow = false;  // int32

  // The elements of `a` from `first` on (a must be int32 or int64; the caller checked).
  static IdView Of(const NpyArray& a, int64_t first = 0) {
    IdView v{a.data(), a.dtype() == DType::kInt32};
    v.data = v.address(first);
    return v;
  }
  int64_t operator[](int64_t i) const {
    return narrow ? static_cast<const int32_t*>(data)[i] : static_cast<const int64_t*>(data)[i];
  }
  // Where element i is stored, for prefetching.
  const void* address(int64_t i) const { return static_cast<const char*>(data) + i * (narrow ? 4 : 8); }
  explicit operator bool() const { return data != nullptr; }
};

// Writes `count` IDs as a 1-D array of `dtype`, int64 or int32 (each ID must fit; checked by
// the caller, who chose the width), converting in chunks rather than copying the whole array.
absl::Status WriteIdArray(const std::string& path, DType dtype, const int64_t* ids, int64_t count);

// Streams an array of known shape to a file: the header first, then rows appended in order.
// Close() fails unless exactly shape's bytes were appended. Not thread-safe.
class NpyWriter {
 public:
  static absl::StatusOr<std::unique_ptr<NpyWriter>> Open(const std::string& path, DType dtype,
                                                         std::vector<int64_t> shape);
  ~NpyWriter();
  absl::Status Append(const void* data, size_t bytes);
  absl::Status Close();

 private:
  NpyWriter() = default;
  std::string path_;
  FILE* file_ = nullptr;
  size_t expected_ = 0;
  size_t written_ = 0;
};

}  // namespace fanout::core
