#include "partition/edge_split.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_split.h"
#include "core/random.h"
#include "core/status.h"
#include "core/strings.h"

namespace fanout::partition {

using core::StrCat;

absl::StatusOr<EdgeSplitOptions> ParseEdgeSplit(const std::string& text) {
  std::vector<double> f;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    char* end = nullptr;
    const double x = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || !(x >= 0 && x <= 1)) {
      return absl::InvalidArgumentError(
          StrCat("--edge-split '", text, "': '", part, "' is not a fraction in [0, 1] (expected TRAIN,VALID,TEST)"));
    }
    f.push_back(x);
  }
  if (f.size() != 3) {
    return absl::InvalidArgumentError(
        StrCat("--edge-split '", text, "': expected three fractions TRAIN,VALID,TEST, e.g. 0.85,0.05,0.10"));
  }
  if (std::abs(f[0] + f[1] + f[2] - 1) > 1e-6) {
    return absl::InvalidArgumentError(StrCat("--edge-split '", text, "': the fractions sum to ", f[0] + f[1] + f[2],
                                             ", not 1"));
  }
  if (f[0] <= 0) return absl::InvalidArgumentError(StrCat("--edge-split '", text, "': nothing would train"));
  EdgeSplitOptions o;
  o.valid = f[1];
  o.test = f[2];
  return o;
}

namespace {

// A deterministic stream of 64-bit draws.
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(core::SplitMix64(seed)) {}
  uint64_t Next() { return core::SplitMix64(state_++); }
  // Uniform in [0, n) (n > 0), without modulo bias worth measuring for n far below 2^64.
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

using Pair = std::pair<int64_t, int64_t>;  // (min, max)

}  // namespace

absl::StatusOr<EdgeSplit> SplitEdges(const Dataset& d, const EdgeSplitOptions& o) {
  const int64_t e = d.num_edges(), n = d.num_nodes;
  const int64_t* rows = d.edges.data_as<int64_t>();
  if (o.negatives < 1) return absl::InvalidArgumentError(StrCat("--eval-negatives must be >= 1, got ", o.negatives));
  // Rows by unordered pair; self loops stay out of the pool.
  std::vector<std::pair<Pair, int64_t>> keyed;
  keyed.reserve(e);
  for (int64_t r = 0; r < e; ++r) {
    const int64_t u = rows[2 * r], v = rows[2 * r + 1];
    if (u != v) keyed.push_back({{std::min(u, v), std::max(u, v)}, r});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<Pair> pairs;          // distinct, sorted: the membership test for negatives
  std::vector<int64_t> first_row;   // per pair, its first input row
  for (const auto& [key, r] : keyed) {
    if (pairs.empty() || pairs.back() != key) {
      pairs.push_back(key);
      first_row.push_back(r);
    }
  }
  EdgeSplit s;
  s.pairs = static_cast<int64_t>(pairs.size());
  const int64_t num_valid = std::llround(static_cast<double>(s.pairs) * o.valid);
  const int64_t num_test = std::llround(static_cast<double>(s.pairs) * o.test);
  if ((o.valid > 0 && num_valid == 0) || (o.test > 0 && num_test == 0) || num_valid + num_test >= s.pairs) {
    return absl::FailedPreconditionError(StrCat("--edge-split: ", s.pairs, " distinct node pairs give ", num_valid,
                                                " valid and ", num_test, " test pairs, leaving ",
                                                s.pairs - num_valid - num_test, " to train; use larger fractions"));
  }
  // A seeded Fisher-Yates shuffle of the pair indices.
  std::vector<int64_t> order(s.pairs);
  for (int64_t i = 0; i < s.pairs; ++i) order[i] = i;
  Stream shuffle(o.seed ^ 0x6c696e6b73706c74ULL);
  for (int64_t i = s.pairs - 1; i > 0; --i) std::swap(order[i], order[shuffle.Below(i + 1)]);
  std::vector<uint8_t> pair_role(s.pairs, 0);
  for (int64_t i = 0; i < num_valid + num_test; ++i) pair_role[order[i]] = i < num_valid ? 1 : 2;
  s.train_pairs = s.pairs - num_valid - num_test;
  s.role.assign(e, 0);
  {
    size_t p = 0;
    for (const auto& [key, r] : keyed) {
      while (pairs[p] != key) ++p;
      s.role[r] = pair_role[p];
    }
  }
  // Positives in shuffled order (valid first), negatives beside them.
  Stream draw(o.seed ^ 0x6e65676174697665ULL);
  auto linked = [&](int64_t a, int64_t b) {
    return std::binary_search(pairs.begin(), pairs.end(), Pair{std::min(a, b), std::max(a, b)});
  };
  for (int64_t i = 0; i < num_valid + num_test; ++i) {
    const int64_t r = first_row[order[i]];
    const int64_t u = rows[2 * r], v = rows[2 * r + 1];
    std::vector<int64_t>& pos = i < num_valid ? s.valid_pos : s.test_pos;
    std::vector<int64_t>& neg = i < num_valid ? s.valid_neg : s.test_neg;
    pos.insert(pos.end(), {u, v});
    for (int64_t k = 0; k < o.negatives; ++k) {
      int64_t w = -1;
      for (int tries = 0; tries < 1000 && w < 0; ++tries) {
        const int64_t c = draw.Below(n);
        if (c != u && !linked(u, c)) w = c;
      }
      if (w < 0) {
        return absl::FailedPreconditionError(StrCat("--edge-split: no negative found for node ", u,
                                                    " in 1000 draws: it is linked to nearly every node"));
      }
      neg.insert(neg.end(), {u, w});
    }
  }
  return s;
}

}  // namespace fanout::partition
