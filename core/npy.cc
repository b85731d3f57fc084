#include "core/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "base/unique_fd.h"
#include "core/shape.h"

namespace fanout::core {
namespace {

struct NpyHeader {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes from the start of the file to the first element
};

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kPageAlign = 4096;

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return base::StrCat("(", base::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

// Finds the value text following `'key':` in numpy's header dict.
absl::StatusOr<std::string_view> DictValue(std::string_view dict, std::string_view key) {
  std::string quoted = base::StrCat("'", key, "'");
  size_t k = dict.find(quoted);
  if (k == std::string_view::npos) {
    return absl::InvalidArgumentError(base::StrCat("header has no '", key, "' entry"));
  }
  size_t colon = dict.find(':', k + quoted.size());
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError(base::StrCat("header entry '", key, "' has no value"));
  }
  std::string_view rest = base::StripSpaces(dict.substr(colon + 1));
  size_t end;
  if (!rest.empty() && rest[0] == '(') {
    end = rest.find(')');
    if (end == std::string_view::npos) return absl::InvalidArgumentError("unterminated shape");
    return rest.substr(0, end + 1);
  }
  if (!rest.empty() && (rest[0] == '\'' || rest[0] == '"')) {
    end = rest.find(rest[0], 1);
    if (end == std::string_view::npos) return absl::InvalidArgumentError("unterminated string");
    return rest.substr(1, end - 1);
  }
  end = rest.find_first_of(",}");
  return base::StripSpaces(rest.substr(0, end));
}

absl::StatusOr<NpyHeader> ParseHeader(const std::string& path, const char* buf, size_t file_size) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(base::StrCat(path, ": not a valid .npy file: ", why));
  };
  if (file_size < kMagicLen + 4 || std::memcmp(buf, kMagic, kMagicLen) != 0) {
    return bad("missing the \\x93NUMPY magic");
  }
  uint8_t major = static_cast<uint8_t>(buf[6]);
  size_t header_len;
  size_t prefix;
  if (major == 1) {
    header_len = static_cast<uint8_t>(buf[8]) | (static_cast<uint8_t>(buf[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (file_size < 12) return bad("header truncated");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= size_t{static_cast<uint8_t>(buf[8 + i])} << (8 * i);
    prefix = 12;
  } else {
    return bad(base::StrCat("unsupported format version ", major));
  }
  if (prefix + header_len > file_size) return bad("header truncated");
  std::string_view dict(buf + prefix, header_len);

  NpyHeader h;
  h.data_offset = prefix + header_len;
  auto descr = DictValue(dict, "descr");
  if (!descr.ok()) return bad(std::string(descr.status().message()));
  auto dtype = DTypeFromNpyDescr(*descr);
  if (!dtype.ok()) return absl::InvalidArgumentError(base::StrCat(path, ": ", dtype.status().message()));
  h.dtype = *dtype;
  auto fortran = DictValue(dict, "fortran_order");
  if (!fortran.ok()) return bad(std::string(fortran.status().message()));
  if (*fortran != "False") {
    return absl::InvalidArgumentError(base::StrCat(
        path, ": Fortran-order arrays are not supported; save with np.ascontiguousarray(a)"));
  }
  auto shape = DictValue(dict, "shape");
  if (!shape.ok()) return bad(std::string(shape.status().message()));
  std::string_view dims = *shape;
  if (dims.size() < 2 || dims.front() != '(' || dims.back() != ')') {
    return bad(base::StrCat("bad shape ", *shape));
  }
  dims = dims.substr(1, dims.size() - 2);
  while (!dims.empty()) {
    size_t comma = dims.find(',');
    std::string_view d = base::StripSpaces(dims.substr(0, comma));
    dims = comma == std::string_view::npos ? std::string_view() : dims.substr(comma + 1);
    if (d.empty()) continue;
    int64_t v;
    if (!base::ParseInt64(d, &v) || v < 0) return bad(base::StrCat("bad shape ", *shape));
    h.shape.push_back(v);
  }
  // The header is untrusted: a crafted shape such as (2^61, 2) must not wrap the byte count
  // around to the file's size, or readers index far outside the mapping.
  auto data_bytes = ShapeBytes(h.shape, DTypeSize(h.dtype), "header");
  if (!data_bytes.ok()) return bad(std::string(data_bytes.status().message()));
  // Row arithmetic (row_elems, row_bytes) must not overflow either, even when the first axis is 0.
  if (!h.shape.empty()) {
    std::vector<int64_t> row(h.shape.begin() + 1, h.shape.end());
    auto row_bytes = ShapeBytes(row, DTypeSize(h.dtype), "header (one row)");
    if (!row_bytes.ok()) return bad(std::string(row_bytes.status().message()));
  }
  int64_t need_signed;
  if (!CheckedAdd(static_cast<int64_t>(h.data_offset), *data_bytes, &need_signed)) {
    return bad(base::StrCat("shape ", ShapeString(h.shape), " is larger than any file"));
  }
  const size_t need = static_cast<size_t>(need_signed);
  if (file_size != need) {
    return absl::InvalidArgumentError(base::StrCat(
        path, ": file is ", file_size, " bytes but its header (", DTypeName(h.dtype), ", shape ",
        ShapeString(h.shape), ") needs ", need, file_size < need ? " (truncated)" : ""));
  }
  return h;
}

absl::Status ErrnoError(std::string_view what, const std::string& path) {
  int e = errno;
  std::string msg = base::StrCat(path, ": ", what, ": ", std::strerror(e));
  return e == ENOENT ? absl::NotFoundError(msg) : absl::InvalidArgumentError(msg);
}

// Opens `path` read-only and returns its descriptor, with its size in *size.
absl::StatusOr<base::UniqueFd> OpenForRead(const std::string& path, size_t* size) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("cannot open", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("cannot stat", path);
  *size = static_cast<size_t>(st.st_size);
  return fd;
}

}  // namespace

std::string EncodeNpyHeader(DType dtype, const std::vector<int64_t>& shape) {
  std::string dict = base::StrCat("{'descr': '", DTypeNpyDescr(dtype),
                                  "', 'fortran_order': False, 'shape': ", ShapeString(shape), ", }");
  // Pad with spaces so the data starts on a 64-byte boundary (numpy's rule), ending the header
  // with '\n'; an array of 1 MiB or more starts on a 4 KiB page, so that a row of whole pages
  // (1024 float32 features) is read from disk as its own pages (DiskRows), not one more.
  double data_bytes = static_cast<double>(DTypeSize(dtype));
  for (int64_t d : shape) data_bytes *= static_cast<double>(d);
  const size_t align = data_bytes >= (1 << 20) ? kPageAlign : 64;
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + align - 1) / align * align;
  bool v2 = padded - prefix > 65535;
  if (v2) {
    prefix = 12;
    total = prefix + dict.size() + 1;
    padded = (total + align - 1) / align * align;
  }
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  size_t len = dict.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += dict;
  return out;
}

NpyArray::~NpyArray() { Reset(); }

NpyArray::NpyArray(NpyArray&& o) noexcept { *this = std::move(o); }

NpyArray& NpyArray::operator=(NpyArray&& o) noexcept {
  if (this != &o) {
    Reset();
    dtype_ = o.dtype_;
    shape_ = std::move(o.shape_);
    path_ = std::move(o.path_);
    data_ = o.data_;
    map_base_ = o.map_base_;
    map_len_ = o.map_len_;
    writable_ = o.writable_;
    owned_ = std::move(o.owned_);
    o.data_ = nullptr;
    o.map_base_ = nullptr;
    o.map_len_ = 0;
  }
  return *this;
}

void NpyArray::Reset() {
  if (map_base_ != nullptr) ::munmap(map_base_, map_len_);
  map_base_ = nullptr;
  map_len_ = 0;
  writable_ = false;
  owned_.reset();
  data_ = nullptr;
}

absl::StatusOr<NpyArray> NpyArray::Map(const std::string& path) { return MapWith(path, false); }

absl::StatusOr<NpyArray> NpyArray::MapCopyOnWrite(const std::string& path) {
  return MapWith(path, true);
}

absl::StatusOr<NpyArray> NpyArray::MapWith(const std::string& path, bool copy_on_write) {
  size_t len = 0;
  ASSIGN_OR_RETURN(base::UniqueFd fd, OpenForRead(path, &len));
  if (len == 0) return absl::InvalidArgumentError(base::StrCat(path, ": not a valid .npy file: empty file"));
  void* base = copy_on_write ? ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0)
                             : ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd.get(), 0);
  fd.reset();  // the mapping keeps the file
  if (base == MAP_FAILED) return ErrnoError("cannot mmap", path);
  auto h = ParseHeader(path, static_cast<const char*>(base), len);
  if (!h.ok()) {
    ::munmap(base, len);
    return h.status();
  }
  if (h->data_offset % DTypeSize(h->dtype) != 0) {
    // numpy pads its headers so that the data is aligned (to 64 bytes); the data of a file whose
    // header is not is copied, not mapped, so that no element is read through a misaligned
    // pointer (undefined behaviour, and a fault on some CPUs).
    NpyArray copy = Owned(h->dtype, std::move(h->shape));
    std::memcpy(copy.mutable_data(), static_cast<const char*>(base) + h->data_offset, copy.nbytes());
    ::munmap(base, len);
    copy.path_ = path;
    return copy;
  }
  NpyArray a;
  a.dtype_ = h->dtype;
  a.shape_ = std::move(h->shape);
  a.path_ = path;
  a.map_base_ = base;
  a.map_len_ = len;
  a.writable_ = copy_on_write;
  a.data_ = static_cast<char*>(base) + h->data_offset;
  return a;
}

