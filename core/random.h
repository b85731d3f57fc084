// Small, fully specified random-number helpers, so that results do not depend on the standard
// library's (implementation-defined) distributions.
#pragma once

#include <cstdint>

namespace fanout::core {

// SplitMix64 (Steele et al.): a strong 64-bit mix of x + the golden-ratio increment. Used to
// derive independent seeds and as a fast generator (feed it a counter).
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace fanout::core
