#include "base/malloc_tuning.h"

#include <malloc.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::base {
namespace {

// Whether `p` lies in a mapping of this process of at least `bytes` bytes, per /proc/self/maps.
bool InMappingOfAtLeast(const void* p, size_t bytes) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    in >> std::hex >> begin >> dash >> end;
    if (begin <= at && at < end) return end - begin >= bytes;
  }
  return false;
}

// A large handed-out buffer is a mapping of its own, gone when let go, whatever the heap's
// settings; a small one comes from the heap.
TEST(MallocTuningTest, LargeHandedOutBuffersAreTheirOwnMappingsAndGoBackWhenLetGo) {
  KeepLargeAllocations(kTrainingProcessLargestReused);
  const size_t big = kOwnMappingBytes + 4096;
  std::shared_ptr<char[]> a = AllocateHandedOut(big);
  ASSERT_NE(a, nullptr);
  std::memset(a.get(), 7, big);  // every byte writable
  EXPECT_EQ(a[big - 1], 7);
  EXPECT_TRUE(InMappingOfAtLeast(a.get(), big));
  const void* where = a.get();
  a.reset();
  EXPECT_FALSE(InMappingOfAtLeast(where, big));

  std::shared_ptr<char[]> small = AllocateHandedOut(100);
  ASSERT_NE(small, nullptr);
  std::memset(small.get(), 1, 100);
  EXPECT_NE(AllocateHandedOut(0), nullptr);
}

// TrimHeap trims only above its bound of free heap, and a trim leaves the heap usable.
TEST(MallocTuningTest, TrimHeapTrimsOnlyAboveItsBound) {
  KeepLargeAllocations(kTrainingProcessLargestReused);
  std::vector<char*> blocks;
  for (int i = 0; i < 8; ++i) {
    blocks.push_back(static_cast<char*>(malloc(size_t{8} << 20)));
    std::memset(blocks.back(), 1, size_t{8} << 20);
  }
  for (size_t i = 0; i < blocks.size(); i += 2) free(blocks[i]);  // 32 MB free inside the heap
  if (mallinfo2().fordblks < (size_t{32} << 20)) {
    for (size_t i = 1; i < blocks.size(); i += 2) free(blocks[i]);
    GTEST_SKIP() << "malloc is not glibc's here (a sanitizer's allocator): no heap to trim";
  }
  EXPECT_FALSE(TrimHeap(size_t{1} << 40));
  EXPECT_TRUE(TrimHeap(size_t{1} << 20));
  EXPECT_TRUE(TrimHeap());
  for (size_t i = 1; i < blocks.size(); i += 2) {
    EXPECT_EQ(blocks[i][0], 1);
    free(blocks[i]);
  }
}

}  // namespace
}  // namespace fanout::base
