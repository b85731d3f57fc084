#include "base/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fanout::base {

int DefaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

absl::Status ParallelFor(int num_threads, int64_t n, const std::function<absl::Status(int64_t)>& fn) {
  if (num_threads <= 0) num_threads = DefaultThreads();
  const int workers = static_cast<int>(std::min<int64_t>(num_threads, n));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  absl::Mutex mu;
  absl::Status first;  // guarded by mu (clang checks members, not locals)
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      int64_t i = next.fetch_add(1);
      if (i >= n) return;
      absl::Status s = fn(i);
      if (!s.ok()) {
        absl::MutexLock lock(&mu);
        if (first.ok()) first = s;
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  absl::MutexLock lock(&mu);
  return first;
}

}  // namespace fanout::base
