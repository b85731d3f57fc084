// The caching CPU allocator (trainer/cpu_allocator.h), installed for this whole test binary: a
// freed large block is handed out again for a request of its size class, small requests are
// not cached, and tensors keep working across the switch.
#include "trainer/cpu_allocator.h"

#include <ATen/ATen.h>

#include "gtest/gtest.h"

namespace fanout::trainer {
namespace {

TEST(CpuAllocatorTest, ReusesFreedLargeBlocksOfTheSameSizeClass) {
  const at::Tensor before = at::arange(1000, at::kFloat);  // made by LibTorch's own allocator
  InstallCachingCpuAllocator();
  InstallCachingCpuAllocator();  // a second call changes nothing
  void* first = nullptr;
  {
    at::Tensor a = at::empty({1 << 20}, at::kFloat);  // 4 MiB
    a.fill_(1.0f);
    first = a.data_ptr();
  }
  const CpuAllocatorStats s0 = CachingCpuAllocatorStats();
  EXPECT_GE(s0.cached_bytes, size_t{4} << 20);
  {
    // 1% smaller: the same size class (8 per doubling), so the same block.
    at::Tensor b = at::empty({(1 << 20) - 10000}, at::kFloat);
    EXPECT_EQ(b.data_ptr(), first);
    b.fill_(2.0f);
    EXPECT_EQ(b.sum().item<double>(), 2.0 * ((1 << 20) - 10000));
  }
  const CpuAllocatorStats s1 = CachingCpuAllocatorStats();
  EXPECT_EQ(s1.hits, s0.hits + 1);
  EXPECT_EQ(s1.misses, s0.misses);
  {
    at::Tensor small = at::empty({100}, at::kFloat);  // not cached: no counter moves
  }
  EXPECT_EQ(CachingCpuAllocatorStats().hits, s1.hits);
  EXPECT_EQ(CachingCpuAllocatorStats().misses, s1.misses);
  // A tensor from before the switch is still valid and freed by its own deleter.
  EXPECT_EQ(before.sum().item<double>(), 999.0 * 1000 / 2);
}

// Batches vary in size: a slightly smaller request takes a kept block up to two size classes
// larger instead of allocating another, a much smaller one does not; ReleaseCachedCpuBlocks
// hands every kept block back (evaluation's shapes after training's).
TEST(CpuAllocatorTest, ASmallerBatchReusesALargerBlockAndReleaseEmptiesTheCache) {
  InstallCachingCpuAllocator();
  ReleaseCachedCpuBlocks();
  constexpr int64_t kBig = 10 << 20;  // 40 MiB of float32
  void* big = nullptr;
  {
    at::Tensor a = at::empty({kBig}, at::kFloat);
    big = a.data_ptr();
  }
  const CpuAllocatorStats s0 = CachingCpuAllocatorStats();
  ASSERT_GE(s0.cached_bytes, size_t{40} << 20);
  {
    // 15 % smaller: another size class (12.5 % apart), within a quarter: the same block.
    at::Tensor b = at::empty({kBig * 85 / 100}, at::kFloat);
    EXPECT_EQ(b.data_ptr(), big);
    b.fill_(3.0f);
    EXPECT_EQ(b.sum().item<double>(), 3.0 * (kBig * 85 / 100));
    // Half the size: a new block, the big one being in use anyway.
    at::Tensor c = at::empty({kBig / 2}, at::kFloat);
    EXPECT_NE(c.data_ptr(), big);
  }
  {
    // Half the size again, the big block free: still not taken (it would waste half of it).
    at::Tensor d = at::empty({kBig / 2}, at::kFloat);
    EXPECT_NE(d.data_ptr(), big);
  }
  const CpuAllocatorStats s1 = CachingCpuAllocatorStats();
  EXPECT_EQ(s1.hits, s0.hits + 2);
  EXPECT_EQ(s1.misses, s0.misses + 1);
  EXPECT_GE(s1.cached_bytes, size_t{60} << 20);
  EXPECT_EQ(ReleaseCachedCpuBlocks(), s1.cached_bytes);
  EXPECT_EQ(CachingCpuAllocatorStats().cached_bytes, 0u);
  EXPECT_EQ(ReleaseCachedCpuBlocks(), 0u);
  {
    at::Tensor e = at::empty({kBig}, at::kFloat);  // nothing kept: a miss
    e.fill_(1.0f);
  }
  EXPECT_EQ(CachingCpuAllocatorStats().misses, s1.misses + 1);
}

}  // namespace
}  // namespace fanout::trainer
