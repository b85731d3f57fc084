// Feature buffers reused batch after batch, by the sampler (minibatch_sampler.h) and by the
// consumer that completes a batch with its machine's own rows (machine_rows.h).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fanout::sampler {

// Reuses feature buffers batch after batch: a fresh allocation per batch (about 150 MB at
// products scale, past glibc's mmap threshold) costs a page fault per 4 KiB (measured: a third
// of the gather time). A buffer returns to the pool when the
// last holder of its batch lets go. Thread-safe.
//
// Memory: a kept buffer too small for a request is freed before a larger one is allocated
// (never grown by copying, which held both at once), with an eighth more room than asked so that
// batches of slightly varying size reuse it; buffers are not zeroed (the gather writes every
// byte). At most max_kept idle buffers stay.
class BufferPool {
 public:
  explicit BufferPool(size_t max_kept = 8) : state_(std::make_shared<State>()) { state_->max_kept = max_kept; }
  // A buffer of at least `bytes` bytes (contents undefined), aligned for any element type.
  std::shared_ptr<char[]> Get(size_t bytes);

 private:
  struct Buffer {
    std::unique_ptr<double[]> data;  // double: 8-byte alignment for rows of any dtype
    size_t size = 0;                 // in doubles
  };
  struct State {
    absl::Mutex mu;
    std::vector<Buffer> free ABSL_GUARDED_BY(mu);
    size_t max_kept = 8;  // set before the state is shared
  };
  std::shared_ptr<State> state_;
};

}  // namespace fanout::sampler
