// A CPU allocator for LibTorch that keeps large blocks for reuse instead of handing them back to
// the kernel.
//
// Every training step allocates the same large tensors again (a hidden layer's output, its
// gradient, the aggregated neighbours: 20-50 MB each at products scale). glibc serves blocks
// past 32 MiB with a fresh mmap, so each one is page-faulted and zeroed by the kernel as it is
// first written, and unmapped when freed: measured at 12,000 page faults and about 25 ms per
// 49 MB block, which made a matrix product into a fresh output 40 % slower than into a reused
// one (bench/model_bench). This allocator rounds large requests up to a size class (8 per
// doubling, so at most 12.5 % extra) and keeps freed blocks on a free list per class, up to a
// byte budget; small requests go to LibTorch's own allocator unchanged. Batches vary in size,
// so a request may take a kept block up to two classes (a quarter) larger: a stream of batches
// keeps about one block per tensor, not one per size class it passed through (evaluation at
// products scale kept 0.64 GB where 0.27 were in use).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fanout::trainer {

struct CpuAllocatorOptions {
  size_t min_cached_bytes = size_t{1} << 20;    // smaller requests are not cached
  size_t max_cached_bytes = size_t{4} << 30;    // free blocks kept at most (past it: freed)
};

struct CpuAllocatorStats {
  int64_t hits = 0;          // large requests served from the free lists
  int64_t misses = 0;        // large requests that allocated a new block
  size_t cached_bytes = 0;   // bytes on the free lists now
};

// Makes the caching allocator LibTorch's CPU allocator for the rest of the process. LibTorch's
// allocator is process-wide by nature: call this once, from main, before the first tensor;
// later calls change nothing. Tensors allocated before keep their own deleter. Thread-safe.
void InstallCachingCpuAllocator(const CpuAllocatorOptions& options = {});

// Counters of the installed allocator (all zero when it is not installed).
CpuAllocatorStats CachingCpuAllocatorStats();

// Hands every kept free block back to the system (as torch.cuda.empty_cache does for CUDA's);
// blocks in use are untouched. For a change of shapes: training's blocks are no use to
// evaluation's larger batches, and kept beside them they would set the process's peak. Returns
// the bytes released (0 when the allocator is not installed).
size_t ReleaseCachedCpuBlocks();

}  // namespace fanout::trainer
