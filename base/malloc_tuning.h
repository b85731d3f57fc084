// Keeps glibc's allocator from handing multi-megabyte buffers back to the kernel after each use.
//
// A sampler, server or trainer allocates and frees buffers of 1-32 MB per mini-batch (sampled
// edges, gRPC messages, gathered rows). By default glibc serves each from a fresh mmap and unmaps
// it on free, so every batch pays a page fault and a zeroed page per 4 KiB: measured as a quarter
// of the sampler's CPU time (docs/benchmarks.md). Raising the mmap threshold and the trim
// threshold lets freed buffers be reused instead.
#pragma once

#include <cstddef>
#include <memory>

namespace fanout::base {

// Buffers of up to `largest_reused` bytes (capped at 2 GiB - 1, mallopt's int) come from the
// heap and are reused after free; the heap is trimmed only above 1 GiB (or `largest_reused`) of
// free memory at its top. Call once at the start of main(), before threads start.
// Process-wide by nature (mallopt).
void KeepLargeAllocations(size_t largest_reused = size_t{32} << 20);

// For a Python training process (fanout.distributed): PyTorch's CPU tensors come straight from
// malloc, and a GNN step allocates activations and gradients of 50-500 MB again each step (the
// input layer's rows times its width). Without this each is a fresh mmap, faulted and zeroed:
// measured as about 40 % of dgl.nn.SAGEConv's step time (docs/benchmarks.md, setup P).
// fanout-train has its own caching allocator for tensors (trainer/cpu_allocator.h) instead.
inline constexpr size_t kTrainingProcessLargestReused = size_t{1} << 30;

// Returns the heap's free pages to the kernel (malloc_trim(0): the free chunks' interiors too,
// not only the top). For a process that keeps large allocations, between phases whose buffers
// differ (a training epoch's steps and an evaluation's batches), so that one phase's kept
// buffers do not stay resident under the next one's; the next reuse of them faults again.
// Only when more than `keep_free` bytes of it are free (mallinfo2); returns whether it trimmed.
bool TrimHeap(size_t keep_free = 0);

// A buffer handed to a holder that keeps it for as long as it likes (a pull's rows, returned to
// Python as an array). From the heap, under KeepLargeAllocations, a large one leaves a hole when
// freed that the next, slightly larger one does not fit, and the heap grows by each one:
// layer-wise inference's pulls of 100,000 seeds' inputs (about 1 GB each) took a Python
// trainer from 2 to 3.7 GB. From kOwnMappingBytes up it is a mapping of its own, returned to the
// kernel when the last holder lets go. Never null (1 byte for 0); the contents are
// uninitialized.
inline constexpr size_t kOwnMappingBytes = size_t{64} << 20;
std::shared_ptr<char[]> AllocateHandedOut(size_t bytes);

}  // namespace fanout::base
