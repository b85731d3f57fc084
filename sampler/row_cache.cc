#include "sampler/row_cache.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <utility>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::sampler {

using base::StrCat;

RowCache::RowCache(std::vector<std::string> fields, size_t row_bytes, const std::vector<int64_t>& ids, bool allocate)
    : fields_(std::move(fields)), row_bytes_(row_bytes) {
  index_.Reset(ids.size());
  for (int64_t id : ids) index_.Insert(id);
  bytes_ = index_.size() * row_bytes_;
  if (allocate) {
    heap_.assign(bytes_, 0);
    rows_ = heap_.data();
  }
}

RowCache::RowCache(std::vector<std::string> fields, size_t row_bytes, std::vector<int64_t> ids)
    : RowCache(std::move(fields), row_bytes, ids, /*allocate=*/true) {}

bool RowCache::Holds(const std::string& key) const {
  return std::find(fields_.begin(), fields_.end(), key) != fields_.end();
}

std::string RowCache::field() const {
  std::string out;
  for (const std::string& f : fields_) out += (out.empty() ? "" : ", ") + f;
  return out;
}

RowCache::~RowCache() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::shared_ptr<RowCache>> RowCache::InSharedMemory(std::vector<std::string> fields, size_t row_bytes,
                                                                   std::vector<int64_t> ids) {
  std::shared_ptr<RowCache> c(new RowCache(std::move(fields), row_bytes, ids, /*allocate=*/false));
  const std::vector<int64_t>& kept = c->index_.ids();  // distinct, in slot order
  c->map_bytes_ = std::max<size_t>(1, c->bytes_ + kept.size() * sizeof(int64_t));
  c->fd_ = memfd_create("fanout-halo-cache", MFD_CLOEXEC);
  if (c->fd_ < 0 || ftruncate(c->fd_, static_cast<off_t>(c->map_bytes_)) != 0) {
    return absl::ResourceExhaustedError(StrCat("the halo cache's shared memory (", c->map_bytes_, " bytes): ",
                                               std::strerror(errno)));
  }
  c->map_ = ::mmap(nullptr, c->map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd_, 0);
  if (c->map_ == MAP_FAILED) {
    c->map_ = nullptr;
    return absl::ResourceExhaustedError(StrCat("mapping the halo cache (", c->map_bytes_, " bytes): ", std::strerror(errno)));
  }
  c->rows_ = static_cast<char*>(c->map_);
  std::memcpy(c->rows_ + c->bytes_, kept.data(), kept.size() * sizeof(int64_t));
  return c;
}

absl::StatusOr<std::shared_ptr<RowCache>> RowCache::MapShared(std::vector<std::string> fields, size_t row_bytes,
                                                              std::vector<int64_t> ids, int fd) {
  std::shared_ptr<RowCache> c(new RowCache(std::move(fields), row_bytes, ids, /*allocate=*/false));
  const std::vector<int64_t>& kept = c->index_.ids();
  const size_t want = std::max<size_t>(1, c->bytes_ + kept.size() * sizeof(int64_t));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != want) {
    return absl::FailedPreconditionError(StrCat("the trainer's halo cache (fd ", fd, ") holds ", st.st_size,
                                                " bytes; this process chose ", kept.size(), " rows of ", row_bytes,
                                                " bytes of '", c->field(), "' (", want, " bytes with their IDs)"));
  }
  c->map_ = ::mmap(nullptr, want, PROT_READ, MAP_SHARED, fd, 0);
  if (c->map_ == MAP_FAILED) {
    c->map_ = nullptr;
    return absl::FailedPreconditionError(StrCat("mapping the trainer's halo cache: ", std::strerror(errno)));
  }
  c->map_bytes_ = want;
  c->rows_ = static_cast<char*>(c->map_);
  if (std::memcmp(c->rows_ + c->bytes_, kept.data(), kept.size() * sizeof(int64_t)) != 0) {
    return absl::FailedPreconditionError(StrCat("the trainer's halo cache holds other nodes' rows of '", c->field(),
                                                "' than this process chose (is it the same partition and cache size?)"));
  }
  return c;
}

