#include "partition/synth_random.h"

#include "core/random.h"

namespace fanout::partition::synth {

using core::SplitMix64;

std::mt19937_64 MakeRng(uint64_t seed, Stream stream, uint64_t chunk) {
  uint64_t s = SplitMix64(seed);
  s = SplitMix64(s ^ static_cast<uint64_t>(stream));
  s = SplitMix64(s ^ chunk);
  return std::mt19937_64(s);
}

std::vector<AliasBucket> BuildAlias(const double* w, size_t n) {
  std::vector<AliasBucket> t(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += w[i];
  std::vector<double> p(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    p[i] = w[i] * static_cast<double>(n) / total;
    (p[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back();
    small.pop_back();
    const uint32_t l = large.back();
    const double keep = std::ldexp(p[s], 32);
    t[s].threshold = keep >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(keep);
    t[s].alias = l;
    p[l] -= 1.0 - p[s];
    if (p[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // Leftovers are full buckets (up to rounding): they always yield themselves.
  for (uint32_t i : small) t[i] = {0xffffffffu, i};
  for (uint32_t i : large) t[i] = {0xffffffffu, i};
  return t;
}

}  // namespace fanout::partition::synth
