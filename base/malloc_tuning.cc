#include "base/malloc_tuning.h"

#include <malloc.h>

namespace fanout::base {

void KeepLargeAllocations() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's upper limit on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace fanout::base