absl::StatusOr<std::shared_ptr<RowCache>> RowCache::MapSharedAsWritten(std::vector<std::string> fields,
                                                                       size_t row_bytes, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return absl::FailedPreconditionError(StrCat("the trainer's row cache (fd ", fd, "): ", std::strerror(errno)));
  }
  const size_t size = static_cast<size_t>(st.st_size), per_row = row_bytes + sizeof(int64_t);
  // An empty cache's file is 1 byte (a mapping needs one).
  const size_t n = size <= 1 ? 0 : size / per_row;
  if (row_bytes == 0 || (size > 1 && size != n * per_row)) {
    return absl::FailedPreconditionError(StrCat("the trainer's row cache (fd ", fd, ") holds ", size,
                                                " bytes: not whole rows of ", row_bytes, " bytes with their IDs"));
  }
  std::vector<int64_t> ids(n);
  if (n > 0 && ::pread(fd, ids.data(), n * sizeof(int64_t), static_cast<off_t>(n * row_bytes)) !=
                   static_cast<ssize_t>(n * sizeof(int64_t))) {
    return absl::FailedPreconditionError(StrCat("reading the trainer's row cache's IDs (fd ", fd, "): ",
                                                std::strerror(errno)));
  }
  const size_t held = ids.size();
  ASSIGN_OR_RETURN(std::shared_ptr<RowCache> c, MapShared(std::move(fields), row_bytes, std::move(ids), fd));
  if (c->size() != held) {
    return absl::FailedPreconditionError(StrCat("the trainer's row cache (fd ", fd, ") lists a node twice"));
  }
  return c;
}

CachingGraphSource::CachingGraphSource(std::shared_ptr<core::GraphSource> inner, std::shared_ptr<const RowCache> cache,
                                       std::shared_ptr<CacheCounters> counters)
    : ForwardingGraphSource(std::move(inner)), cache_(std::move(cache)), counters_(std::move(counters)) {}

std::string CachingGraphSource::Describe() const {
  return inner().Describe() + " with " + std::to_string(cache_->size()) + " cached rows of '" + cache_->field() + "'";
}

void CachingGraphSource::GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                                    std::span<const int64_t> positions, char* out, core::Done done) {
  // (The cache's fields are keys: "NAME", or "TYPE/NAME" for a typed graph's features.)
  if (field.kind != core::FieldRef::Kind::kNode || !cache_->Holds(field.key()) || row_bytes != cache_->row_bytes()) {
    return ForwardingGraphSource::GatherRows(field, row_bytes, ids, positions, out, std::move(done));
  }
  // Cached rows are copied here; only the others are asked of the source behind. Cached rows
  // are random in a large array: prefetch a few ahead, as the local gather does.
  struct Misses {
    std::vector<int64_t> ids, positions;
  };
  auto miss = std::make_shared<Misses>();
  std::vector<int64_t> slots(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) slots[i] = cache_->Find(ids[i]);
  constexpr size_t kAhead = 8;
  const size_t lines = (row_bytes + 63) / 64;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kAhead < ids.size() && slots[i + kAhead] >= 0) {
      const char* next = cache_->row(slots[i + kAhead]);
      for (size_t c = 0; c < lines; ++c) __builtin_prefetch(next + 64 * c);
    }
    if (slots[i] >= 0) {
      std::memcpy(out + positions[i] * row_bytes, cache_->row(slots[i]), row_bytes);
    } else {
      miss->ids.push_back(ids[i]);
      miss->positions.push_back(positions[i]);
    }
  }
  counters_->hits.fetch_add(static_cast<int64_t>(ids.size() - miss->ids.size()), std::memory_order_relaxed);
  counters_->misses.fetch_add(static_cast<int64_t>(miss->ids.size()), std::memory_order_relaxed);
  if (miss->ids.empty()) return done(absl::OkStatus());
  const std::span<const int64_t> miss_ids = miss->ids, miss_positions = miss->positions;
  inner().GatherRows(field, row_bytes, miss_ids, miss_positions, out,
                     [miss = std::move(miss), done = std::move(done)](absl::Status s) { done(std::move(s)); });
}

std::vector<int64_t> ChooseCachedRows(const std::vector<int64_t>& candidates, const std::vector<int64_t>& taken,
                                      const std::vector<int64_t>& edge_counts, size_t max_rows) {
  if (candidates.size() <= max_rows) {
    std::vector<int64_t> all = candidates;
    std::sort(all.begin(), all.end());
    return all;
  }
  auto of = [](const std::vector<int64_t>& v, size_t i) { return v.empty() ? int64_t{0} : v[i]; };
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto before = [&](size_t a, size_t b) {
    if (of(taken, a) != of(taken, b)) return of(taken, a) > of(taken, b);
    if (of(edge_counts, a) != of(edge_counts, b)) return of(edge_counts, a) > of(edge_counts, b);
    return candidates[a] < candidates[b];
  };
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(max_rows), order.end(), before);
  std::vector<int64_t> chosen;
  chosen.reserve(max_rows);
  for (size_t i = 0; i < max_rows; ++i) chosen.push_back(candidates[order[i]]);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace fanout::sampler
