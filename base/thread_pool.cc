#include "base/thread_pool.h"

#include <algorithm>

namespace fanout::base {

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 0; i < std::max(1, num_threads); ++i) threads_.emplace_back([this] { Loop(); });
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
  }
  cv_.Signal();
}

bool ThreadPool::TrySubmit(std::function<void()> fn, size_t max_queued) {
  {
    absl::MutexLock lock(&mu_);
    if (queue_.size() >= max_queued) return false;
    queue_.push_back(std::move(fn));
  }
  cv_.Signal();
  return true;
}

void ThreadPool::Loop() {
  while (true) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace fanout::base
