// Node rows served from disk (issue 40): a graph server whose partition's features do not fit
// the memory it may hold reads rows with pread from the .npy files, behind one bounded row cache
// for all of its fields, instead of mapping them (a random row through a mapping costs a 4 KiB
// page fault and the kernel's read-around, and the page cache keeps whole pages of mostly cold
// neighbours).
//
// The cache's policy is S3-FIFO (Yang et al., SOSP 2023) by default: new rows enter a small FIFO
// (10% of the bytes); a row read again while there moves to the main FIFO, others leave and are
// remembered in a ghost list, whose rows go straight to the main FIFO when they come back; the
// main FIFO gives a row that was read since it was last examined another round. One pass over
// many rows read once (an evaluation sweep, a cold epoch) so cannot flush the rows every batch
// reads. LRU is kept for comparison (docs/benchmarks.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"
#include "core/npy.h"

struct io_uring;

namespace fanout::core {

enum class CachePolicy { kS3Fifo, kLru };
// "s3fifo" / "lru", and back (INVALID_ARGUMENT naming the value otherwise).
const char* CachePolicyName(CachePolicy p);
absl::StatusOr<CachePolicy> CachePolicyFromName(const std::string& name);

struct RowCacheStats {
  int64_t hits = 0, misses = 0;
  int64_t bytes_read = 0;  // from disk (whole pages where reads bypass the page cache)
  int64_t reads = 0;       // read requests
  int64_t ring_reads = 0;  // of them through io_uring (the others: threads calling pread)
  bool direct = false;     // reads bypassed the page cache (O_DIRECT)
  int64_t cached_bytes = 0, cached_rows = 0;
  double hit_rate() const { return hits + misses == 0 ? 0.0 : static_cast<double>(hits) / (hits + misses); }
  // For the processes' reports: "1.234 GB read from disk in 5678 reads (io_uring, O_DIRECT)",
  // or "nothing read from disk".
  std::string DescribeReads() const;
};

// A byte-bounded cache of rows keyed by 64-bit keys, in shards of their own lock. Each row is
// charged its bytes plus kEntryOverhead toward the capacity. Thread-safe.
class RowCache {
 public:
  static constexpr int64_t kEntryOverhead = 96;  // the entry, its list node and hash slot

  RowCache(int64_t capacity_bytes, CachePolicy policy, int num_shards = 16);
  ~RowCache();

  // Copies the cached row of `key` (`bytes` long) to `out`: true on a hit.
  bool Lookup(uint64_t key, char* out, size_t bytes);
  // Caches `row` under `key` (a row larger than a shard's capacity is not cached).
  void Insert(uint64_t key, const char* row, size_t bytes);

  int64_t capacity_bytes() const { return capacity_; }
  CachePolicy policy() const { return policy_; }
  // Bytes charged (rows and overhead) and rows held now.
  int64_t charged_bytes() const;
  int64_t rows() const;

 private:
  struct Shard;
  Shard& ShardOf(uint64_t key);

  int64_t capacity_;
  CachePolicy policy_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

// One .npy field's rows read from its file through a shared RowCache. Thread-safe.
//
// Reads bypass the page cache (O_DIRECT) where the file system allows it, else go through it
// with read-ahead off; they go out many at a time, through an io_uring per reading thread where
// the kernel allows it (Linux 5.6 or later, not refused by a seccomp profile), else through a
// process-wide pool of threads calling pread.
class DiskRows {
 public:
  static constexpr size_t kReadsInFlight = 16;  // pread: the caller and 15 readers
  static constexpr unsigned kRingDepth = 64;    // io_uring: reads in flight per reading thread

  // How reads are made (the defaults are the fastest the system allows; tests take each path).
  struct Options {
    bool direct = true;    // O_DIRECT where the file system allows it
    bool io_uring = true;  // io_uring where the kernel allows it
  };
  // `file` must be opened (OpenNpyFile) and checked by the caller; `field_id` keeps this field's
  // rows apart from other fields' in the shared cache.
  DiskRows(NpyFile file, std::shared_ptr<RowCache> cache, uint32_t field_id);
  DiskRows(NpyFile file, std::shared_ptr<RowCache> cache, uint32_t field_id, Options options);

  size_t row_bytes() const { return row_bytes_; }
  int64_t rows() const { return rows_; }
  const std::string& path() const { return file_.path; }
  // Copies rows `rows[i]` (each in [0, rows())) to out + dst[i] * row_bytes (dst empty: i),
  // reading the misses from disk in runs of consecutive rows, many runs at a time. Errors name
  // the file and the rows.
  absl::Status Read(std::span<const int64_t> rows, std::span<const int64_t> dst, char* out);
  RowCacheStats stats() const;
  // Whether reads bypass the page cache (O_DIRECT), and whether this thread's go through io_uring.
  bool direct() const { return direct_fd_.get() >= 0; }
  static bool IoUringAvailable();

 private:
  // One read: misses [b, e) (indexes into the sorted misses), rows first.., covering file bytes
  // [offset, offset + span), the rows starting `lead` bytes in and ending at `need`.
  struct Run {
    size_t b = 0, e = 0;
    int64_t first = 0;
    size_t offset = 0, span = 0, lead = 0, need = 0;
  };
  using Deliver = std::function<void(const Run&, const char*)>;
  absl::Status ReadWithThreads(const std::vector<Run>& runs, const Deliver& deliver);
  absl::Status ReadWithRing(io_uring* ring, const std::vector<Run>& runs, const Deliver& deliver);
  absl::Status ReadError(const Run& r, const char* why) const;
  int read_fd() const { return direct() ? direct_fd_.get() : file_.fd.get(); }

  NpyFile file_;
  bool use_io_uring_;
  base::UniqueFd direct_fd_;  // the same file opened O_DIRECT, or -1
  std::shared_ptr<RowCache> cache_;
  uint64_t key_base_;
  size_t row_bytes_;
  int64_t rows_;
  std::atomic<int64_t> hits_{0}, misses_{0}, bytes_read_{0}, reads_{0}, ring_reads_{0};
};

}  // namespace fanout::core
