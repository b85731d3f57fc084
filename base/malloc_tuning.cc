#include "base/malloc_tuning.h"

#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <climits>
#include <new>

namespace fanout::base {

void KeepLargeAllocations(size_t largest_reused) {
  const int mmap_threshold = static_cast<int>(std::min<size_t>(largest_reused, INT_MAX));
  const int trim_threshold = std::max(mmap_threshold, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, mmap_threshold);
  mallopt(M_TRIM_THRESHOLD, trim_threshold);
}

bool TrimHeap(size_t keep_free) {
  if (keep_free > 0 && mallinfo2().fordblks <= keep_free) return false;
  malloc_trim(0);
  return true;
}

std::shared_ptr<char[]> AllocateHandedOut(size_t bytes) {
  if (bytes < kOwnMappingBytes) return std::shared_ptr<char[]>(new char[std::max<size_t>(1, bytes)]);
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  return std::shared_ptr<char[]>(static_cast<char*>(m), [bytes](char* p) { munmap(p, bytes); });
}

}  // namespace fanout::base
