// Batches made ahead of their consumer by a few threads, handed out in (epoch, step) order: the
// in-process loaders of node batches (loader.cc) and of link-prediction batches (link_sampler.h)
// share it. Worker w makes whichever batch comes next, at most `prefetch` ahead of the consumer;
// after the first failed batch no more are started, and Next() keeps returning that error.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace fanout::sampler {

template <typename Batch>
class Prefetcher {
 public:
  // make(worker, epoch, step) builds one batch on worker thread `worker` (each worker may keep
  // its own scratch state, indexed by `worker`).
  using Make = std::function<absl::StatusOr<Batch>(int worker, int64_t epoch, int64_t step)>;

  // Batches (first_epoch, first_step) .. (first_epoch + num_epochs - 1, steps_per_epoch - 1).
  Prefetcher(int workers, int64_t steps_per_epoch, int64_t first_epoch, int64_t num_epochs, int prefetch, Make make,
             int64_t first_step = 0)
      : make_(std::move(make)),
        steps_(steps_per_epoch),
        first_epoch_(first_epoch),
        total_(steps_per_epoch * num_epochs),
        prefetch_(prefetch),
        next_(std::min(first_step, total_)),
        consumed_(next_) {
    for (int w = 0; w < std::max(1, workers); ++w) workers_.emplace_back([this, w] { Work(w); });
  }
  ~Prefetcher() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    for (auto& t : workers_) t.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch in order; OUT_OF_RANGE after the last epoch.
  absl::StatusOr<Batch> Next() {
    absl::StatusOr<Batch> out;
    {
      absl::MutexLock lock(&mu_);
      if (!error_.ok()) return error_;  // after a failure nothing more is made: keep reporting it
      if (consumed_ >= total_) return absl::OutOfRangeError("no more batches: the last epoch is done");
      while (ready_.count(consumed_) == 0) cv_.Wait(&mu_);
      auto node = ready_.extract(consumed_);
      ++consumed_;
      if (!node.mapped().ok()) error_ = node.mapped().status();
      out = std::move(node.mapped());
    }
    cv_.SignalAll();
    return out;
  }

 private:
  void Work(int w) {
    while (true) {
      int64_t g = 0;
      {
        absl::MutexLock lock(&mu_);
        while (!stop_ && !failed_ && !(next_ < total_ && next_ < consumed_ + prefetch_)) cv_.Wait(&mu_);
        if (stop_ || failed_) return;
        g = next_++;
      }
      const int64_t epoch = first_epoch_ + g / steps_, step = g % steps_;
      absl::StatusOr<Batch> b = make_(w, epoch, step);
      if (!b.ok()) {
        b = absl::Status(b.status().code(),
                         absl::StrCat("sampling epoch ", epoch, " step ", step, ": ", b.status().message()));
      }
      {
        absl::MutexLock lock(&mu_);
        if (!b.ok()) failed_ = true;
        ready_.emplace(g, std::move(b));
      }
      cv_.SignalAll();
    }
  }

  const Make make_;
  const int64_t steps_, first_epoch_, total_;
  const int prefetch_;
  std::vector<std::thread> workers_;
  absl::Mutex mu_;
  absl::CondVar cv_;                           // signalled on every change below
  int64_t next_ ABSL_GUARDED_BY(mu_);      // next batch index to start
  int64_t consumed_ ABSL_GUARDED_BY(mu_);  // index of the next batch to hand out
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // the first failed batch, once handed out
  std::map<int64_t, absl::StatusOr<Batch>> ready_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fanout::sampler
