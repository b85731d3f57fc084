#include "core/shared_rows.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "base/strings.h"

namespace fanout::core {

using base::StrCat;

namespace {

constexpr char kMagic[8] = {'F', 'A', 'N', 'O', 'U', 'T', 'S', 'R'};
constexpr size_t kTokenBytes = 16;

// The header page: magic, token, payload bytes.
struct Header {
  char magic[8];
  char token[kTokenBytes];
  int64_t bytes;
};
static_assert(sizeof(Header) <= SharedRows::kHeaderBytes);

}  // namespace

absl::StatusOr<std::unique_ptr<SharedRows>> SharedRows::Create(const std::string& name, int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError(StrCat("shared rows of ", bytes, " bytes"));
  std::unique_ptr<SharedRows> s(new SharedRows());
  s->fd_ = memfd_create(("fanout-" + name).c_str(), MFD_CLOEXEC);
  s->map_bytes_ = kHeaderBytes + static_cast<size_t>(bytes);
  if (s->fd_ < 0 || ftruncate(s->fd_, static_cast<off_t>(s->map_bytes_)) != 0) {
    return absl::ResourceExhaustedError(StrCat("shared memory for '", name, "' (", bytes, " bytes): ", std::strerror(errno)));
  }
  s->map_ = ::mmap(nullptr, s->map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
  if (s->map_ == MAP_FAILED) {
    s->map_ = nullptr;
    return absl::ResourceExhaustedError(StrCat("mapping shared memory for '", name, "' (", bytes, " bytes): ",
                                               std::strerror(errno)));
  }
  std::random_device rd;
  s->token_.resize(kTokenBytes);
  for (size_t i = 0; i < kTokenBytes; i += sizeof(uint32_t)) {
    const uint32_t r = rd();
    std::memcpy(s->token_.data() + i, &r, sizeof r);
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  std::memcpy(h.token, s->token_.data(), kTokenBytes);
  h.bytes = bytes;
  std::memcpy(s->map_, &h, sizeof h);
  s->data_ = static_cast<char*>(s->map_) + kHeaderBytes;
  s->bytes_ = bytes;
  return s;
}

absl::StatusOr<std::unique_ptr<SharedRows>> SharedRows::Map(const SharedRowsInfo& info) {
  if (info.pid <= 0 || info.fd < 0 || info.token.size() != kTokenBytes || info.bytes < 0) {
    return absl::FailedPreconditionError("no shared rows announced");
  }
  const std::string path = StrCat("/proc/", info.pid, "/fd/", info.fd);
  std::unique_ptr<SharedRows> s(new SharedRows());
  // O_NONBLOCK: whatever the path turns out to be (a pipe of an unrelated process), opening it
  // must not wait.
  s->fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (s->fd_ < 0) return absl::FailedPreconditionError(StrCat("cannot open ", path, ": ", std::strerror(errno)));
  struct stat st {};
  s->map_bytes_ = kHeaderBytes + static_cast<size_t>(info.bytes);
  if (::fstat(s->fd_, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != s->map_bytes_) {
    return absl::FailedPreconditionError(StrCat(path, " is not the server's shared rows (", s->map_bytes_, " bytes)"));
  }
  Header h{};
  if (::pread(s->fd_, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
      std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || std::memcmp(h.token, info.token.data(), kTokenBytes) != 0 ||
      h.bytes != info.bytes) {
    return absl::FailedPreconditionError(StrCat(path, " does not carry the server's token"));
  }
  s->map_ = ::mmap(nullptr, s->map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
  if (s->map_ == MAP_FAILED) {
    s->map_ = nullptr;
    return absl::FailedPreconditionError(StrCat("mapping ", path, ": ", std::strerror(errno)));
  }
  s->data_ = static_cast<char*>(s->map_) + kHeaderBytes;
  s->bytes_ = info.bytes;
  s->token_ = info.token;
  return s;
}

SharedRows::~SharedRows() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

SharedRowsInfo SharedRows::info() const {
  return SharedRowsInfo{.pid = ::getpid(), .fd = fd_, .token = token_, .bytes = bytes_};
}

}  // namespace fanout::core
