// A CRC-32 (zlib's) of what a mini-batch hands its consumer, for checking that two loaders yield
// the same batches: fanout-train prints it per step with --print-batch-checksums, and the
// Python data plane's tests compute the same over the tensors a script receives
// (python/examples/sage_train.py --mode checksums, run by tests/python/distributed_test.py).
// Chained over, in order: the seeds; per block (input layer first) its source nodes, num_dst,
// indptr, indices, edge IDs and its fields (sampler/batch_fields.h, in their order: edge types,
// weights, features); the input fields (node types); the fetched feature rows as stored; the
// labels; the seed fields. Integers as little-endian int64, fields as stored.
#pragma once

#include <cstdint>

#include "sampler/minibatch.h"

namespace fanout::sampler {

uint32_t BatchChecksum(const MiniBatch& mb);

}  // namespace fanout::sampler
