// Compressed sparse row storage and its builder. A CSC is a CSR whose rows are destinations.
#pragma once

#include <cstdint>
#include <vector>

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
// Entries of one row keep their input order.
// If `origin` is non-null it receives, for every CSR position, the input edge index it holds.
template <typename EdgeFn>
Csr BuildCsr(int64_t num_rows, int64_t num_edges, EdgeFn edge, std::vector<int64_t>* origin) {
  Csr csr;
  csr.indptr.assign(num_rows + 1, 0);
  for (int64_t e = 0; e < num_edges; ++e) {
    int64_t r = edge(e).first;
    if (r >= 0) ++csr.indptr[r + 1];
  }
  for (int64_t r = 0; r < num_rows; ++r) csr.indptr[r + 1] += csr.indptr[r];
  csr.indices.resize(csr.indptr[num_rows]);
  if (origin != nullptr) origin->resize(csr.indptr[num_rows]);
  std::vector<int64_t> fill(csr.indptr.begin(), csr.indptr.end() - 1);
  for (int64_t e = 0; e < num_edges; ++e) {
    auto [r, c] = edge(e);
    if (r < 0) continue;
    int64_t pos = fill[r]++;
    csr.indices[pos] = c;
    if (origin != nullptr) (*origin)[pos] = e;
  }
  return csr;
}

// Sorts every row's entries ascending (ties keep their order) and, if `dedup`, keeps only the
// first of equal entries in a row. `origin` (may be null) is permuted alongside. Returns the
// number of entries removed.
int64_t SortRows(Csr* csr, std::vector<int64_t>* origin, bool dedup);

}  // namespace fanout::core
