#include "core/type_map.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "base/strings.h"

namespace fanout::core {

bool IsTypeName(std::string_view name) {
  if (name.empty() || name[0] == '.') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

absl::StatusOr<int> FindEdgeType(const std::vector<CanonicalEdgeType>& types, std::string_view name) {
  std::vector<std::string> all, hits;
  int found = -1;
  for (size_t t = 0; t < types.size(); ++t) {
    all.push_back(types[t].ToString());
    if (all.back() != name && types[t].rel != name) continue;
    hits.push_back(all.back());
    found = static_cast<int>(t);
  }
  if (hits.empty()) {
    return absl::NotFoundError(base::StrCat("no edge type '", name, "' (the graph has ", base::StrJoin(all, ", "), ")"));
  }
  if (hits.size() > 1) {
    return absl::InvalidArgumentError(base::StrCat("'", name, "' names several edge types; write one as SRC:REL:DST (",
                                                   base::StrJoin(hits, ", "), ")"));
  }
  return found;
}

absl::StatusOr<CanonicalEdgeType> CanonicalEdgeType::Parse(std::string_view text) {
  const std::vector<std::string> parts = base::StrSplit(text, ":");
  if (parts.size() != 3 || !IsTypeName(parts[0]) || !IsTypeName(parts[1]) || !IsTypeName(parts[2])) {
    return absl::InvalidArgumentError(base::StrCat("edge type '", text,
                                             "' is not SRC:RELATION:DST (three names of letters, digits, '_', '-' "
                                             "or '.', e.g. paper:cites:paper)"));
  }
  return CanonicalEdgeType{parts[0], parts[1], parts[2]};
}

absl::StatusOr<TypeMap> TypeMap::Make(Kind kind, std::vector<std::string> names,
                                      std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges,
                                      const std::vector<int64_t>& bounds) {
  const char* what = kind == Kind::kNode ? "node" : "edge";
  auto bad = [&](auto&&... parts) { return absl::InvalidArgumentError(base::StrCat(what, " types: ", parts...)); };
  if (bounds.size() < 2) return bad("no partitions");
  const int k = static_cast<int>(bounds.size()) - 1;
  if (names.empty()) return bad("none given");
  if (ranges.size() != names.size()) return bad(names.size(), " names but ", ranges.size(), " range lists");
  std::set<std::string> seen;
  for (const std::string& n : names) {
    if (kind == Kind::kEdge) {
      if (auto t = CanonicalEdgeType::Parse(n); !t.ok()) return bad(t.status().message());
    } else if (!IsTypeName(n)) {
      return bad("'", n, "' is not a type name (letters, digits, '_', '-' or '.', not starting with '.')");
    }
    if (!seen.insert(n).second) return bad("'", n, "' is listed twice");
  }
  TypeMap m;
  m.num_parts_ = k;
  m.typewise_start_.assign(names.size(), std::vector<int64_t>(k + 1, 0));
  for (size_t t = 0; t < names.size(); ++t) {
    if (static_cast<int>(ranges[t].size()) != k) {
      return bad("'", names[t], "' has ", ranges[t].size(), " ranges for ", k, " partitions");
    }
  }
  for (int p = 0; p < k; ++p) {
    int64_t next = bounds[p];
    for (size_t t = 0; t < names.size(); ++t) {
      const auto [b, e] = ranges[t][p];
      if (b != next || e < b) {
        return bad("'", names[t], "' in partition ", p, " is [", b, ", ", e, "); it must start at ", next,
                   " (the types of a partition follow each other in order)");
      }
      m.typewise_start_[t][p + 1] = m.typewise_start_[t][p] + (e - b);
      if (e > b) {
        m.starts_.push_back(b);
        m.segment_type_.push_back(static_cast<int>(t));
        m.segment_typewise_.push_back(m.typewise_start_[t][p]);
      }
      next = e;
    }
    if (next != bounds[p + 1]) {
      return bad("partition ", p, "'s types end at ", next, ", not at the partition's end ", bounds[p + 1]);
    }
  }
  m.names_ = std::move(names);
  m.ranges_ = std::move(ranges);
  return m;
}

absl::StatusOr<TypeMap> TypeMap::Single(Kind kind, const std::vector<int64_t>& bounds) {
  std::vector<std::pair<int64_t, int64_t>> r;
  for (size_t p = 0; p + 1 < bounds.size(); ++p) r.emplace_back(bounds[p], bounds[p + 1]);
  std::string name = kind == Kind::kNode ? std::string(kDefaultNodeType)
                                         : CanonicalEdgeType{kDefaultNodeType, kDefaultRelation, kDefaultNodeType}.ToString();
  return Make(kind, {std::move(name)}, {std::move(r)}, bounds);
}

absl::StatusOr<int> TypeMap::TypeId(std::string_view name) const {
  for (int t = 0; t < num_types(); ++t) {
    if (names_[t] == name) return t;
  }
  return absl::NotFoundError(base::StrCat("no type '", name, "' (this graph has: ", base::StrJoin(names_, ", "), ")"));
}

std::pair<int64_t, int64_t> TypeMap::Range(int type, int part) const { return ranges_[type][part]; }

std::pair<int, int64_t> TypeMap::ToTypeWise(int64_t id) const {
  const size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), id) - starts_.begin()) - 1;
  return {segment_type_[i], segment_typewise_[i] + (id - starts_[i])};
}

int64_t TypeMap::ToHomogeneous(int type, int64_t typewise) const {
  const std::vector<int64_t>& s = typewise_start_[type];
  const int p = static_cast<int>(std::upper_bound(s.begin(), s.end(), typewise) - s.begin()) - 1;
  return ranges_[type][p].first + (typewise - s[p]);
}

}  // namespace fanout::core
