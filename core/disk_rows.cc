#include "core/disk_rows.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/thread_pool.h"
#include "core/random.h"

namespace fanout::core {

const char* CachePolicyName(CachePolicy p) { return p == CachePolicy::kLru ? "lru" : "s3fifo"; }

absl::StatusOr<CachePolicy> CachePolicyFromName(const std::string& name) {
  if (name == "s3fifo") return CachePolicy::kS3Fifo;
  if (name == "lru") return CachePolicy::kLru;
  return absl::InvalidArgumentError(base::StrCat("cache policy '", name, "': s3fifo or lru"));
}

// One shard: its rows, the queues that order them, and for S3-FIFO the ghost keys. Under `mu`.
struct RowCache::Shard {
  enum Queue : uint8_t { kSmall, kMain };
  struct Entry {
    std::unique_ptr<char[]> row;
    uint32_t bytes = 0;
    uint8_t freq = 0;  // S3-FIFO: reads since it was inserted or last examined, at most 3
    Queue queue = kSmall;
    std::list<uint64_t>::iterator at;
  };

  std::mutex mu;
  int64_t capacity = 0, small_capacity = 0;
  int64_t charged = 0, small_charged = 0;
  std::unordered_map<uint64_t, Entry> entries;
  // Front: newest. LRU uses `main` alone, most recent at the front.
  std::list<uint64_t> small, main;
  // S3-FIFO's ghosts: keys that left the small queue unread, as many as the cache holds rows.
  std::list<uint64_t> ghost_order;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> ghosts;

  static int64_t Charge(size_t bytes) { return static_cast<int64_t>(bytes) + kEntryOverhead; }

  void Forget(std::unordered_map<uint64_t, Entry>::iterator it) {
    charged -= Charge(it->second.bytes);
    if (it->second.queue == kSmall) small_charged -= Charge(it->second.bytes);
    entries.erase(it);
  }

  void Remember(uint64_t key) {
    if (ghosts.count(key) > 0) return;
    ghost_order.push_front(key);
    ghosts.emplace(key, ghost_order.begin());
    while (ghost_order.size() > std::max<size_t>(entries.size(), 1)) {
      ghosts.erase(ghost_order.back());
      ghost_order.pop_back();
    }
  }

  // S3-FIFO's eviction: from the small queue while it is over its share, else from the main.
  void EvictOneS3Fifo() {
    if (small_charged > small_capacity || main.empty()) {
      const uint64_t key = small.back();
      small.pop_back();
      auto it = entries.find(key);
      Entry& e = it->second;
      if (e.freq > 0) {  // read again while new: keep it, in the main queue
        small_charged -= Charge(e.bytes);
        e.queue = kMain;
        e.freq = 0;
        main.push_front(key);
        e.at = main.begin();
      } else {
        Forget(it);
        Remember(key);
      }
      return;
    }
    const uint64_t key = main.back();
    main.pop_back();
    auto it = entries.find(key);
    if (it->second.freq > 0) {  // read since last examined: another round
      --it->second.freq;
      main.push_front(key);
      it->second.at = main.begin();
    } else {
      Forget(it);
    }
  }

  void EvictOneLru() {
    const uint64_t key = main.back();
    main.pop_back();
    Forget(entries.find(key));
  }
};

RowCache::RowCache(int64_t capacity_bytes, CachePolicy policy, int num_shards)
    : capacity_(std::max<int64_t>(0, capacity_bytes)), policy_(policy) {
  num_shards = std::max(1, num_shards);
  for (int i = 0; i < num_shards; ++i) {
    auto s = std::make_unique<Shard>();
    s->capacity = capacity_ / num_shards;
    s->small_capacity = s->capacity / 10;
    shards_.push_back(std::move(s));
  }
}

RowCache::~RowCache() = default;

RowCache::Shard& RowCache::ShardOf(uint64_t key) { return *shards_[SplitMix64(key) % shards_.size()]; }

bool RowCache::Lookup(uint64_t key, char* out, size_t bytes) {
  Shard& s = ShardOf(key);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.entries.find(key);
  if (it == s.entries.end() || it->second.bytes != bytes) return false;
  Shard::Entry& e = it->second;
  std::memcpy(out, e.row.get(), bytes);
  if (policy_ == CachePolicy::kLru) {
    s.main.splice(s.main.begin(), s.main, e.at);
  } else if (e.freq < 3) {
    ++e.freq;
  }
  return true;
}

void RowCache::Insert(uint64_t key, const char* row, size_t bytes) {
  Shard& s = ShardOf(key);
  const int64_t charge = Shard::Charge(bytes);
  std::lock_guard<std::mutex> lock(s.mu);
  if (charge > s.capacity || s.entries.count(key) > 0) return;
  Shard::Entry e;
  e.row.reset(new char[bytes]);
  std::memcpy(e.row.get(), row, bytes);
  e.bytes = static_cast<uint32_t>(bytes);
  if (policy_ == CachePolicy::kLru) {
    e.queue = Shard::kMain;
    s.main.push_front(key);
    e.at = s.main.begin();
  } else if (auto g = s.ghosts.find(key); g != s.ghosts.end()) {  // back soon after leaving: worth keeping
    s.ghost_order.erase(g->second);
    s.ghosts.erase(g);
    e.queue = Shard::kMain;
    s.main.push_front(key);
    e.at = s.main.begin();
  } else {
    e.queue = Shard::kSmall;
    s.small.push_front(key);
    e.at = s.small.begin();
    s.small_charged += charge;
  }
  s.charged += charge;
  s.entries.emplace(key, std::move(e));
  while (s.charged > s.capacity) {
    if (policy_ == CachePolicy::kLru) {
      s.EvictOneLru();
    } else {
      s.EvictOneS3Fifo();
    }
  }
}

int64_t RowCache::charged_bytes() const {
  int64_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += s->charged;
  }
  return n;
}

