#include "sampler/shm_batch.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/status.h"
#include "base/strings.h"
#include "sampler/batch_schema.h"

namespace fanout::sampler {

using base::StrCat;

namespace {

// The file, version 7: a header of int64s, a table naming every array (sampler/batch_schema.h),
// then the arrays, each 64-byte aligned, the features last.
//   header: magic ("FNBATCH" + the version), epoch, step, sample ns, fetch ns, layers, arrays
//           (table entries), the features' codec (core::FeatureCodec)
//   table:  per array, a TableEntry: its name, domain, layer, dtype, shape (a matrix or not),
//           width, entries and offset
// The trainer borrows every array in place (sampler/array.h); a reader checks the table against
// the file and the schema before anything is handed out.
constexpr int64_t kVersion = 7;
constexpr int64_t kMagic = 0x004843544142'4e46 | (int64_t{'0' + kVersion} << 56);  // "FNBATCH7"
constexpr int64_t kMagicMask = 0x00ffffffffffffff;
constexpr size_t kAlign = 64;
constexpr int64_t kHeader = 8;    // header entries
constexpr size_t kFetchSlot = 4;  // the header entry SetFetchSeconds writes
constexpr int64_t kMaxArrays = 1 << 16;
constexpr int64_t kMaxWidth = int64_t{1} << 20;

struct TableEntry {
  char name[kMaxFieldName + 1];
  int32_t domain;
  int32_t layer;
  int32_t dtype;
  int32_t matrix;  // 1: a [count, width] field (Field::matrix)
  int64_t width;
  int64_t count;
  int64_t offset;
};
static_assert(sizeof(TableEntry) == 72);

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t TableEnd(size_t arrays) { return AlignUp(kHeader * 8 + arrays * sizeof(TableEntry)); }

absl::Status Errno(const std::string& what) {
  return absl::InternalError(StrCat(what, ": ", std::strerror(errno)));
}

// Destination j of each edge of a block built without them.
void DeriveDst(const Block& b, int64_t* dst) {
  for (int64_t j = 0; j < b.num_dst; ++j) {
    for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) dst[e] = j;
  }
}

}  // namespace

absl::StatusOr<char*> ShmSlot::Write(const MiniBatch& mb, int64_t rows, int64_t cols, core::DType dtype,
                                     const LinkPairs* pairs, core::FeatureCodec codec) {
  std::vector<ArrayRef> arrays = BatchArrays(mb, pairs);
  arrays.push_back(ArrayRef{"features", Domain::kRow, -1, dtype, cols, rows, nullptr, true});
  if (absl::Status s = CheckArrayCounts(arrays, static_cast<int64_t>(mb.blocks.size())); !s.ok()) {
    return absl::InternalError(StrCat("writing a batch: ", s.message()));
  }
  std::vector<TableEntry> table(arrays.size());
  size_t at = TableEnd(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    const ArrayRef& a = arrays[i];
    TableEntry& t = table[i];
    std::memset(&t, 0, sizeof(t));
    std::memcpy(t.name, a.name.data(), std::min(a.name.size(), kMaxFieldName));
    t.domain = static_cast<int32_t>(a.domain);
    t.layer = a.layer;
    t.dtype = static_cast<int32_t>(a.dtype);
    t.matrix = a.matrix ? 1 : 0;
    t.width = a.width;
    t.count = a.count;
    t.offset = static_cast<int64_t>(at);
    at += AlignUp(a.bytes());
  }
  const size_t size = at;
  if (fd_ < 0) {
    fd_ = memfd_create("fanout-batch", MFD_CLOEXEC);
    if (fd_ < 0) return Errno("memfd_create");
  }
  if (size > capacity_) {
    // Grow with headroom, so batches a little larger than the last do not remap every time.
    const size_t want = size + size / 4;
    if (map_ != nullptr) munmap(map_, capacity_);
    map_ = nullptr;
    capacity_ = 0;
    if (ftruncate(fd_, static_cast<off_t>(want)) != 0) return Errno(StrCat("sizing a ", want, "-byte batch file"));
    void* m = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) return Errno("mapping a batch file");
    map_ = m;
    capacity_ = want;
  }
  bytes_ = size;
  char* base = static_cast<char*>(map_);
  const int64_t header[kHeader] = {kMagic, mb.epoch, mb.step, static_cast<int64_t>(mb.sample_seconds * 1e9),
                                   static_cast<int64_t>(mb.fetch_seconds * 1e9), static_cast<int64_t>(mb.blocks.size()),
                                   static_cast<int64_t>(arrays.size()), static_cast<int64_t>(codec)};
  std::memcpy(base, header, sizeof(header));
  std::memcpy(base + kHeader * 8, table.data(), table.size() * sizeof(TableEntry));
  // Every array but the features (last), which the caller gathers in place.
  for (size_t i = 0; i + 1 < arrays.size(); ++i) {
    const ArrayRef& a = arrays[i];
    char* to = base + table[i].offset;
    if (a.bytes() == 0) continue;  // (an empty array's data may be null)
    if (a.data != nullptr) {
      std::memcpy(to, a.data, a.bytes());
    } else {  // a block's dst, derived here so that every batch file carries it
      DeriveDst(mb.blocks[static_cast<size_t>(a.layer)], reinterpret_cast<int64_t*>(to));
    }
  }
  return base + table.back().offset;
}

