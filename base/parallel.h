// A minimal parallel loop for the offline tools (the servers will own proper thread pools).
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace fanout::base {

// Runs fn(i) for every i in [0, n) on up to `num_threads` threads (the caller's included),
// handing out indices in order from a shared counter. After an error no new index starts; the
// first error is returned. num_threads <= 0 means the machine's hardware concurrency.
absl::Status ParallelFor(int num_threads, int64_t n, const std::function<absl::Status(int64_t)>& fn);

// Hardware concurrency, at least 1.
int DefaultThreads();

}  // namespace fanout::base
