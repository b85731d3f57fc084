// When a sampler process lowers its priority (LoaderOptions::sampler_nice): it starts at the
// trainer's and lowers itself once its batches are ahead of the step, i.e. once, over its last
// kWindow batches, it waited for the trainer to take one (all `prefetch` held) at least half as
// long as it spent making them. Each batch's wait counts up to that batch's own making time, so
// a pause of the trainer's (its evaluation, a checkpoint) is one batch's worth, not the window's.
// From then on the step is what the job waits for, and a sampler that wakes inside it only
// slows it; a sampler the trainer waits for (a data-bound job: it hardly waits at all) keeps the
// trainer's priority. Once and for good: an unprivileged process cannot raise its priority again.
// fanout-sampler calls nice(2) when AfterBatch says so.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fanout::sampler {

class SamplerPriority {
 public:
  static constexpr int kWindow = 8;

  // `nice` <= 0: never lower.
  explicit SamplerPriority(int nice) : nice_(nice) {}

  // After each batch: seconds waited for room before it, and seconds spent making it. True
  // exactly once, when the process should lower its priority by nice().
  bool AfterBatch(double waited, double made) {
    if (lowered_ || nice_ <= 0) return false;
    window_[count_++ % kWindow] = {std::min(waited, made), made};
    if (count_ < kWindow) return false;
    double wait_sum = 0, make_sum = 0;
    for (const Batch& b : window_) {
      wait_sum += b.waited;
      make_sum += b.made;
    }
    if (wait_sum <= 0 || wait_sum < 0.5 * make_sum) return false;
    lowered_ = true;
    return true;
  }
  int nice() const { return nice_; }

 private:
  struct Batch {
    double waited = 0, made = 0;
  };
  const int nice_;
  Batch window_[kWindow];
  int64_t count_ = 0;
  bool lowered_ = false;
};

}  // namespace fanout::sampler