void ShmSlot::SetFetchSeconds(double seconds) {
  static_cast<int64_t*>(map_)[kFetchSlot] = static_cast<int64_t>(seconds * 1e9);
}

ShmSlot::ShmSlot(ShmSlot&& o) noexcept : fd_(o.fd_), map_(o.map_), capacity_(o.capacity_), bytes_(o.bytes_) {
  o.fd_ = -1;
  o.map_ = nullptr;
  o.capacity_ = 0;
}

ShmSlot::~ShmSlot() {
  if (map_ != nullptr) munmap(map_, capacity_);
  if (fd_ >= 0) close(fd_);
}

BatchMappings::BatchMappings(size_t max_idle, bool writable) : state_(std::make_shared<State>()) {
  state_->max_idle = max_idle;
  state_->writable = writable;
}

BatchMappings::~BatchMappings() {
  absl::MutexLock lock(&state_->mu);
  for (const Entry& e : state_->idle) munmap(e.addr, e.size);
  state_->idle.clear();
  state_->closed = true;
}

int64_t BatchMappings::maps_made() const {
  absl::MutexLock lock(&state_->mu);
  return state_->made;
}

absl::StatusOr<std::shared_ptr<const void>> BatchMappings::Map(int fd, size_t size) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno("fstat on a batch file");
  Entry entry{st.st_dev, st.st_ino, size, nullptr};
  {
    absl::MutexLock lock(&state_->mu);
    for (auto it = state_->idle.begin(); it != state_->idle.end(); ++it) {
      if (it->dev == entry.dev && it->ino == entry.ino && it->size == size) {
        entry = *it;
        state_->idle.erase(it);
        break;
      }
    }
  }
  if (entry.addr == nullptr) {
    // MAP_POPULATE: map every page in one call rather than one fault per 4 KiB on first touch.
    void* addr = mmap(nullptr, size, state_->writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_POPULATE,
                      fd, 0);
    if (addr == MAP_FAILED) return Errno("mapping a batch file");
    entry.addr = addr;
    absl::MutexLock lock(&state_->mu);
    ++state_->made;
  }
  return std::shared_ptr<const void>(entry.addr, [state = state_, entry](const void*) {
    absl::MutexLock lock(&state->mu);
    if (state->closed) {
      munmap(entry.addr, entry.size);
      return;
    }
    state->idle.push_front(entry);
    while (state->idle.size() > state->max_idle) {
      munmap(state->idle.back().addr, state->idle.back().size);
      state->idle.pop_back();
    }
  });
}