int64_t RowCache::rows() const {
  int64_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += static_cast<int64_t>(s->entries.size());
  }
  return n;
}

namespace {

// The process's disk readers (kReadsInFlight - 1 of them, with each reading caller the rest),
// started by the first read from disk, so that a job that maps its features has none. Never
// destroyed: a read may be under way at exit.
base::ThreadPool& Readers() {
  static base::ThreadPool* pool = new base::ThreadPool(static_cast<int>(DiskRows::kReadsInFlight) - 1);
  return *pool;
}

}  // namespace

DiskRows::DiskRows(NpyFile file, std::shared_ptr<RowCache> cache, uint32_t field_id)
    : file_(std::move(file)),
      cache_(std::move(cache)),
      key_base_(static_cast<uint64_t>(field_id) << 40),
      row_bytes_(file_.row_bytes()),
      rows_(file_.shape.empty() ? 1 : file_.shape[0]) {}

absl::Status DiskRows::Read(std::span<const int64_t> rows, std::span<const int64_t> dst, char* out) {
  auto to = [&](size_t i) { return out + (dst.empty() ? i : static_cast<size_t>(dst[i])) * row_bytes_; };
  std::vector<size_t> missed;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!cache_->Lookup(key_base_ + static_cast<uint64_t>(rows[i]), to(i), row_bytes_)) missed.push_back(i);
  }
  hits_ += static_cast<int64_t>(rows.size() - missed.size());
  misses_ += static_cast<int64_t>(missed.size());
  if (missed.empty()) return absl::OkStatus();
  // Misses in file order, read in runs of consecutive rows (a repeated row is read once).
  std::sort(missed.begin(), missed.end(), [&](size_t a, size_t b) { return rows[a] < rows[b]; });
  std::vector<std::pair<size_t, size_t>> runs;  // [b, e) of `missed`
  for (size_t b = 0; b < missed.size();) {
    size_t e = b + 1;
    while (e < missed.size() && rows[missed[e]] - rows[missed[e - 1]] <= 1 && e - b < 256) ++e;
    runs.emplace_back(b, e);
    b = e;
  }
  // One run: one pread (or a few, when short). The runs go out up to kReadsInFlight at a time, on
  // this thread and the process's readers: a disk (an SSD, a cloud volume) serves many random
  // reads in parallel and few one after another.
  auto read_run = [&](size_t r) -> absl::Status {
    const auto [b, e] = runs[r];
    const int64_t first = rows[missed[b]], count = rows[missed[e - 1]] - first + 1;
    std::vector<char> buf(static_cast<size_t>(count) * row_bytes_);
    size_t got = 0;
    const off_t at = static_cast<off_t>(file_.data_offset + static_cast<size_t>(first) * row_bytes_);
    while (got < buf.size()) {
      const ssize_t n = ::pread(file_.fd.get(), buf.data() + got, buf.size() - got, at + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::DataLossError(base::StrCat(file_.path, ": cannot read rows ", first, "..", first + count - 1, ": ",
                                                n == 0 ? "the file ended" : std::strerror(errno)));
      }
      got += static_cast<size_t>(n);
      reads_ += 1;
    }
    bytes_read_ += static_cast<int64_t>(buf.size());
    for (size_t j = b; j < e; ++j) {
      const char* row = buf.data() + static_cast<size_t>(rows[missed[j]] - first) * row_bytes_;
      std::memcpy(to(missed[j]), row, row_bytes_);
      if (j == b || rows[missed[j]] != rows[missed[j - 1]]) cache_->Insert(key_base_ + static_cast<uint64_t>(rows[missed[j]]), row, row_bytes_);
    }
    return absl::OkStatus();
  };
  // Runs are taken in order from a shared counter; after an error no new one starts.
  std::atomic<size_t> next{0};
  absl::Mutex mu;
  absl::Status first_error;
  auto work = [&] {
    for (size_t r; (r = next.fetch_add(1)) < runs.size();) {
      if (absl::Status s = read_run(r); !s.ok()) {
        absl::MutexLock lock(&mu);
        if (first_error.ok()) first_error = std::move(s);
        next.store(runs.size());
      }
    }
  };
  // About 8 runs per reader at least: a few rows are not worth a hand-off.
  const int helpers = static_cast<int>(std::min<size_t>(kReadsInFlight, (runs.size() + 7) / 8)) - 1;
  absl::BlockingCounter done(std::max(helpers, 0));
  for (int i = 0; i < helpers; ++i) {
    Readers().Submit([&] {
      work();
      done.DecrementCount();
    });
  }
  work();
  done.Wait();
  return first_error;
}

RowCacheStats DiskRows::stats() const {
  RowCacheStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.bytes_read = bytes_read_.load();
  s.reads = reads_.load();
  return s;
}

}  // namespace fanout::core
