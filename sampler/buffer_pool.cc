#include "sampler/buffer_pool.h"

#include <algorithm>

namespace fanout::sampler {

std::shared_ptr<char[]> BufferPool::Get(size_t bytes) {
  const size_t elems = std::max<size_t>(1, (bytes + sizeof(double) - 1) / sizeof(double));
  Buffer b;
  {
    absl::MutexLock lock(&state_->mu);
    auto& free = state_->free;
    // The smallest kept buffer that is large enough, else the largest (replaced below).
    auto better = [elems](const Buffer& a, const Buffer& c) {
      const bool a_fits = a.size >= elems, c_fits = c.size >= elems;
      if (a_fits != c_fits) return a_fits;
      return a_fits ? a.size < c.size : a.size > c.size;
    };
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (best == free.end() || better(*it, *best)) best = it;
    }
    if (best != free.end()) {
      b = std::move(*best);
      free.erase(best);
    }
  }
  if (b.size < elems) {
    b.data.reset();  // first, so that the old and the new buffer are never held together
    b.size = elems + elems / 8;
    b.data = std::make_unique_for_overwrite<double[]>(b.size);
  }
  auto* holder = new Buffer(std::move(b));
  std::weak_ptr<State> weak = state_;
  return std::shared_ptr<char[]>(reinterpret_cast<char*>(holder->data.get()), [holder, weak](char*) {
    std::unique_ptr<Buffer> own(holder);
    if (auto state = weak.lock()) {
      absl::MutexLock lock(&state->mu);
      if (state->free.size() < state->max_kept) state->free.push_back(std::move(*own));
    }
  });
}

}  // namespace fanout::sampler
