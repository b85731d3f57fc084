// Hand-over of a mini-batch between processes through one shared-memory file (a memfd): the
// sampler process lays the batch out in the file and gathers the input features straight into
// it; only the file descriptor crosses the socket (SCM_RIGHTS). The receiver maps the file and
// its feature matrix is used in place, never copied or serialised.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sampler/minibatch.h"

namespace fanout::sampler {

// One reusable batch file of a sampler process. The sampler keeps a few (one per batch that may
// be in flight) and rewrites one as soon as the trainer releases it, so the pages of the file are
// allocated once, not per batch. Not thread-safe.
class ShmSlot {
 public:
  ShmSlot() = default;
  ShmSlot(ShmSlot&& o) noexcept;
  ShmSlot& operator=(ShmSlot&&) = delete;
  ~ShmSlot();

  // Lays `mb`'s blocks, seeds and labels (and a link batch's `pairs`, when given) out in the file
  // (created, or grown, to fit them and rows x cols features of `dtype`) and returns where the
  // features go (64-byte aligned). `codec`: the features' (Rows::codec), for the trainer to decode.
  absl::StatusOr<char*> Write(const MiniBatch& mb, int64_t rows, int64_t cols, core::DType dtype,
                              const LinkPairs* pairs = nullptr, core::FeatureCodec codec = core::FeatureCodec::kNone);
  // Records the feature gather time in the header (known only after the gather).
  void SetFetchSeconds(double seconds);
  int fd() const { return fd_; }
  // The bytes of the batch last written (its layout; the file may be larger).
  size_t bytes() const { return bytes_; }

 private:
  int fd_ = -1;
  void* map_ = nullptr;
  size_t capacity_ = 0;
  size_t bytes_ = 0;
};

// How many batches a sampler process may have waiting for its trainer: `prefetch`, fewer when the
// last batch was so large that they would hold more than kBatchBytesAhead of shared memory, and
// always one. A training batch (83 MB on setup A's graph, 160 MB with every row on products)
// keeps the default of 2; a layer-wise evaluation's batch of 100,000 seeds with all their
// neighbours (450-500 MB there) waits alone: the trainer computes on it for seconds, and each
// one more ahead would cost the machine half a gigabyte.
inline constexpr size_t kBatchBytesAhead = size_t{512} << 20;
inline int64_t BatchesAhead(int64_t prefetch, size_t last_batch_bytes) {
  const int64_t by_bytes = static_cast<int64_t>(kBatchBytesAhead / std::max<size_t>(last_batch_bytes, 1));
  return std::max<int64_t>(1, std::min(prefetch, by_bytes));
}

// Mappings of batch files, kept for reuse. A sampler process rewrites the same few files batch
// after batch; mapping a file with every page populated and unmapping it again cost the trainer a
// walk over some 14,000-37,000 page-table entries per batch (about 6 % of the whole data-bound
// job's CPU), and 3 % of a 2-core machine's time in DGL's example on the Python data plane, whose
// private mappings were also made writable page by page. A mapping is keyed by the file's
// (device, inode, size): a file that grew is mapped anew, and the stale mapping ages out. At most
// `max_idle` unused mappings are kept (least recently used go first). Thread-safe; mappings still
// held when this object goes away stay valid until their last holder lets go.
//
// `writable`: the mappings may be written (the Python data plane hands a batch's arrays to user
// code as tensors, which it may change in place). The writes land in the file, and nothing is
// lost by that: the file is its sampler's to rewrite only once the batch is let go, its sampler
// only writes it (each batch's layout and arrays in full), and the reader parsed the header
// before handing anything out.
class BatchMappings {
 public:
  explicit BatchMappings(size_t max_idle = 8, bool writable = false);
  ~BatchMappings();
  BatchMappings(const BatchMappings&) = delete;
  BatchMappings& operator=(const BatchMappings&) = delete;

  // The first `size` bytes of `fd` mapped read-only, shared with nobody until the returned
  // pointer and its copies are gone; then the mapping is kept for the next batch of that file.
  absl::StatusOr<std::shared_ptr<const void>> Map(int fd, size_t size);

  // Mappings made (not reused) so far.
  int64_t maps_made() const;

 private:
  struct Entry {
    dev_t dev;
    ino_t ino;
    size_t size;
    void* addr;
  };
  struct State {
    absl::Mutex mu;
    std::list<Entry> idle ABSL_GUARDED_BY(mu);  // most recently used first
    size_t max_idle = 0;                         // set before the state is shared
    bool writable = false;                       // likewise
    int64_t made ABSL_GUARDED_BY(mu) = 0;
    bool closed ABSL_GUARDED_BY(mu) = false;  // the owner is gone: unmap on release
  };
  std::shared_ptr<State> state_;
};

// Maps a batch file and reads it back: the blocks' arrays and the features stay in the mapping,
// borrowed by the result (sampler/array.h; seeds, labels and link pairs, a few thousand entries,
// are copied out); when the last holder lets go, the mapping is removed (or handed
// back to `mappings`, when given) and then `on_release` runs (a process loader tells the sampler
// the file is free again). Checks the layout against the file size. Does not close `fd`. A link
// batch's pairs go to `pairs` when given. Without `mappings` the file is mapped read-only.
absl::StatusOr<MiniBatch> ReadShmBatch(int fd, std::function<void()> on_release = {},
                                       BatchMappings* mappings = nullptr, LinkPairs* pairs = nullptr);

// Messages on a sampler's socket. Sampler -> trainer: a batch (with its slot and fd) or an error.
// Trainer -> sampler: batches taken (back-pressure) and slots released (reuse).
struct SamplerMessage {
  int64_t kind = 0;       // kBatch or kError
  int64_t index = 0;      // global batch index: epoch * steps_per_epoch + step
  int64_t code = 0;       // absl::StatusCode for kError; the slot for kBatch
  int64_t text_len = 0;   // error text bytes following the header
  static constexpr int64_t kBatch = 1;
  static constexpr int64_t kError = 2;
};
absl::Status SendBatch(int sock, int64_t index, int64_t slot, int fd);
absl::Status SendError(int sock, int64_t index, const absl::Status& error);
// Receives one message; a batch's fd is stored in *fd (the caller closes it); an error message is
// returned as its status. At EOF *closed is set and UNAVAILABLE returned.
absl::Status ReceiveMessage(int sock, int64_t* index, int64_t* slot, int* fd, bool* closed);
// Trainer -> sampler, one int64 datagram each (thread-safe): a batch was taken (a prefetch
// credit: the sampler stays at most `prefetch` batches ahead), or slot `slot` may be rewritten
// (its batch was let go). Slots are reused when free; a consumer holding many batches makes the
// sampler open more, so holding batches never deadlocks.
inline constexpr int64_t kBatchTaken = -2;
// The batches not yet made carry feature rows, or none (LoaderOptions::fetch_features).
inline constexpr int64_t kFetchFeatures = -3;
inline constexpr int64_t kSkipFeatures = -4;
bool SendTaken(int sock);
bool SendRelease(int sock, int64_t slot);
bool SendFetchFeatures(int sock, bool on);  // kFetchFeatures or kSkipFeatures
// Sampler side: the next message (kBatchTaken, kFetchFeatures, kSkipFeatures or a released
// slot), or -1 when the trainer has closed the socket; with `wait` false, kNoMessage when none
// is waiting.
inline constexpr int64_t kNoMessage = -5;
int64_t ReadTrainerMessage(int sock, bool wait = true);

}  // namespace fanout::sampler
