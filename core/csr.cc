#include "core/csr.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace fanout::core {

int64_t SortRows(Csr* csr, std::vector<int64_t>* origin, bool dedup) {
  const int64_t n = csr->num_rows();
  std::vector<std::pair<int64_t, int64_t>> scratch;
  int64_t out = 0;
  for (int64_t r = 0; r < n; ++r) {
    int64_t b = csr->indptr[r], e = csr->indptr[r + 1];
    csr->indptr[r] = out;
    int64_t* idx = csr->indices.data();
    if (origin == nullptr) {
      std::sort(idx + b, idx + e);
      for (int64_t i = b; i < e; ++i) {
        if (dedup && out > csr->indptr[r] && idx[out - 1] == idx[i]) continue;
        idx[out++] = idx[i];
      }
      continue;
    }
    scratch.clear();
    for (int64_t i = b; i < e; ++i) scratch.emplace_back(idx[i], (*origin)[i]);
    std::stable_sort(scratch.begin(), scratch.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [c, o] : scratch) {
      if (dedup && out > csr->indptr[r] && idx[out - 1] == c) continue;
      idx[out] = c;
      (*origin)[out] = o;
      ++out;
    }
  }
  int64_t removed = csr->num_entries() - out;
  csr->indptr[n] = out;
  csr->indices.resize(out);
  if (origin != nullptr) origin->resize(out);
  return removed;
}

}  // namespace fanout::core