absl::StatusOr<MiniBatch> ReadShmBatch(int fd, std::function<void()> on_release, BatchMappings* mappings,
                                       LinkPairs* pairs) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno("fstat on a batch file");
  const size_t file_size = static_cast<size_t>(st.st_size);
  if (file_size < kHeader * 8)
    return absl::DataLossError(StrCat("batch file of ", file_size, " bytes has no header"));
  std::shared_ptr<const void> mapping;
  if (mappings != nullptr) {
    ASSIGN_OR_RETURN(mapping, mappings->Map(fd, file_size));
  } else {
    // MAP_POPULATE: map every page in one call rather than one fault per 4 KiB on first touch.
    void* addr = mmap(nullptr, file_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (addr == MAP_FAILED) return Errno("mapping a batch file");
    mapping = std::shared_ptr<const void>(addr, [file_size](const void* p) { munmap(const_cast<void*>(p), file_size); });
  }
  const void* map = mapping.get();
  // The mapping goes (or back to `mappings`) before the sampler hears the file is free.
  std::shared_ptr<const void> owner(map, [mapping = std::move(mapping), release = std::move(on_release)](const void*) mutable {
    mapping.reset();
    if (release) release();
  });
  const char* base = static_cast<const char*>(map);
  const auto* h = static_cast<const int64_t*>(map);
  if ((h[0] & kMagicMask) != (kMagic & kMagicMask))
    return absl::DataLossError("batch file has a bad header");
  if (h[0] != kMagic) {
    return absl::DataLossError(StrCat("batch file is of version ", static_cast<char>(h[0] >> 56),
                                      "; this reader reads ", kVersion,
                                      " (a sampler and trainer of different builds?)"));
  }
  const int64_t layers = h[5], num_arrays = h[6];
  if (layers < 0 || layers > 64 || num_arrays < 1 || num_arrays > kMaxArrays ||
      TableEnd(static_cast<size_t>(num_arrays)) > file_size) {
    return absl::DataLossError(StrCat("batch file has a bad header: ", layers, " layers, ",
                                      num_arrays, " arrays in ", file_size, " bytes"));
  }
  if (h[7] < 0 || h[7] > static_cast<int64_t>(core::FeatureCodec::kInt8)) {
    return absl::DataLossError(StrCat("batch file has an unknown feature codec ", h[7]));
  }
  std::vector<TableEntry> table(static_cast<size_t>(num_arrays));
  std::memcpy(table.data(), base + kHeader * 8, table.size() * sizeof(TableEntry));
  std::vector<ArrayRef> arrays;
  for (size_t i = 0; i < table.size(); ++i) {
    TableEntry& t = table[i];
    t.name[kMaxFieldName] = '\0';
    const std::string_view name(t.name);
    if (t.domain < static_cast<int32_t>(Domain::kSeed) ||
        t.domain > static_cast<int32_t>(Domain::kRow) || t.dtype < 0 ||
        t.dtype > static_cast<int32_t>(core::DType::kFloat64) ||
        t.width < (t.domain == static_cast<int32_t>(Domain::kRow) ? 0 : 1) || t.width > kMaxWidth ||
        t.count < 0 || t.offset < 0 || t.offset % static_cast<int64_t>(kAlign) != 0 ||
        static_cast<size_t>(t.offset) < TableEnd(table.size())) {
      return absl::DataLossError(StrCat(
          "batch file: array ", i, " ('", name, "') has a bad table entry (domain ", t.domain,
          ", dtype ", t.dtype, ", width ", t.width, ", ", t.count, " entries at ", t.offset, ")"));
    }
    ArrayRef a{name, static_cast<Domain>(t.domain), t.layer, static_cast<core::DType>(t.dtype),
               t.width, t.count, base + t.offset, t.matrix != 0};
    const size_t room = file_size - static_cast<size_t>(t.offset);
    const size_t entry_bytes = static_cast<size_t>(t.width) * core::DTypeSize(a.dtype);
    if (static_cast<size_t>(t.offset) > file_size ||
        (entry_bytes > 0 && static_cast<size_t>(t.count) > room / entry_bytes)) {
      return absl::DataLossError(StrCat("batch file is ", file_size, " bytes; its array '", name,
                                        "' needs ", t.offset, " + ", t.count, " x ", entry_bytes,
                                        " bytes"));
    }
    arrays.push_back(a);
  }
  if (arrays.back().domain != Domain::kRow || arrays.back().name != "features") {
    return absl::DataLossError("batch file: its last array is not the features");
  }
  RETURN_IF_ERROR(CheckArrayCounts(arrays, layers));
  MiniBatch mb;
  mb.epoch = h[1];
  mb.step = h[2];
  mb.sample_seconds = static_cast<double>(h[3]) * 1e-9;
  mb.fetch_seconds = static_cast<double>(h[4]) * 1e-9;
  mb.blocks.resize(static_cast<size_t>(layers));
  LinkPairs read;
  for (size_t i = 0; i + 1 < arrays.size(); ++i)
    RETURN_IF_ERROR(PlaceArray(arrays[i], owner, &mb, &read));
  const int64_t num_seeds = static_cast<int64_t>(mb.seeds.size());
  for (const std::vector<int64_t>* v : {&read.pos_src, &read.pos_dst, &read.neg_src, &read.neg_dst}) {
    for (int64_t p : *v) {
      if (p < 0 || p >= num_seeds) return absl::DataLossError("batch file has a link pair outside its seeds");
    }
  }
  if (pairs != nullptr) *pairs = std::move(read);
  const ArrayRef& f = arrays.back();
  mb.features.dtype = f.dtype;
  mb.features.codec = static_cast<core::FeatureCodec>(h[7]);
  mb.features.rows = f.count;
  mb.features.cols = f.width;
  mb.features.data = f.data;
  mb.features.owner = std::move(owner);
  return mb;
}