size_t NpyFile::row_bytes() const {
  size_t b = DTypeSize(dtype);
  for (size_t i = 1; i < shape.size(); ++i) b *= static_cast<size_t>(shape[i]);
  return b;
}

absl::StatusOr<NpyFile> OpenNpyFile(const std::string& path) {
  size_t len = 0;
  ASSIGN_OR_RETURN(base::UniqueFd fd, OpenForRead(path, &len));
  // The header alone: numpy's are a few hundred bytes; ParseHeader reads no further than the
  // length it states, which must lie within what was read.
  std::string head(std::min<size_t>(len, 1 << 16), '\0');
  size_t got = 0;
  while (got < head.size()) {
    const ssize_t n = ::pread(fd.get(), head.data() + got, head.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("cannot read", path);
    got += static_cast<size_t>(n);
  }
  if (head.size() >= 12) {
    const bool v1 = static_cast<uint8_t>(head[6]) == 1;
    size_t header_len = 0;
    for (int i = 0; i < (v1 ? 2 : 4); ++i) header_len |= size_t{static_cast<uint8_t>(head[8 + i])} << (8 * i);
    if ((v1 ? 10 : 12) + header_len > head.size() && (v1 ? 10 : 12) + header_len <= len) {
      return absl::InvalidArgumentError(base::StrCat(path, ": the .npy header is over 64 KiB"));
    }
  }
  ASSIGN_OR_RETURN(NpyHeader h, ParseHeader(path, head.data(), len));
  NpyFile f;
  f.fd = std::move(fd);
  f.path = path;
  f.dtype = h.dtype;
  f.shape = std::move(h.shape);
  f.data_offset = h.data_offset;
  return f;
}

NpyArray NpyArray::Owned(DType dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  size_t bytes = a.nbytes();
  std::shared_ptr<uint8_t[]> buf(new uint8_t[bytes == 0 ? 1 : bytes]());
  a.data_ = buf.get();
  a.owned_ = std::move(buf);
  return a;
}

int64_t NpyArray::row_elems() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape_.size(); ++i) n *= shape_[i];
  return n;
}

