// A fixed pool of worker threads that runs submitted closures in FIFO order. The graph server
// runs request handlers here so that no gRPC thread blocks on gathering or sampling; DistGraph
// starts the remote partitions' parts of a call here, so that their work overlaps the local part.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fanout::core {

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
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace fanout::core
