// A fixed pool of worker threads that runs submitted closures in FIFO order. The graph server
// runs request handlers here so that no gRPC thread blocks on gathering or sampling; DistGraph
// starts the remote partitions' parts of a call here, so that their work overlaps the local part.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fanout::base {

// Thread-safe. The destructor finishes the queued work, then joins.
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  void Submit(std::function<void()> fn);
  // Queues `fn` unless `max_queued` closures already wait (load shedding); false when refused.
  bool TrySubmit(std::function<void()> fn, size_t max_queued);
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();
  absl::Mutex mu_;
  absl::CondVar cv_;  // signalled when queue_ grows or stopping_ is set
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace fanout::base
