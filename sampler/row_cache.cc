#include "sampler/row_cache.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace fanout::sampler {

RowCache::RowCache(std::string field, size_t row_bytes, std::vector<int64_t> ids)
    : field_(std::move(field)), row_bytes_(row_bytes) {
  index_.Reset(ids.size());
  for (int64_t id : ids) index_.Insert(id);
  rows_.assign(index_.size() * row_bytes_, 0);
}

std::vector<int64_t> ChooseCachedHalo(const std::vector<int64_t>& halo,
                                      const std::vector<int64_t>& edge_counts, size_t max_rows) {
  if (halo.size() <= max_rows) return halo;
  std::vector<size_t> order(halo.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return edge_counts[a] != edge_counts[b] ? edge_counts[a] > edge_counts[b] : halo[a] < halo[b];
  });
  std::vector<int64_t> chosen;
  chosen.reserve(max_rows);
  for (size_t i = 0; i < max_rows; ++i) chosen.push_back(halo[order[i]]);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace fanout::sampler
