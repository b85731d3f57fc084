// Held-out edges for link prediction: a random split of the input's node pairs into train,
// valid and test, or the user's own valid and test pairs read from files; and negative pairs,
// the user's or drawn once per held-out positive, so that evaluation is repeatable. The
// partitioner leaves the held-out pairs out of the stored graph in both directions (an
// undirected edge listed twice, or added back by --add-reverse-edges, cannot leak), and writes
// positives and negatives under link/ in new node IDs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/dataset.h"

namespace fanout::partition {

struct EdgeSplitOptions {
  double valid = 0;       // fraction of the node pairs held out for validation
  double test = 0;        // ... and for test; the rest trains
  int64_t negatives = 1;  // negative pairs drawn per held-out positive
  uint64_t seed = 0;
  // The user's split instead of a random one (--edge-split-files): a folder with valid_pos and
  // test_pos, and optionally valid_neg / test_neg (pairs, k per positive, in order) or
  // valid_neg_dst / test_neg_dst (.npy [n, k]: k negative destinations for positive i's source,
  // OGB's citation2 layout). Pairs are .npy ([n, 2] or [2, n]) or text "src,dst" lines
  // (.csv/.tsv/.txt, optionally .gz), in input node IDs. Negatives not given are drawn.
  std::string files_dir;
  // Typed graphs: the relations whose pairs are split (--link-etype REL[,REL...]: each REL or
  // SRC:REL:DST), each on its own with the same fractions; the other relations are stored whole,
  // and a pair's negatives are (source, a node of its relation's destination type). Required on
  // a typed graph, refused on a one-type graph.
  std::vector<std::string> relations;

  bool enabled() const { return valid > 0 || test > 0 || !files_dir.empty(); }
};

// "TRAIN,VALID,TEST" fractions that sum to 1 (e.g. 0.85,0.05,0.10). INVALID_ARGUMENT names
// the flag and what is wrong.
absl::StatusOr<EdgeSplitOptions> ParseEdgeSplit(const std::string& text);

struct EdgeSplit {
  // Per input edge row: 0 trains (stored), 1 valid, 2 test (both left out of the stored graph).
  std::vector<uint8_t> role;
  // Pairs in input node IDs, flattened [n, 2]: each held-out pair once, oriented as its first
  // input row; negatives [n * negatives, 2], row i * negatives + j for positive i, with the
  // positive's source and a node it has no edge with in either direction.
  std::vector<int64_t> valid_pos, test_pos, valid_neg, test_neg;
  // Typed graphs: each held-out pair's relation, an index into `relations` (in pair order).
  std::vector<int64_t> valid_rel, test_rel;
  int64_t pairs = 0;        // distinct unordered node pairs (self loops excluded)
  int64_t train_pairs = 0;  // of them, kept in the graph
  std::vector<int> relations;  // typed graphs: the split relations' edge type indices, in order
  // Per split relation: {pairs, train, valid, test}.
  std::vector<std::array<int64_t, 4>> relation_counts;
};

// Splits the distinct unordered pairs {u, v}, u != v, of d's edges (a typed graph: of each split
// relation's edges, relation by relation; the first relation's split is what it would be alone):
// a seeded shuffle, then the first round(pairs * valid) are valid, the next round(pairs * test)
// test. Self loops always train. Deterministic in (edges, options). FAILED_PRECONDITION when a negative cannot be found
// (a node linked to nearly every other) or the split would leave a set empty that was asked for.
//
// With options.files_dir set, the split is the user's: its valid and test pairs are held out
// wherever they occur in d's edges, in either direction (they need not occur: OGB's link
// datasets list only training edges); negatives not given are drawn as above. Errors name the
// file and row: an ID outside the graph, a self loop, a pair in both valid and test, negatives
// that are not a whole number per positive.
absl::StatusOr<EdgeSplit> SplitEdges(const Dataset& d, const EdgeSplitOptions& options);

}  // namespace fanout::partition
