#include "sampler/shm_batch.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::sampler {

using base::StrCat;

namespace {

constexpr int64_t kMagic = 0x3648435441424e46;  // "FNBATCH6"
constexpr size_t kAlign = 64;
constexpr int64_t kFixed = 17;  // header entries before the per-layer ones

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The file: a header of int64s, then 64-byte-aligned arrays.
//   header: magic, epoch, step, layers, seeds, labels, feature rows, feature cols,
//           sample ns, fetch ns, weighted (0/1), link positives, link negatives, edge feature
//           width (0: none), feature dtype (core::DType, plus 256 x core::FeatureCodec), feature slots (0, or one per input
//           node with a trainer's feature cache), typed (0/1), then per layer: num_src, num_dst,
//           num_edges
//   arrays: seeds, labels, link {pos_src, pos_dst, eids, neg_src, neg_dst}, per layer
//           {src_nodes, indptr, indices, eids, dst, edge weights (float32, when weighted), edge
//           features (float32 [num_edges, width], when width > 0), edge types (int32, when
//           typed)}, feature slots, input node types (int32, when typed), features (feature
//           rows x cols of the feature dtype)
// The trainer borrows every array in place (sampler/array.h): nothing is copied out.
struct Layout {
  std::vector<int64_t> header;
  size_t size = 0;
  size_t features_at = 0;
};

Layout Plan(const std::vector<int64_t>& header) {
  Layout l;
  l.header = header;
  const int64_t layers = header[3];
  size_t at = AlignUp(header.size() * 8);
  at += AlignUp(header[4] * 8) + AlignUp(header[5] * 8);
  at += 3 * AlignUp(header[11] * 8) + 2 * AlignUp(header[12] * 8);
  for (int64_t i = 0; i < layers; ++i) {
    const int64_t src = header[kFixed + 3 * i], dst = header[kFixed + 1 + 3 * i], edges = header[kFixed + 2 + 3 * i];
    at += AlignUp(src * 8) + AlignUp((dst + 1) * 8) + 3 * AlignUp(edges * 8);
    if (header[10] != 0) at += AlignUp(edges * 4);
    at += AlignUp(edges * header[13] * 4);
    if (header[16] != 0) at += AlignUp(edges * 4);
  }
  at += AlignUp(header[15] * 8);
  if (header[16] != 0 && layers > 0) at += AlignUp(header[kFixed] * 4);
  l.features_at = at;
  l.size = at + AlignUp(static_cast<size_t>(header[6] * header[7]) * core::DTypeSize(static_cast<core::DType>(header[14])));
  return l;
}

std::vector<int64_t> HeaderOf(const MiniBatch& mb, int64_t rows, int64_t cols, core::DType dtype,
                              core::FeatureCodec codec, const LinkPairs* pairs) {
  std::vector<int64_t> h = {kMagic, mb.epoch, mb.step, static_cast<int64_t>(mb.blocks.size()),
                            static_cast<int64_t>(mb.seeds.size()), static_cast<int64_t>(mb.labels.size()), rows, cols,
                            static_cast<int64_t>(mb.sample_seconds * 1e9), static_cast<int64_t>(mb.fetch_seconds * 1e9),
                            std::any_of(mb.blocks.begin(), mb.blocks.end(),
                                        [](const Block& b) { return !b.edge_weight.empty(); })
                                ? 1
                                : 0,
                            pairs != nullptr ? static_cast<int64_t>(pairs->pos_src.size()) : 0,
                            pairs != nullptr ? static_cast<int64_t>(pairs->neg_src.size()) : 0,
                            mb.blocks.empty() ? 0 : mb.blocks[0].edge_feat_dim,
                            static_cast<int64_t>(dtype) + 256 * static_cast<int64_t>(codec),
                            static_cast<int64_t>(mb.feature_slots.size()), mb.input_types.empty() ? 0 : 1};
  for (const Block& b : mb.blocks) {
    h.push_back(b.num_src());
    h.push_back(b.num_dst);
    h.push_back(b.num_edges());
  }
  return h;
}

absl::Status Errno(const std::string& what) { return absl::InternalError(StrCat(what, ": ", std::strerror(errno))); }

}  // namespace

