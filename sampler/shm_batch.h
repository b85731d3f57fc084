// Hand-over of a mini-batch between processes through one shared-memory file (a memfd): the
// sampler process lays the batch out in the file and gathers the input features straight into
// it; only the file descriptor crosses the socket (SCM_RIGHTS). The receiver maps the file and
// its feature matrix is used in place, never copied or serialised.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
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

  // Lays `mb`'s blocks, seeds and labels out in the file (created, or grown, to fit them and
  // rows x cols float features) and returns where the features go.
  absl::StatusOr<float*> Write(const MiniBatch& mb, int64_t rows, int64_t cols);
  // Records the feature gather time in the header (known only after the gather).
  void SetFetchSeconds(double seconds);
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  void* map_ = nullptr;
  size_t capacity_ = 0;
};

// Maps a batch file and reads it back: index arrays are copied out, the features stay in the
// mapping, owned by the result; when the last holder lets go, the mapping is removed and then
// `on_release` runs (a process loader tells the sampler the file is free again). Checks the
// layout against the file size. Does not close `fd`.
absl::StatusOr<MiniBatch> ReadShmBatch(int fd, std::function<void()> on_release = {});

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
bool SendTaken(int sock);
bool SendRelease(int sock, int64_t slot);
// Sampler side: the next message (kBatchTaken or a released slot), or -1 when the trainer has
// closed the socket.
int64_t ReadTrainerMessage(int sock);

}  // namespace fanout::sampler