int64_t NpyArray::num_elements() const { return Product(shape_); }

void* NpyArray::mutable_data() {
  FANOUT_CHECK(owned_ != nullptr || writable_) << "mutable_data() on a read-only mapped array " << path_;
  return data_;
}

void NpyArray::CheckSize(size_t elements) const {
  FANOUT_CHECK(static_cast<int64_t>(elements) == num_elements())
      << "buffer of " << elements << " elements adopted as shape of " << num_elements();
}

void NpyArray::CheckType(DType t) const {
  FANOUT_CHECK(t == dtype_) << "array " << path_ << " holds " << DTypeName(dtype_) << ", accessed as "
                     << DTypeName(t);
}

void NpyArray::DropPages(size_t begin, size_t end) const {
  // Private (copy-on-write) pages would be lost, not just released.
  if (map_base_ == nullptr || writable_ || end <= begin) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  uintptr_t lo = reinterpret_cast<uintptr_t>(data_) + begin;
  uintptr_t hi = reinterpret_cast<uintptr_t>(data_) + end;
  lo = (lo + page - 1) / page * page;  // only whole pages inside the range
  hi = hi / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

absl::Status WriteNpy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                      const void* data) {
  ASSIGN_OR_RETURN(auto w, NpyWriter::Open(path, dtype, shape));
  RETURN_IF_ERROR(w->Append(data, static_cast<size_t>(Product(shape)) * DTypeSize(dtype)));
  return w->Close();
}