absl::StatusOr<char*> ShmSlot::Write(const MiniBatch& mb, int64_t rows, int64_t cols, core::DType dtype,
                                     const LinkPairs* pairs, core::FeatureCodec codec) {
  Layout l = Plan(HeaderOf(mb, rows, cols, dtype, codec, pairs));
  if (pairs != nullptr && (pairs->pos_dst.size() != pairs->pos_src.size() || pairs->eids.size() != pairs->pos_src.size() ||
                           pairs->neg_dst.size() != pairs->neg_src.size())) {
    return absl::InternalError("a link batch's pair arrays differ in length");
  }
  for (size_t i = 0; i < mb.blocks.size(); ++i) {
    const Block& b = mb.blocks[i];
    if (l.header[10] != 0 && b.edge_weight.size() != b.eids.size()) {
      return absl::InternalError(StrCat("block ", i, " has ", b.edge_weight.size(), " edge weights for ",
                                        b.eids.size(), " edges"));
    }
    if (b.edge_feat_dim != l.header[13] || b.edge_feat.size() != b.eids.size() * static_cast<size_t>(l.header[13])) {
      return absl::InternalError(StrCat("block ", i, " has ", b.edge_feat.size(), " edge feature values of width ",
                                        b.edge_feat_dim, " for ", b.eids.size(), " edges"));
    }
    if (l.header[16] != 0 && b.etype.size() != b.eids.size()) {
      return absl::InternalError(StrCat("block ", i, " of a typed batch has ", b.etype.size(), " edge types for ",
                                        b.eids.size(), " edges"));
    }
  }
  if (l.header[16] != 0 && !mb.blocks.empty() && mb.input_types.size() != mb.blocks[0].src_nodes.size()) {
    return absl::InternalError(StrCat("a typed batch has ", mb.input_types.size(), " input node types for ",
                                      mb.blocks[0].src_nodes.size(), " input nodes"));
  }
  if (fd_ < 0) {
    fd_ = memfd_create("fanout-batch", MFD_CLOEXEC);
    if (fd_ < 0) return Errno("memfd_create");
  }
  if (l.size > capacity_) {
    // Grow with headroom, so batches a little larger than the last do not remap every time.
    const size_t want = l.size + l.size / 4;
    if (map_ != nullptr) munmap(map_, capacity_);
    map_ = nullptr;
    capacity_ = 0;
    if (ftruncate(fd_, static_cast<off_t>(want)) != 0) return Errno(StrCat("sizing a ", want, "-byte batch file"));
    void* m = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) return Errno("mapping a batch file");
    map_ = m;
    capacity_ = want;
  }
  bytes_ = l.size;
  char* base = static_cast<char*>(map_);
  size_t at = 0;
  auto put = [&](const int64_t* data, size_t n) {
    if (n > 0) std::memcpy(base + at, data, n * 8);
    at += AlignUp(n * 8);
  };
  put(l.header.data(), l.header.size());
  put(mb.seeds.data(), mb.seeds.size());
  put(mb.labels.data(), mb.labels.size());
  if (pairs != nullptr) {
    for (const std::vector<int64_t>* v : {&pairs->pos_src, &pairs->pos_dst, &pairs->eids, &pairs->neg_src, &pairs->neg_dst}) {
      put(v->data(), v->size());
    }
  }
  for (const Block& b : mb.blocks) {
    put(b.src_nodes.data(), b.src_nodes.size());
    put(b.indptr.data(), b.indptr.size());
    put(b.indices.data(), b.indices.size());
    put(b.eids.data(), b.eids.size());
    if (b.dst.size() == b.indices.size()) {
      put(b.dst.data(), b.dst.size());
    } else {  // a block built without it: derived here, so that every batch file carries it
      auto* dst = reinterpret_cast<int64_t*>(base + at);
      for (int64_t j = 0; j < b.num_dst; ++j) {
        for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) dst[e] = j;
      }
      at += AlignUp(b.indices.size() * 8);
    }
    if (l.header[10] != 0) {
      if (!b.edge_weight.empty()) std::memcpy(base + at, b.edge_weight.data(), b.edge_weight.size() * 4);
      at += AlignUp(b.edge_weight.size() * 4);
    }
    if (!b.edge_feat.empty()) std::memcpy(base + at, b.edge_feat.data(), b.edge_feat.size() * 4);
    at += AlignUp(b.edge_feat.size() * 4);
    if (l.header[16] != 0) {
      if (!b.etype.empty()) std::memcpy(base + at, b.etype.data(), b.etype.size() * 4);
      at += AlignUp(b.etype.size() * 4);
    }
  }
  put(mb.feature_slots.data(), mb.feature_slots.size());
  if (l.header[16] != 0 && !mb.blocks.empty()) {
    std::memcpy(base + at, mb.input_types.data(), mb.input_types.size() * 4);
    at += AlignUp(mb.input_types.size() * 4);
  }
  return base + at;
}

