#include "core/csr.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "base/parallel.h"

namespace fanout::core {

int64_t SortRows(Csr* csr, std::vector<int64_t>* origin, bool dedup, int num_threads) {
  const int64_t n = csr->num_rows();
  const int64_t m = csr->num_entries();
  int64_t* idx = csr->indices.data();
  int64_t* org = origin != nullptr ? origin->data() : nullptr;
  // Chunks of rows holding about equal numbers of entries, several per thread for balance.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(n, 8 * std::max(1, num_threads)));
  std::vector<int64_t> first_row(chunks + 1, n);
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t target = m * c / chunks;
    first_row[c] = std::lower_bound(csr->indptr.begin(), csr->indptr.end() - 1, target) -
                   csr->indptr.begin();
  }
  first_row[0] = 0;
  std::atomic<int64_t> repeats{0};
  (void)base::ParallelFor(num_threads, chunks, [&](int64_t c) {
    std::vector<std::pair<int64_t, int64_t>> scratch;
    int64_t local = 0;
    for (int64_t r = first_row[c]; r < first_row[c + 1]; ++r) {
      int64_t b = csr->indptr[r], e = csr->indptr[r + 1];
      if (org == nullptr) {
        std::sort(idx + b, idx + e);
      } else {
        // (column, origin) pairs are unique, so an unstable sort gives one well-defined order.
        scratch.clear();
        for (int64_t i = b; i < e; ++i) scratch.emplace_back(idx[i], org[i]);
        std::sort(scratch.begin(), scratch.end());
        for (int64_t i = b; i < e; ++i) {
          idx[i] = scratch[i - b].first;
          org[i] = scratch[i - b].second;
        }
      }
      for (int64_t i = b + 1; i < e; ++i) local += idx[i] == idx[i - 1];
    }
    repeats += local;
    return absl::OkStatus();
  });
  if (!dedup || repeats == 0) return repeats;
  int64_t out = 0;
  for (int64_t r = 0; r < n; ++r) {
    int64_t b = csr->indptr[r], e = csr->indptr[r + 1];
    csr->indptr[r] = out;
    for (int64_t i = b; i < e; ++i) {
      if (i > b && idx[i] == idx[i - 1]) continue;
      idx[out] = idx[i];
      if (org != nullptr) org[out] = org[i];
      ++out;
    }
  }
  csr->indptr[n] = out;
  csr->indices.resize(out);
  if (origin != nullptr) origin->resize(out);
  return repeats;
}

}  // namespace fanout::core