namespace {

absl::Status SendAll(int sock, const void* data, size_t n, int fd) {
  msghdr msg{};
  iovec iov{const_cast<void*>(data), n};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  // SOCK_SEQPACKET: one message, all or nothing.
  ssize_t sent;
  do {
    sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return absl::UnavailableError(StrCat("sending to the trainer: ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace

absl::Status SendBatch(int sock, int64_t index, int64_t slot, int fd) {
  SamplerMessage m;
  m.kind = SamplerMessage::kBatch;
  m.index = index;
  m.code = slot;
  return SendAll(sock, &m, sizeof(m), fd);
}

absl::Status SendError(int sock, int64_t index, const absl::Status& error) {
  SamplerMessage m;
  m.kind = SamplerMessage::kError;
  m.index = index;
  m.code = static_cast<int64_t>(error.code());
  std::string text(error.message().substr(0, 4000));
  m.text_len = static_cast<int64_t>(text.size());
  std::string buf(reinterpret_cast<const char*>(&m), sizeof(m));
  buf += text;
  return SendAll(sock, buf.data(), buf.size(), -1);
}

absl::Status ReceiveMessage(int sock, int64_t* index, int64_t* slot, int* fd, bool* closed) {
  *fd = -1;
  *closed = false;
  char buf[sizeof(SamplerMessage) + 4096];
  msghdr msg{};
  iovec iov{buf, sizeof(buf)};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return absl::UnavailableError(StrCat("reading from the sampler: ", std::strerror(errno)));
  if (n == 0) {
    *closed = true;
    return absl::UnavailableError("closed");
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(fd, CMSG_DATA(c), sizeof(int));
  }
  if (static_cast<size_t>(n) < sizeof(SamplerMessage)) return absl::DataLossError("short message from a sampler");
  SamplerMessage m;
  std::memcpy(&m, buf, sizeof(m));
  *index = m.index;
  if (m.kind == SamplerMessage::kError) {
    std::string text(buf + sizeof(m), std::min<size_t>(m.text_len, n - sizeof(m)));
    return absl::Status(static_cast<absl::StatusCode>(m.code), text);
  }
  if (m.kind != SamplerMessage::kBatch || *fd < 0) return absl::DataLossError("malformed message from a sampler");
  *slot = m.code;
  return absl::OkStatus();
}

bool SendRelease(int sock, int64_t slot) { return send(sock, &slot, sizeof(slot), MSG_NOSIGNAL) == sizeof(slot); }

bool SendTaken(int sock) { return SendRelease(sock, kBatchTaken); }

bool SendFetchFeatures(int sock, bool on) { return SendRelease(sock, on ? kFetchFeatures : kSkipFeatures); }

int64_t ReadTrainerMessage(int sock, bool wait) {
  int64_t slot = -1;
  ssize_t n;
  do {
    n = recv(sock, &slot, sizeof(slot), wait ? 0 : MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (!wait && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return kNoMessage;
  return n == sizeof(slot) ? slot : -1;
}

}  // namespace fanout::sampler