void ShmSlot::SetFetchSeconds(double seconds) {
  static_cast<int64_t*>(map_)[9] = static_cast<int64_t>(seconds * 1e9);
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
  if (file_size < kFixed * 8) return absl::DataLossError(StrCat("batch file of ", file_size, " bytes has no header"));
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
  const auto* h = static_cast<const int64_t*>(map);
  const int64_t layers = h[3];
  if (h[0] != kMagic || layers < 0 || layers > 64 || file_size < static_cast<size_t>(kFixed + 3 * layers) * 8) {
    return absl::DataLossError("batch file has a bad header");
  }
  std::vector<int64_t> header(h, h + kFixed + 3 * layers);
  for (int64_t v : header) {
    if (v < 0) return absl::DataLossError("batch file has a negative count");
  }
  if (header[13] > (int64_t{1} << 20)) return absl::DataLossError("batch file has an implausible edge feature width");
  if (header[15] != 0 && (layers == 0 || header[15] != header[kFixed])) {
    return absl::DataLossError(StrCat("batch file has ", header[15], " feature cache slots for ",
                                      layers == 0 ? 0 : header[kFixed], " input nodes"));
  }
  if (header[14] < 0 || header[14] % 256 > static_cast<int64_t>(core::DType::kFloat64) ||
      header[14] / 256 > static_cast<int64_t>(core::FeatureCodec::kInt8)) {
    return absl::DataLossError(StrCat("batch file has an unknown feature dtype ", header[14]));
  }
  Layout l = Plan(header);
  if (l.size > file_size) {
    return absl::DataLossError(StrCat("batch file is ", file_size, " bytes; its header describes ", l.size));
  }
  const char* base = static_cast<const char*>(map);
  size_t at = AlignUp(header.size() * 8);
  auto get = [&](std::vector<int64_t>* out, int64_t n) {  // small arrays: copied
    const auto* p = reinterpret_cast<const int64_t*>(base + at);
    out->assign(p, p + n);
    at += AlignUp(static_cast<size_t>(n) * 8);
  };
  // A block's arrays stay in the mapping, kept alive by `owner`.
  auto borrow = [&](auto* out, int64_t n) {
    using T = typename std::remove_pointer_t<decltype(out)>::value_type;
    *out = std::remove_pointer_t<decltype(out)>::Borrow(owner, reinterpret_cast<const T*>(base + at), static_cast<size_t>(n));
    at += AlignUp(static_cast<size_t>(n) * sizeof(T));
  };
  MiniBatch mb;
  mb.epoch = header[1];
  mb.step = header[2];
  get(&mb.seeds, header[4]);
  get(&mb.labels, header[5]);
  LinkPairs read;
  for (auto [v, n] : {std::pair{&read.pos_src, header[11]}, {&read.pos_dst, header[11]}, {&read.eids, header[11]},
                      {&read.neg_src, header[12]}, {&read.neg_dst, header[12]}}) {
    get(v, n);
  }
  const int64_t num_seeds = header[4];
  for (const std::vector<int64_t>* v : {&read.pos_src, &read.pos_dst, &read.neg_src, &read.neg_dst}) {
    for (int64_t p : *v) {
      if (p < 0 || p >= num_seeds) return absl::DataLossError("batch file has a link pair outside its seeds");
    }
  }
  if (pairs != nullptr) *pairs = std::move(read);
  mb.blocks.resize(layers);
  for (int64_t i = 0; i < layers; ++i) {
    Block& b = mb.blocks[i];
    const int64_t edges = header[kFixed + 2 + 3 * i];
    borrow(&b.src_nodes, header[kFixed + 3 * i]);
    b.num_dst = header[kFixed + 1 + 3 * i];
    borrow(&b.indptr, b.num_dst + 1);
    borrow(&b.indices, edges);
    borrow(&b.eids, edges);
    borrow(&b.dst, edges);
    if (header[10] != 0) borrow(&b.edge_weight, edges);
    b.edge_feat_dim = header[13];
    borrow(&b.edge_feat, edges * header[13]);
    if (header[16] != 0) borrow(&b.etype, edges);
  }
  borrow(&mb.feature_slots, header[15]);
  if (header[16] != 0 && layers > 0) borrow(&mb.input_types, header[kFixed]);
  mb.sample_seconds = header[8] * 1e-9;
  mb.fetch_seconds = header[9] * 1e-9;
  mb.features.dtype = static_cast<core::DType>(header[14] % 256);
  mb.features.codec = static_cast<core::FeatureCodec>(header[14] / 256);
  mb.features.rows = header[6];
  mb.features.cols = header[7];
  mb.features.data = base + l.features_at;
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

int64_t ReadTrainerMessage(int sock) {
  int64_t slot = -1;
  ssize_t n;
  do {
    n = read(sock, &slot, sizeof(slot));
  } while (n < 0 && errno == EINTR);
  return n == sizeof(slot) ? slot : -1;
}

}  // namespace fanout::sampler
