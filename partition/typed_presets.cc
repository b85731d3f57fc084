// fanout-generate's typed presets (--preset mag, igbh-*): the node types, relations and sizes of
// the graphs they are shaped like, and the flag defaults that go with them (generate.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "partition/generate.h"

namespace fanout::partition {

using base::StrCat;

int64_t TypedShape::nodes() const {
  int64_t n = 0;
  for (const TypedNodeType& t : node_types) n += t.count;
  return n;
}

int64_t TypedShape::edges() const {
  int64_t e = 0;
  for (const TypedRelation& r : relations) e += r.count;
  return e;
}

namespace {

// IGBH's sizes (DGL's examples/graphbolt/rgcn/download.py; the paper and author counts as IGB's
// own dataloader.py): nodes of author, fos, institute, paper; edges of author:affiliated_to:
// institute, paper:cites:paper, paper:topic:fos, paper:written_by:author (no reverses, no self
// loops). IGBH-large and -full also have journals and conferences, whose counts are published
// nowhere we found, and do not fit this generator's 32-bit node counts per type anyway.
constexpr std::pair<std::string_view, std::array<int64_t, 8>> kIgbhSizes[] = {
    {"tiny", {357041, 84220, 8738, 100000, 325410, 447416, 718445, 471443}},
    {"small", {1926066, 190449, 14751, 1000000, 1630476, 12070502, 7234122, 4553516}},
    {"medium", {15544654, 415054, 23256, 10000000, 11049412, 120077694, 68510495, 39854592}},
};

// The typed presets at scale 1.
std::vector<TypedShape> TypedPresets() {
  std::vector<TypedShape> out;
  // ogbn-mag (OGB 1.3): node and edge counts per type; papers alone have features (128), labels
  // (349 venues) and the split (85.5 / 8.8 / 5.7 %, drawn at random here).
  out.push_back({.preset = "mag", .shaped_like = "ogbn-mag",
                 .node_types = {{"author", 1134649}, {"field_of_study", 59965}, {"institution", 8740},
                                {"paper", 736389, true}},
                 .relations = {{0, "affiliated_with", 2, 1043998}, {0, "writes", 3, 7145660},
                               {3, "cites", 3, 5416271}, {3, "has_topic", 1, 7505078}},
                 .labelled = 3, .feat_dim = 128, .num_classes = 349, .train_frac = 0.855, .valid_frac = 0.088});
  // IGBH (IGB's heterogeneous graphs, MLPerf's R-GAT benchmark): every type has 1024-wide
  // features; papers the labels (2983 classes) and the split as MLPerf's split_seeds.py draws it
  // (a random 60 % to train, 0.5 % to validate; the rest test here).
  for (const auto& [size, counts] : kIgbhSizes) {
    out.push_back({.preset = StrCat("igbh-", size), .shaped_like = StrCat("IGBH-", size),
                   .node_types = {{"author", counts[0], true}, {"fos", counts[1], true}, {"institute", counts[2], true},
                                  {"paper", counts[3], true}},
                   .relations = {{0, "affiliated_to", 2, counts[4]}, {3, "cites", 3, counts[5]},
                                 {3, "topic", 1, counts[6]}, {3, "written_by", 0, counts[7]}},
                   .labelled = 3, .feat_dim = 1024, .num_classes = 2983, .train_frac = 0.6, .valid_frac = 0.005});
  }
  return out;
}

}  // namespace

std::optional<TypedShape> TypedPreset(std::string_view preset, double scale) {
  for (TypedShape s : TypedPresets()) {
    if (s.preset != preset) continue;
    auto scaled = [&](int64_t x, int64_t least) {
      return std::max<int64_t>(least, std::llround(static_cast<double>(x) * scale));
    };
    for (TypedNodeType& t : s.node_types) t.count = scaled(t.count, 2);
    for (TypedRelation& r : s.relations) r.count = scaled(r.count, 1);
    return s;
  }
  return std::nullopt;
}

std::vector<std::string> TypedPresetNames() {
  std::vector<std::string> names;
  for (const TypedShape& s : TypedPresets()) names.push_back(s.preset);
  return names;
}

}  // namespace fanout::partition
