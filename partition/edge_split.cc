#include "partition/edge_split.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>
#include <string>
#include <utility>

#include "absl/strings/str_split.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "partition/input_files.h"

namespace fanout::partition {

using base::StrCat;

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

Pair Unordered(int64_t u, int64_t v) { return {std::min(u, v), std::max(u, v)}; }

// The input's edge rows by unordered pair, self loops left out: `keyed` sorted (pair, row),
// `pairs` the distinct pairs in order (the membership test for negatives), `first_row` each
// pair's first input row.
struct InputPairs {
  std::vector<std::pair<Pair, int64_t>> keyed;
  std::vector<Pair> pairs;
  std::vector<int64_t> first_row;

  // The pairs of input rows [begin, end) (a typed graph's relation), by default every row.
  explicit InputPairs(const Dataset& d, int64_t begin = 0, int64_t end = -1) {
    const int64_t* rows = d.edges.data_as<int64_t>();
    if (end < 0) end = d.num_edges();
    keyed.reserve(end - begin);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t u = rows[2 * r], v = rows[2 * r + 1];
      if (u != v) keyed.push_back({Unordered(u, v), r});
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [key, r] : keyed) {
      if (pairs.empty() || pairs.back() != key) {
        pairs.push_back(key);
        first_row.push_back(r);
      }
    }
  }
  bool Linked(int64_t a, int64_t b) const { return std::binary_search(pairs.begin(), pairs.end(), Unordered(a, b)); }
};

// `k` negatives for source u: (u, w) with w != u drawn uniformly among the nodes
// [first, first + num_nodes) u has no edge with in either direction, appended to `neg`.
absl::Status DrawNegatives(const InputPairs& in, int64_t first, int64_t num_nodes, int64_t u, int64_t k, Stream& draw,
                           std::vector<int64_t>* neg) {
  for (int64_t j = 0; j < k; ++j) {
    int64_t w = -1;
    for (int tries = 0; tries < 1000 && w < 0; ++tries) {
      const int64_t c = first + draw.Below(num_nodes);
      if (c != u && !in.Linked(u, c)) w = c;
    }
    if (w < 0) {
      return absl::FailedPreconditionError(
          StrCat("--edge-split: no negative found for node ", u, " in 1000 draws: it is linked to nearly every node"));
    }
    neg->insert(neg->end(), {u, w});
  }
  return absl::OkStatus();
}

constexpr uint64_t kNegativeStream = 0x6e65676174697665ULL;

std::vector<std::string> EdgeTypeNames(const Dataset& d) {
  std::vector<std::string> out;
  for (const auto& t : d.edge_types) out.push_back(t.ToString());
  return out;
}

// The relation --link-etype names: "REL" (when one relation has that name) or "SRC:REL:DST".
absl::StatusOr<int> FindRelation(const Dataset& d, const std::string& name) {
  absl::StatusOr<int> type = core::FindEdgeType(d.edge_types, name);
  if (!type.ok()) return absl::InvalidArgumentError(StrCat("--link-etype ", name, ": ", type.status().message()));
  return type;
}

// The user's split of options.files_dir (see SplitEdges).
absl::StatusOr<EdgeSplit> ReadEdgeSplit(const Dataset& d, const EdgeSplitOptions& o);

}  // namespace

