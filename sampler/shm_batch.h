// Hand-over of a mini-batch between processes through one shared-memory file (a memfd): the
// sampler process lays the batch out in the file and gathers the input features straight into
// it; only the file descriptor crosses the socket (SCM_RIGHTS). The receiver maps the file and
// its feature matrix is used in place, never copied or serialised.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sampler/minibatch.h"

namespace fanout::sampler {

// A batch being written: the file, its mapping and where the features go.
class ShmBatchWriter {
 public:
  // Creates a memfd sized for `mb`'s blocks, seeds and labels plus rows x cols float features,
  // and writes everything except the features.
  static absl::StatusOr<ShmBatchWriter> Create(const MiniBatch& mb, int64_t rows, int64_t cols);
  ShmBatchWriter(ShmBatchWriter&& o) noexcept;
  ShmBatchWriter& operator=(ShmBatchWriter&&) = delete;
  ~ShmBatchWriter();

  float* features() const { return features_; }
  // Records the feature gather time in the header (known only after the gather).
  void SetFetchSeconds(double seconds);
  int fd() const { return fd_; }

 private:
  ShmBatchWriter() = default;
  int fd_ = -1;
  void* map_ = nullptr;
  size_t size_ = 0;
  float* features_ = nullptr;
};

// Maps a batch file and reads it back: index arrays are copied out, the features stay in the
// mapping (owned by the result). Checks the layout against the file size. Does not close `fd`.
absl::StatusOr<MiniBatch> ReadShmBatch(int fd);

// Messages on a sampler's socket. Sampler -> trainer: a batch (with its fd) or an error.
// Trainer -> sampler: one byte per batch taken (a prefetch credit).
struct SamplerMessage {
  int64_t kind = 0;       // kBatch or kError
  int64_t index = 0;      // global batch index: epoch * steps_per_epoch + step
  int64_t code = 0;       // absl::StatusCode for kError
  int64_t text_len = 0;   // error text bytes following the header
  static constexpr int64_t kBatch = 1;
  static constexpr int64_t kError = 2;
};
absl::Status SendBatch(int sock, int64_t index, int fd);
absl::Status SendError(int sock, int64_t index, const absl::Status& error);
// Receives one message; a batch's fd is stored in *fd (the caller closes it); an error message is
// returned as its status. At EOF *closed is set and UNAVAILABLE returned.
absl::Status ReceiveMessage(int sock, int64_t* index, int* fd, bool* closed);

}  // namespace fanout::sampler
