#include "trainer/cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <bit>
#include <map>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

// n rounded up to one of 8 classes per power of two.
size_t SizeClass(size_t n) {
  const int top = std::bit_width(n) - 1;  // 2^top <= n
  if (top < 3) return n;
  const size_t step = size_t{1} << (top - 3);
  return (n + step - 1) / step * step;
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(const CpuAllocatorOptions& options) : options_(options) {}

#if FANOUT_LIBTORCH_2
  c10::DataPtr allocate(size_t n) override { return Allocate(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return Allocate(n); }
#endif

  c10::DeleterFnPtr raw_deleter() const override { return &Release; }

  CpuAllocatorStats stats() const {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

  size_t ReleaseCached() {
    std::vector<void*> blocks;
    size_t released = 0;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [size, free] : free_) {
        for (void* p : free) {
          blocks.push_back(p);
          sizes_.erase(p);
          released += size;
        }
      }
      free_.clear();
      stats_.cached_bytes = 0;
    }
    for (void* p : blocks) c10::free_cpu(p);
    return released;
  }

  static CachingCpuAllocator* installed;

 private:
  c10::DataPtr Allocate(size_t n) const {
    if (n < options_.min_cached_bytes) {
      void* p = c10::alloc_cpu(n);
      return {p, p, &c10::free_cpu, c10::Device(c10::kCPU)};
    }
    const size_t size = SizeClass(n);
    void* p = nullptr;
    {
      absl::MutexLock lock(&mu_);
      // A kept block of this class, else of one of the next two (at most a quarter larger): the
      // same tensor of a batch a little smaller than the last.
      for (auto it = free_.lower_bound(size); it != free_.end() && it->first <= size + size / 4; ++it) {
        if (it->second.empty()) continue;
        p = it->second.back();
        it->second.pop_back();
        stats_.cached_bytes -= it->first;
        break;
      }
      if (p != nullptr) {
        ++stats_.hits;
      } else {
        ++stats_.misses;
      }
    }
    if (p == nullptr) {
      p = c10::alloc_cpu(size);
      absl::MutexLock lock(&mu_);
      sizes_[p] = size;
    }
    return {p, p, &Release, c10::Device(c10::kCPU)};
  }

  // The deleter of every block this allocator made (and of raw allocations of any size).
  static void Release(void* p) {
    if (p != nullptr) installed->Free(p);
  }

  void Free(void* p) const {
    {
      absl::MutexLock lock(&mu_);
      auto it = sizes_.find(p);
      if (it != sizes_.end()) {
        if (stats_.cached_bytes + it->second <= options_.max_cached_bytes) {
          free_[it->second].push_back(p);
          stats_.cached_bytes += it->second;
          return;
        }
        sizes_.erase(it);
      }
    }
    c10::free_cpu(p);
  }

  const CpuAllocatorOptions options_;
  mutable absl::Mutex mu_;
  // Size of every live or cached block this allocator made, by address.
  mutable std::unordered_map<void*, size_t> sizes_ ABSL_GUARDED_BY(mu_);
  // Kept blocks by size class, ordered: a request may take one of the next classes up.
  mutable std::map<size_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
  mutable CpuAllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

CachingCpuAllocator* CachingCpuAllocator::installed = nullptr;

}  // namespace

void InstallCachingCpuAllocator(const CpuAllocatorOptions& options) {
  static std::once_flag once;
  std::call_once(once, [&] {
    // Never deleted: tensors anywhere in the process may still return blocks to it at exit.
    CachingCpuAllocator::installed = new CachingCpuAllocator(options);
    c10::SetCPUAllocator(CachingCpuAllocator::installed, /*priority=*/10);
  });
}

size_t ReleaseCachedCpuBlocks() {
  return CachingCpuAllocator::installed == nullptr ? 0 : CachingCpuAllocator::installed->ReleaseCached();
}

CpuAllocatorStats CachingCpuAllocatorStats() {
  return CachingCpuAllocator::installed == nullptr ? CpuAllocatorStats()
                                                   : CachingCpuAllocator::installed->stats();
}

}  // namespace fanout::trainer