namespace {

// Splits the pairs of input rows [row_begin, row_end) (all rows, or one relation's, index
// `relation_index` into EdgeSplit::relations or -1), negatives among nodes [first, first + n),
// into `s`: roles of those rows, positives and negatives appended.
absl::Status SplitRows(const Dataset& d, const EdgeSplitOptions& o, int64_t row_begin, int64_t row_end, int64_t first,
                       int64_t n, int relation_index, uint64_t seed, EdgeSplit* s) {
  const int64_t* rows = d.edges.data_as<int64_t>();
  const InputPairs in(d, row_begin, row_end);
  const auto& [keyed, pairs, first_row] = in;
  const int64_t num_pairs = static_cast<int64_t>(pairs.size());
  const int64_t num_valid = std::llround(static_cast<double>(num_pairs) * o.valid);
  const int64_t num_test = std::llround(static_cast<double>(num_pairs) * o.test);
  if ((o.valid > 0 && num_valid == 0) || (o.test > 0 && num_test == 0) || num_valid + num_test >= num_pairs) {
    return absl::FailedPreconditionError(
        StrCat("--edge-split", relation_index >= 0 ? StrCat(" of relation ", d.edge_types[s->relations[relation_index]].ToString()) : "",
               ": ", num_pairs, " distinct node pairs give ", num_valid, " valid and ", num_test,
               " test pairs, leaving ", num_pairs - num_valid - num_test, " to train; use larger fractions"));
  }
  // A seeded Fisher-Yates shuffle of the pair indices.
  std::vector<int64_t> order(num_pairs);
  for (int64_t i = 0; i < num_pairs; ++i) order[i] = i;
  Stream shuffle(seed ^ 0x6c696e6b73706c74ULL);
  for (int64_t i = num_pairs - 1; i > 0; --i) std::swap(order[i], order[shuffle.Below(i + 1)]);
  std::vector<uint8_t> pair_role(num_pairs, 0);
  for (int64_t i = 0; i < num_valid + num_test; ++i) pair_role[order[i]] = i < num_valid ? 1 : 2;
  s->pairs += num_pairs;
  s->train_pairs += num_pairs - num_valid - num_test;
  if (relation_index >= 0) {
    s->relation_counts.push_back({num_pairs, num_pairs - num_valid - num_test, num_valid, num_test});
  }
  {
    size_t p = 0;
    for (const auto& [key, r] : keyed) {
      while (pairs[p] != key) ++p;
      s->role[r] = pair_role[p];
    }
  }
  // Positives in shuffled order (valid first), negatives beside them.
  Stream draw(seed ^ kNegativeStream);
  for (int64_t i = 0; i < num_valid + num_test; ++i) {
    const int64_t r = first_row[order[i]];
    const int64_t u = rows[2 * r], v = rows[2 * r + 1];
    const bool valid = i < num_valid;
    std::vector<int64_t>& pos = valid ? s->valid_pos : s->test_pos;
    pos.insert(pos.end(), {u, v});
    if (relation_index >= 0) (valid ? s->valid_rel : s->test_rel).push_back(relation_index);
    RETURN_IF_ERROR(DrawNegatives(in, first, n, u, o.negatives, draw, valid ? &s->valid_neg : &s->test_neg));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EdgeSplit> SplitEdges(const Dataset& d, const EdgeSplitOptions& o) {
  if (o.negatives < 1) return absl::InvalidArgumentError(StrCat("--eval-negatives must be >= 1, got ", o.negatives));
  if (d.typed() != !o.relations.empty()) {
    return absl::InvalidArgumentError(
        d.typed() ? StrCat("--edge-split on a typed graph needs --link-etype: the relation to predict (one of ",
                           base::StrJoin(EdgeTypeNames(d), ", "), "; several: REL,REL)")
                  : "--link-etype applies to typed graphs only (this one has one node and edge type)");
  }
  EdgeSplit s;
  for (const std::string& name : o.relations) {
    ASSIGN_OR_RETURN(const int relation, FindRelation(d, name));
    if (std::find(s.relations.begin(), s.relations.end(), relation) != s.relations.end()) {
      return absl::InvalidArgumentError(StrCat("--link-etype ", base::StrJoin(o.relations, ","), ": ",
                                               d.edge_types[relation].ToString(), " is named twice"));
    }
    s.relations.push_back(relation);
  }
  if (d.typed() && !o.files_dir.empty()) {
    return absl::UnimplementedError("--edge-split-files on a typed graph is not built yet: use --edge-split "
                                    "TRAIN,VALID,TEST with --link-etype");
  }
  if (!o.files_dir.empty()) return ReadEdgeSplit(d, o);
  s.role.assign(d.num_edges(), 0);
  if (!d.typed()) {
    RETURN_IF_ERROR(SplitRows(d, o, 0, d.num_edges(), 0, d.num_nodes, -1, o.seed, &s));
    return s;
  }
  // Typed graphs: each relation's rows on their own, negatives among its destination type's
  // nodes; relation j > 0 from a seed of its own, so that the first is split as it is alone.
  for (size_t j = 0; j < s.relations.size(); ++j) {
    const int relation = s.relations[j];
    const int dst = d.NodeTypeIndex(d.edge_types[relation].dst);
    const int64_t first = d.node_type_offsets[dst];
    const uint64_t seed = j == 0 ? o.seed : core::SplitMix64(o.seed ^ core::SplitMix64(0x72656c00ULL + j));
    RETURN_IF_ERROR(SplitRows(d, o, d.edge_type_offsets[relation], d.edge_type_offsets[relation + 1], first,
                              d.node_type_offsets[dst + 1] - first, static_cast<int>(j), seed, &s));
  }
  return s;
}

namespace {

namespace fs = std::filesystem;

// DIR/<base> with the first extension that exists, or "".
std::string FindSplitFile(const std::string& dir, const std::string& base) {
  for (const char* ext : {".npy", ".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz"}) {
    const fs::path p = fs::path(dir) / (base + ext);
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

// The negatives of `pos` (flattened [n, 2]) from DIR/<which>_neg (k pairs per positive) or
// DIR/<which>_neg_dst (.npy [n, k] destinations); empty when neither exists.
absl::StatusOr<std::vector<int64_t>> ReadNegatives(const std::string& dir, const std::string& which,
                                                   const std::vector<int64_t>& pos, int64_t num_nodes) {
  const int64_t n = static_cast<int64_t>(pos.size() / 2);
  const std::string pairs = FindSplitFile(dir, which + "_neg");
  const fs::path dst = fs::path(dir) / (which + "_neg_dst.npy");
  std::error_code ec;
  const bool have_dst = fs::is_regular_file(dst, ec);
  if (!pairs.empty() && have_dst) {
    return absl::InvalidArgumentError(StrCat(dir, ": both ", pairs, " and ", dst.string(), " give ", which,
                                             " negatives; keep one"));
  }
  if (have_dst) {
    ASSIGN_OR_RETURN(core::NpyArray a, ReadNodeMatrix(dst.string(), num_nodes));
    if (a.rows() != n || a.shape()[1] < 1) {
      return absl::InvalidArgumentError(StrCat(dst.string(), ": expected [", n, ", k] negative destinations, one row per ",
                                               which, "_pos pair; the shape is [", base::StrJoin(a.shape(), ", "), "]"));
    }
    const int64_t k = a.shape()[1];
    const int64_t* w = a.data_as<int64_t>();
    std::vector<int64_t> out;
    out.reserve(2 * n * k);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < k; ++j) out.insert(out.end(), {pos[2 * i], w[i * k + j]});
    }
    return out;
  }
  if (pairs.empty()) return std::vector<int64_t>{};
  ASSIGN_OR_RETURN(core::NpyArray a, ReadNodePairs(pairs, num_nodes));
  if (n == 0 || a.rows() == 0 || a.rows() % n != 0) {
    return absl::InvalidArgumentError(StrCat(pairs, ": ", a.rows(), " negative pairs for ", n, " ", which,
                                             " positives; expected k per positive (rows i*k .. i*k+k-1 for positive i)"));
  }
  const int64_t* p = a.data_as<int64_t>();
  return std::vector<int64_t>(p, p + 2 * a.rows());
}

absl::StatusOr<EdgeSplit> ReadEdgeSplit(const Dataset& d, const EdgeSplitOptions& o) {
  const std::string& dir = o.files_dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(StrCat("--edge-split-files ", dir, ": not a readable folder"));
  }
  EdgeSplit s;
  // Held-out pairs, unordered, with their role; a pair in both sets is an error.
  std::vector<std::pair<Pair, uint8_t>> held;
  for (const auto& [which, role, out] : {std::tuple{"valid", uint8_t{1}, &s.valid_pos}, {"test", uint8_t{2}, &s.test_pos}}) {
    const std::string path = FindSplitFile(dir, StrCat(which, "_pos"));
    if (path.empty()) {
      return absl::NotFoundError(StrCat("--edge-split-files ", dir, ": no ", which, "_pos.npy (or .csv, .tsv, .txt, "
                                        "optionally .gz): the held-out ", which, " pairs"));
    }
    ASSIGN_OR_RETURN(core::NpyArray a, ReadNodePairs(path, d.num_nodes));
    if (a.rows() == 0) return absl::InvalidArgumentError(StrCat(path, ": no pairs"));
    const int64_t* p = a.data_as<int64_t>();
    for (int64_t i = 0; i < a.rows(); ++i) {
      if (p[2 * i] == p[2 * i + 1]) {
        return absl::InvalidArgumentError(StrCat(path, " row ", i, ": (", p[2 * i], ", ", p[2 * i + 1],
                                                 ") is a self loop; a held-out pair joins two nodes"));
      }
      held.push_back({Unordered(p[2 * i], p[2 * i + 1]), role});
    }
    out->assign(p, p + 2 * a.rows());
  }
  std::sort(held.begin(), held.end());
  for (size_t i = 1; i < held.size(); ++i) {
    if (held[i].first == held[i - 1].first && held[i].second != held[i - 1].second) {
      return absl::InvalidArgumentError(StrCat("--edge-split-files ", dir, ": the pair (", held[i].first.first, ", ",
                                               held[i].first.second, ") is in both valid_pos and test_pos"));
    }
  }
  const InputPairs in(d);
  s.pairs = static_cast<int64_t>(in.pairs.size());
  s.role.assign(d.num_edges(), 0);
  int64_t held_stored = 0;  // distinct input pairs held out
  {
    size_t h = 0;
    Pair last{-1, -1};
    for (const auto& [key, r] : in.keyed) {
      while (h < held.size() && held[h].first < key) ++h;
      if (h < held.size() && held[h].first == key) {
        s.role[r] = held[h].second;
        if (key != last) ++held_stored;
        last = key;
      }
    }
  }
  s.train_pairs = s.pairs - held_stored;
  Stream draw(o.seed ^ kNegativeStream);
  for (const auto& [which, pos, neg] : {std::tuple{"valid", &s.valid_pos, &s.valid_neg}, {"test", &s.test_pos, &s.test_neg}}) {
    ASSIGN_OR_RETURN(*neg, ReadNegatives(dir, which, *pos, d.num_nodes));
    if (!neg->empty()) continue;
    for (size_t i = 0; i < pos->size(); i += 2) {
      RETURN_IF_ERROR(DrawNegatives(in, 0, d.num_nodes, (*pos)[i], o.negatives, draw, neg));
    }
  }
  return s;
}

}  // namespace
}  // namespace fanout::partition
