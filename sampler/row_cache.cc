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
                                      const std::vector<int64_t>& in_edge_sources,
                                      size_t max_rows) {
  if (halo.size() <= max_rows) return halo;
  IdMap slot;
  slot.Reset(halo.size());
  for (int64_t id : halo) slot.Insert(id);
  std::vector<int64_t> count(slot.size(), 0);
  for (int64_t u : in_edge_sources) {
    const int64_t i = slot.Find(u);
    if (i >= 0) ++count[i];
  }
  std::vector<int64_t> order(slot.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return count[a] != count[b] ? count[a] > count[b] : slot.ids()[a] < slot.ids()[b];
  });
  std::vector<int64_t> chosen;
  chosen.reserve(max_rows);
  for (size_t i = 0; i < max_rows; ++i) chosen.push_back(slot.ids()[order[i]]);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace fanout::sampler
