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

}  // namespace
}  // namespace fanout::trainer
