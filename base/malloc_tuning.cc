#include "base/malloc_tuning.h"

#include <malloc.h>

#include <algorithm>
#include <climits>

namespace fanout::base {

void KeepLargeAllocations(size_t largest_reused) {
  const int mmap_threshold = static_cast<int>(std::min<size_t>(largest_reused, INT_MAX));
  const int trim_threshold = std::max(mmap_threshold, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, mmap_threshold);
  mallopt(M_TRIM_THRESHOLD, trim_threshold);
}

}  // namespace fanout::base
