// The synthetic generator's random numbers (generate.cc): one independent stream per part of the
// output and per chunk, uniform integers and reals, normals, shuffles and alias tables, all from
// libstdc++'s fully specified mt19937_64 and our own distributions, so that a seed gives the same
// dataset on every machine and with any thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace fanout::partition::synth {

enum class Stream : uint64_t {
  kWeights = 1,
  kCommunities,
  kCentroids,
  kFeatures,
  kLabels,
  kSplit,
  kEdges,
  kEdgeWeights,
  kRelationEdges,  // --preset mag's relations other than cites, one stream per (relation, chunk)
};

// An independent generator for (seed, stream, chunk).
std::mt19937_64 MakeRng(uint64_t seed, Stream stream, uint64_t chunk = 0);

// Uniform in [0, 1).
inline double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Uniform in [0, n), n >= 1, unbiased (Lemire's multiply-and-reject).
inline uint64_t UniformInt(std::mt19937_64& rng, uint64_t n) {
  unsigned __int128 m = static_cast<unsigned __int128>(rng()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(rng()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

// Standard normal by Box-Muller, keeping the second value of each pair.
class NormalSampler {
 public:
  double operator()(std::mt19937_64& rng) {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - Uniform01(rng);  // (0, 1]: log is finite
    const double u2 = Uniform01(rng);
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0 * M_PI * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

 private:
  bool has_spare_ = false;
  double spare_ = 0;
};

template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[UniformInt(rng, i)]);
  }
}

// Alias tables (Vose). One 64-bit draw per sample: the high half of r * n picks the bucket and
// the low half, the fractional part, flips the bucket's coin.

struct AliasBucket {
  uint32_t threshold;  // keep the bucket's own item when coin < threshold
  uint32_t alias;
};

// Buckets for items 0..n-1 with probability proportional to w[i] (all > 0).
std::vector<AliasBucket> BuildAlias(const double* w, size_t n);

inline uint32_t SampleAlias(const AliasBucket* t, uint64_t n, uint64_t r) {
  const unsigned __int128 m = static_cast<unsigned __int128>(r) * n;
  const uint32_t i = static_cast<uint32_t>(m >> 64);
  const uint32_t coin = static_cast<uint32_t>(static_cast<uint64_t>(m) >> 32);
  return coin < t[i].threshold ? i : t[i].alias;
}

}  // namespace fanout::partition::synth
