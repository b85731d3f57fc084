// Compressed sparse row storage and its builder. A CSC is a CSR whose rows are destinations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/parallel.h"

namespace fanout::core {

// Row r's entries are indices[indptr[r] .. indptr[r+1]).
struct Csr {
  std::vector<int64_t> indptr;   // num_rows + 1 offsets
  std::vector<int64_t> indices;  // num_entries column IDs

  int64_t num_rows() const { return indptr.empty() ? 0 : static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_entries() const { return static_cast<int64_t>(indices.size()); }
  int64_t degree(int64_t r) const { return indptr[r + 1] - indptr[r]; }
};

// Builds a CSR from `num_edges` pairs by a stable counting sort: `edge(e)` returns the pair
// {row, col} of input edge e, rows in [0, num_rows), or a negative row to leave the edge out.
// Entries of one row keep their input order. If `origin` is non-null it receives, for every CSR
// position, the input edge index it holds. With num_threads > 1 each thread counts and places a
// contiguous slice of the edges; thread t's entries of a row follow thread t-1's, so the result
// is identical to the sequential one. `edge` must be safe to call concurrently.
template <typename EdgeFn>
Csr BuildCsr(int64_t num_rows, int64_t num_edges, EdgeFn edge, std::vector<int64_t>* origin,
             int num_threads = 1) {
  // Each thread needs a num_rows counter array; don't spend more on them than on the edges.
  int64_t threads = std::max<int64_t>(1, num_threads);
  threads = std::min<int64_t>(threads, std::max<int64_t>(1, num_edges / std::max<int64_t>(1, 4 * num_rows)));
  std::vector<std::vector<int64_t>> cursor(threads, std::vector<int64_t>(num_rows, 0));
  auto slice = [&](int64_t t) { return std::pair{num_edges * t / threads, num_edges * (t + 1) / threads}; };
  (void)base::ParallelFor(static_cast<int>(threads), threads, [&](int64_t t) {
    auto [b, e] = slice(t);
    std::vector<int64_t>& c = cursor[t];
    for (int64_t i = b; i < e; ++i) {
      int64_t r = edge(i).first;
      if (r >= 0) ++c[r];
    }
    return absl::OkStatus();
  });
  Csr csr;
  csr.indptr.assign(num_rows + 1, 0);
  for (int64_t r = 0; r < num_rows; ++r) {
    int64_t at = csr.indptr[r];
    for (int64_t t = 0; t < threads; ++t) {
      int64_t n = cursor[t][r];
      cursor[t][r] = at;  // becomes thread t's write position in row r
      at += n;
    }
    csr.indptr[r + 1] = at;
  }
  csr.indices.resize(csr.indptr[num_rows]);
  if (origin != nullptr) origin->resize(csr.indptr[num_rows]);
  (void)base::ParallelFor(static_cast<int>(threads), threads, [&](int64_t t) {
    auto [b, e] = slice(t);
    std::vector<int64_t>& c = cursor[t];
    for (int64_t i = b; i < e; ++i) {
      auto [r, col] = edge(i);
      if (r < 0) continue;
      int64_t pos = c[r]++;
      csr.indices[pos] = col;
      if (origin != nullptr) (*origin)[pos] = i;
    }
    return absl::OkStatus();
  });
  return csr;
}

// Sorts every row's entries ascending by (column, origin) and counts the repeated entries (equal
// columns within a row, beyond the first). With `dedup` the repeats are removed, keeping the one
// with the smallest origin. `origin` (may be null) is permuted alongside. Rows are sorted on up to
// `num_threads` threads. Returns the number of repeats found.
int64_t SortRows(Csr* csr, std::vector<int64_t>* origin, bool dedup, int num_threads = 1);

}  // namespace fanout::core
