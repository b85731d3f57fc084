// Shared by the CPU and GPU tests of the device feature cache.
#pragma once

#include <c10/core/Device.h>

#include "sampler/dist_graph.h"

namespace fanout::trainer::testing {

// Caches a third of `graph`'s rows of "feat" on `device` (in their stored dtype, and again as
// float16 values) and checks, with gtest assertions, that every batch of an epoch converted with
// the cache has exactly the features of the same batch gathered in full, and that the cache held
// some but not all of its inputs.
void ExpectCachedBatchesMatch(const sampler::DistGraph& graph, const c10::Device& device);

}  // namespace fanout::trainer::testing
