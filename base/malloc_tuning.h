// Keeps glibc's allocator from handing multi-megabyte buffers back to the kernel after each use.
//
// A sampler, server or trainer allocates and frees buffers of 1-32 MB per mini-batch (sampled
// edges, gRPC messages, gathered rows). By default glibc serves each from a fresh mmap and unmaps
// it on free, so every batch pays a page fault and a zeroed page per 4 KiB: measured as a quarter
// of the sampler's CPU time (docs/benchmarks.md). Raising the mmap threshold to its maximum
// (32 MiB) and the trim threshold to 1 GiB lets freed buffers be reused instead.
#pragma once

namespace fanout::base {

// Call once at the start of main(), before threads start. Process-wide by nature (mallopt).
void KeepLargeAllocations();

}  // namespace fanout::base
