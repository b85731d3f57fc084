#include "core/disk_rows.h"

#include <fcntl.h>
#include <unistd.h>
#ifdef FANOUT_HAVE_IO_URING
#include <liburing.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/thread_pool.h"
#include "core/random.h"

namespace fanout::core {

std::string RowCacheStats::DescribeReads() const {
  if (reads == 0) return "nothing read from disk";
  char gb[32];
  std::snprintf(gb, sizeof(gb), "%.3f", static_cast<double>(bytes_read) / 1e9);
  const char* how = ring_reads == reads ? "io_uring" : ring_reads == 0 ? "threads calling pread" : "io_uring and pread";
  return base::StrCat(gb, " GB read from disk in ", reads, " reads (", how, ", ",
                      direct ? "O_DIRECT" : "through the page cache", ")");
}

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

// The process's disk readers when io_uring is unavailable (kReadsInFlight - 1 of them, with each
// reading caller the rest), started by the first such read, so that a job that maps its features
// has none. Never destroyed: a read may be under way at exit.
base::ThreadPool& Readers() {
  static base::ThreadPool* pool = new base::ThreadPool(static_cast<int>(DiskRows::kReadsInFlight) - 1);
  return *pool;
}

#ifdef FANOUT_HAVE_IO_URING
// One io_uring per reading thread (a server's handlers, a sampler's fetch), made on its first
// read. Where the kernel or a seccomp profile refuses io_uring, the first refusal turns it off
// for the process and reads go through the pool of readers.
std::atomic<bool> uring_refused{false};

struct ThreadRing {
  io_uring ring;
  bool ok = false;
  ThreadRing() {
    if (uring_refused.load(std::memory_order_relaxed)) return;
    ok = io_uring_queue_init(DiskRows::kRingDepth, &ring, 0) == 0;
    if (!ok) uring_refused.store(true, std::memory_order_relaxed);
  }
  ~ThreadRing() { Drop(); }
  // After a submission error the ring may hold reads never submitted, into buffers about to be
  // freed: it is closed (nothing in flight by then) and this thread reads with threads after.
  void Drop() {
    if (ok) io_uring_queue_exit(&ring);
    ok = false;
  }
};

ThreadRing& ThisThreadsRing() {
  thread_local ThreadRing r;
  return r;
}

io_uring* RingOfThisThread() {
  ThreadRing& r = ThisThreadsRing();
  return r.ok ? &r.ring : nullptr;
}
#endif

constexpr size_t kPage = 4096;  // O_DIRECT's alignment of offsets, lengths and buffers
size_t PageRounded(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using ReadBuffer = std::unique_ptr<char, FreeDeleter>;
// A buffer for a read of `bytes`, page-aligned for O_DIRECT; null when out of memory.
ReadBuffer NewReadBuffer(size_t bytes) { return ReadBuffer(static_cast<char*>(std::aligned_alloc(kPage, PageRounded(bytes)))); }

}  // namespace

bool DiskRows::IoUringAvailable() {
#ifdef FANOUT_HAVE_IO_URING
  return RingOfThisThread() != nullptr;
#else
  return false;
#endif
}

DiskRows::DiskRows(NpyFile file, std::shared_ptr<RowCache> cache, uint32_t field_id)
    : DiskRows(std::move(file), std::move(cache), field_id, Options{}) {}

DiskRows::DiskRows(NpyFile file, std::shared_ptr<RowCache> cache, uint32_t field_id, Options options)
    : file_(std::move(file)),
      use_io_uring_(options.io_uring),
      cache_(std::move(cache)),
      key_base_(static_cast<uint64_t>(field_id) << 40),
      row_bytes_(file_.row_bytes()),
      rows_(file_.shape.empty() ? 1 : file_.shape[0]) {
  // Rows are read at random: the kernel's read-ahead would read (and charge to the reader's
  // memory) pages around each one that the next reads seldom want; measured on the products job
  // it tripled the bytes the disk delivered.
  ::posix_fadvise(file_.fd.get(), 0, 0, POSIX_FADV_RANDOM);
  // The page cache is bypassed where the file system allows it: the row cache is this process's
  // cache, and a page cache charged to a memory-limited machine only competes with it.
  if (!options.direct) return;
  const int fd = ::open(file_.path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd >= 0) direct_fd_ = base::UniqueFd(fd);
}

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
  std::vector<Run> runs;
  const bool direct = this->direct();
  for (size_t b = 0; b < missed.size();) {
    size_t e = b + 1;
    while (e < missed.size() && rows[missed[e]] - rows[missed[e - 1]] <= 1 && e - b < 256) ++e;
    Run r;
    r.b = b;
    r.e = e;
    r.first = rows[missed[b]];
    const size_t at = file_.data_offset + static_cast<size_t>(r.first) * row_bytes_;
    const size_t want = static_cast<size_t>(rows[missed[e - 1]] - r.first + 1) * row_bytes_;
    // With O_DIRECT the read covers whole pages: a row of whole pages in a file whose data
    // starts on a page (fanout-partition writes them so) is read alone, another spans one more.
    r.lead = direct ? at % kPage : 0;
    r.offset = at - r.lead;
    r.span = direct ? PageRounded(r.lead + want) : want;
    r.need = r.lead + want;
    runs.push_back(r);
    b = e;
  }
  // A finished run's rows go to their places and into the cache.
  auto deliver = [&](const Run& r, const char* buf) {
    for (size_t j = r.b; j < r.e; ++j) {
      const char* row = buf + r.lead + static_cast<size_t>(rows[missed[j]] - r.first) * row_bytes_;
      std::memcpy(to(missed[j]), row, row_bytes_);
      if (j == r.b || rows[missed[j]] != rows[missed[j - 1]]) {
        cache_->Insert(key_base_ + static_cast<uint64_t>(rows[missed[j]]), row, row_bytes_);
      }
    }
    bytes_read_ += static_cast<int64_t>(r.span);
  };
#ifdef FANOUT_HAVE_IO_URING
  if (io_uring* ring = use_io_uring_ ? RingOfThisThread() : nullptr) return ReadWithRing(ring, runs, deliver);
#endif
  return ReadWithThreads(runs, deliver);
}