absl::StatusOr<std::unique_ptr<NpyWriter>> NpyWriter::Open(const std::string& path, DType dtype,
                                                           std::vector<int64_t> shape) {
  std::unique_ptr<NpyWriter> w(new NpyWriter());
  w->path_ = path;
  w->expected_ = static_cast<size_t>(Product(shape)) * DTypeSize(dtype);
  w->file_ = std::fopen(path.c_str(), "wb");
  if (w->file_ == nullptr) return ErrnoError("cannot create", path);
  std::string header = EncodeNpyHeader(dtype, shape);
  if (std::fwrite(header.data(), 1, header.size(), w->file_) != header.size()) {
    return ErrnoError("write failed", path);
  }
  return w;
}

NpyWriter::~NpyWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status NpyWriter::Append(const void* data, size_t bytes) {
  if (written_ + bytes > expected_) {
    return absl::InternalError(base::StrCat(path_, ": appending past the declared shape"));
  }
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes) return ErrnoError("write failed", path_);
  written_ += bytes;
  return absl::OkStatus();
}

absl::Status NpyWriter::Close() {
  if (written_ != expected_) {
    return absl::InternalError(
        base::StrCat(path_, ": wrote ", written_, " of ", expected_, " declared bytes"));
  }
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return ErrnoError("close failed", path_);
  return absl::OkStatus();
}

absl::Status WriteIdArray(const std::string& path, DType dtype, const int64_t* ids, int64_t count) {
  if (dtype == DType::kInt64) return WriteNpy(path, dtype, {count}, ids);
  if (dtype != DType::kInt32) {
    return absl::InvalidArgumentError(base::StrCat(path, ": IDs are int32 or int64, not ", DTypeName(dtype)));
  }
  ASSIGN_OR_RETURN(auto w, NpyWriter::Open(path, dtype, {count}));
  constexpr int64_t kChunk = 1 << 20;
  std::vector<int32_t> buf;
  for (int64_t b = 0; b < count; b += kChunk) {
    const int64_t e = std::min(count, b + kChunk);
    buf.assign(ids + b, ids + e);
    RETURN_IF_ERROR(w->Append(buf.data(), buf.size() * sizeof(int32_t)));
  }
  return w->Close();
}

}  // namespace fanout::core