absl::Status DiskRows::ReadError(const Run& r, const char* why) const {
  const int64_t count = static_cast<int64_t>((r.need - r.lead) / row_bytes_);
  return absl::DataLossError(base::StrCat(file_.path, ": cannot read rows ", r.first, "..", r.first + count - 1, ": ", why));
}

absl::Status DiskRows::ReadWithThreads(const std::vector<Run>& runs, const Deliver& deliver) {
  const int fd = read_fd();
  auto read_run = [&](const Run& r) -> absl::Status {
    ReadBuffer buf = NewReadBuffer(r.span);
    if (buf == nullptr) return absl::ResourceExhaustedError(base::StrCat(file_.path, ": no memory to read ", r.span, " bytes"));
    size_t got = 0;
    while (got < r.need) {
      const ssize_t n = ::pread(fd, buf.get() + got, r.span - got, static_cast<off_t>(r.offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ReadError(r, n == 0 ? "the file ended" : std::strerror(errno));
      got += static_cast<size_t>(n);
      reads_ += 1;
    }
    deliver(r, buf.get());
    return absl::OkStatus();
  };
  // The runs go out up to kReadsInFlight at a time, on this thread and the process's readers: a
  // disk (an SSD, a cloud volume) serves many random reads in parallel and few one after another.
  // Runs are taken in order from a shared counter; after an error no new one starts.
  std::atomic<size_t> next{0};
  absl::Mutex mu;
  absl::Status first_error;
  auto work = [&] {
    for (size_t r; (r = next.fetch_add(1)) < runs.size();) {
      if (absl::Status s = read_run(runs[r]); !s.ok()) {
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

#ifdef FANOUT_HAVE_IO_URING
absl::Status DiskRows::ReadWithRing(io_uring* ring, const std::vector<Run>& runs,
                                    const Deliver& deliver) {
  // Up to kRingDepth runs in flight from this one thread, each in a buffer of its own slot: the
  // same parallelism as the readers' threads at a fraction of the CPU (no thread hand-offs, one
  // system call for many reads), which on a machine whose cores also sample and train is time.
  const int fd = read_fd();
  struct Slot {
    ReadBuffer buf;
    size_t capacity = 0, run = 0, got = 0;
  };
  std::vector<Slot> slots(std::min<size_t>(kRingDepth, runs.size()));
  std::vector<size_t> idle(slots.size());
  std::iota(idle.rbegin(), idle.rend(), size_t{0});
  absl::Status error;
  size_t next = 0;
  size_t prepared = 0;   // reads prepared in the ring, not yet submitted
  size_t in_flight = 0;  // submitted, not yet completed
  bool broken = false;   // a submission failed for good
  auto prepare = [&](size_t k) {  // (the rest of) slot k's run
    Slot& s = slots[k];
    const Run& r = runs[s.run];
    io_uring_sqe* sqe = io_uring_get_sqe(ring);  // never null: at most kRingDepth prepared or in flight
    io_uring_prep_read(sqe, fd, s.buf.get() + s.got, static_cast<unsigned>(r.span - s.got),
                       static_cast<uint64_t>(r.offset + s.got));
    io_uring_sqe_set_data64(sqe, k);
    ++prepared;
    reads_ += 1;
    ring_reads_ += 1;
  };
  while (!broken && (in_flight > 0 || prepared > 0 || (next < runs.size() && error.ok()))) {
    while (!idle.empty() && next < runs.size() && error.ok()) {
      const size_t k = idle.back();
      idle.pop_back();
      Slot& s = slots[k];
      const size_t bytes = PageRounded(runs[next].span);
      if (s.capacity < bytes) {
        s.buf = NewReadBuffer(bytes);
        s.capacity = s.buf == nullptr ? 0 : bytes;
        if (s.buf == nullptr) {
          error = absl::ResourceExhaustedError(base::StrCat(file_.path, ": no memory to read ", bytes, " bytes"));
          idle.push_back(k);
          break;
        }
      }
      s.run = next++;
      s.got = 0;
      prepare(k);
    }
    if (prepared > 0) {
      const int rc = io_uring_submit(ring);
      if (rc >= 0) {
        prepared -= std::min<size_t>(prepared, static_cast<size_t>(rc));
        in_flight += static_cast<size_t>(rc);
      } else if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
        if (error.ok()) error = absl::DataLossError(base::StrCat(file_.path, ": io_uring: ", std::strerror(-rc)));
        broken = true;  // what is in flight is waited for below
      } else if (in_flight == 0) {
        std::this_thread::yield();  // the kernel is short of something for now: again
        continue;
      }
    }
    // One completion at least, then whatever else is ready.
    bool waited = false;
    while (in_flight > 0) {
      io_uring_cqe* cqe;
      // After a failed submission every read in flight is waited for: its buffer goes with us.
      const bool block = broken || !waited;
      const int w = block ? io_uring_wait_cqe(ring, &cqe) : io_uring_peek_cqe(ring, &cqe);
      if (w == -EINTR) continue;
      if (w != 0) break;  // none ready
      waited = true;
      const size_t k = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      --in_flight;
      Slot& s = slots[k];
      const Run& r = runs[s.run];
      if (res <= 0) {
        if (error.ok()) error = ReadError(r, res == 0 ? "the file ended" : std::strerror(-res));
      } else {
        s.got += static_cast<size_t>(res);
        if (s.got < r.need && error.ok() && !broken) {  // a short read: the rest
          prepare(k);
          continue;
        }
        if (error.ok()) deliver(r, s.buf.get());
      }
      idle.push_back(k);
    }
  }
  // Reads a failed submission left in the ring must never reach the kernel: nothing is in
  // flight now, so the ring can go.
  if (broken) ThisThreadsRing().Drop();
  return error;
}
#endif

RowCacheStats DiskRows::stats() const {
  RowCacheStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.bytes_read = bytes_read_.load();
  s.reads = reads_.load();
  s.ring_reads = ring_reads_.load();
  s.direct = direct();
  return s;
}

}  // namespace fanout::core
