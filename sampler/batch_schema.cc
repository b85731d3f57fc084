#include "sampler/batch_schema.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "base/enum_names.h"
#include "base/strings.h"

namespace fanout::sampler {
namespace {

using base::StrCat;

constexpr std::pair<Domain, std::string_view> kDomainNames[] = {
    {Domain::kSeed, "seed"},     {Domain::kPositive, "positive"}, {Domain::kNegative, "negative"},
    {Domain::kSource, "source"}, {Domain::kOffsets, "offsets"},   {Domain::kEdge, "edge"},
    {Domain::kInput, "input"},   {Domain::kRow, "row"},
};

// The structural arrays: int64, one value per entry. The first of each domain anchors its count.
struct Structural {
  std::string_view name;
  Domain domain;
};
constexpr Structural kStructural[] = {
    {"seeds", Domain::kSeed},          {"labels", Domain::kSeed},
    {"pos_src", Domain::kPositive},    {"pos_dst", Domain::kPositive},
    {"pair_eids", Domain::kPositive},  {"neg_src", Domain::kNegative},
    {"neg_dst", Domain::kNegative},    {"src_nodes", Domain::kSource},
    {"indptr", Domain::kOffsets},      {"indices", Domain::kEdge},
    {"eids", Domain::kEdge},           {"dst", Domain::kEdge},
    {"feature_slots", Domain::kInput},
};

bool IsStructural(const ArrayRef& a) {
  for (const Structural& s : kStructural) {
    if (s.name == a.name && s.domain == a.domain) return true;
  }
  return false;
}

// Whether `a` anchors its domain's count (the domain's first structural array).
bool IsAnchor(const ArrayRef& a) {
  for (const Structural& s : kStructural) {
    if (s.domain == a.domain) return s.name == a.name;
  }
  return false;
}

std::string Describe(const ArrayRef& a) {
  return IsLayerDomain(a.domain) ? StrCat("array '", a.name, "' of layer ", a.layer)
                                 : StrCat("array '", a.name, "'");
}

template <typename T>
ArrayRef Ref(std::string_view name, Domain domain, int32_t layer, const Array<T>& a) {
  return ArrayRef{name,    domain, layer, core::DTypeOf<T>(), 1, static_cast<int64_t>(a.size()),
                  a.data()};
}

ArrayRef Ref(std::string_view name, Domain domain, const std::vector<int64_t>& v) {
  return ArrayRef{name,    domain, -1, core::DType::kInt64, 1, static_cast<int64_t>(v.size()),
                  v.data()};
}

void AddFields(const Fields& fields, Domain domain, int32_t layer, std::vector<ArrayRef>* out) {
  for (const Field& f : fields) {
    out->push_back(
        ArrayRef{f.name, domain, layer, f.dtype(), f.width, f.count(), f.data(), f.matrix});
  }
}

template <typename T>
Array<T> Borrowed(const ArrayRef& a, const std::shared_ptr<const void>& owner) {
  return Array<T>::Borrow(owner, static_cast<const T*>(a.data),
                          static_cast<size_t>(a.count * a.width));
}

std::vector<int64_t> Copied(const ArrayRef& a) {
  const auto* p = static_cast<const int64_t*>(a.data);
  return std::vector<int64_t>(p, p + a.count);
}

absl::Status PlaceStructural(const ArrayRef& a, const std::shared_ptr<const void>& owner,
                             MiniBatch* mb, LinkPairs* pairs) {
  if (a.dtype != core::DType::kInt64 || a.width != 1) {
    return absl::DataLossError(StrCat("batch file: ", Describe(a), " is ", core::DTypeName(a.dtype),
                                      " x ", a.width, "; it is int64, one per entry"));
  }
  const std::string_view n = a.name;
  if (IsLayerDomain(a.domain)) {
    Block& b = mb->blocks[static_cast<size_t>(a.layer)];
    Int64Array* to = n == "src_nodes" ? &b.src_nodes
                     : n == "indptr"  ? &b.indptr
                     : n == "indices" ? &b.indices
                     : n == "eids"    ? &b.eids
                                      : &b.dst;
    *to = Borrowed<int64_t>(a, owner);
    if (n == "indptr") b.num_dst = a.count - 1;
    return absl::OkStatus();
  }
  if (n == "seeds") {
    mb->seeds = Copied(a);
  } else if (n == "labels") {
    mb->labels = Copied(a);
  } else if (n == "feature_slots") {
    mb->feature_slots = Borrowed<int64_t>(a, owner);
  } else if (pairs != nullptr) {
    std::vector<int64_t>* to = n == "pos_src"     ? &pairs->pos_src
                               : n == "pos_dst"   ? &pairs->pos_dst
                               : n == "pair_eids" ? &pairs->eids
                               : n == "neg_src"   ? &pairs->neg_src
                                                  : &pairs->neg_dst;
    *to = Copied(a);
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view DomainName(Domain d) { return base::EnumName(kDomainNames, d); }

bool IsLayerDomain(Domain d) {
  return d == Domain::kSource || d == Domain::kOffsets || d == Domain::kEdge;
}

std::vector<ArrayRef> BatchArrays(const MiniBatch& mb, const LinkPairs* pairs) {
  std::vector<ArrayRef> out;
  out.push_back(Ref("seeds", Domain::kSeed, mb.seeds));
  if (!mb.labels.empty()) out.push_back(Ref("labels", Domain::kSeed, mb.labels));
  AddFields(mb.seed_fields, Domain::kSeed, -1, &out);
  if (pairs != nullptr) {
    out.push_back(Ref("pos_src", Domain::kPositive, pairs->pos_src));
    out.push_back(Ref("pos_dst", Domain::kPositive, pairs->pos_dst));
    out.push_back(Ref("pair_eids", Domain::kPositive, pairs->eids));
    out.push_back(Ref("neg_src", Domain::kNegative, pairs->neg_src));
    out.push_back(Ref("neg_dst", Domain::kNegative, pairs->neg_dst));
  }
  for (size_t i = 0; i < mb.blocks.size(); ++i) {
    const Block& b = mb.blocks[i];
    const auto l = static_cast<int32_t>(i);
    out.push_back(Ref("src_nodes", Domain::kSource, l, b.src_nodes));
    out.push_back(Ref("indptr", Domain::kOffsets, l, b.indptr));
    out.push_back(Ref("indices", Domain::kEdge, l, b.indices));
    out.push_back(Ref("eids", Domain::kEdge, l, b.eids));
    ArrayRef dst = Ref("dst", Domain::kEdge, l, b.indices);
    dst.data = b.dst.size() == b.indices.size() ? b.dst.data() : nullptr;
    out.push_back(dst);
    AddFields(b.fields, Domain::kEdge, l, &out);
  }
  if (!mb.feature_slots.empty())
    out.push_back(Ref("feature_slots", Domain::kInput, -1, mb.feature_slots));
  AddFields(mb.input_fields, Domain::kInput, -1, &out);
  return out;
}

absl::Status PlaceArray(const ArrayRef& a, const std::shared_ptr<const void>& owner, MiniBatch* mb,
                        LinkPairs* pairs) {
  if (IsLayerDomain(a.domain) &&
      (a.layer < 0 || static_cast<size_t>(a.layer) >= mb->blocks.size())) {
    return absl::DataLossError(
        StrCat("batch file: ", Describe(a), " of a batch of ", mb->blocks.size(), " layers"));
  }
  if (IsStructural(a)) return PlaceStructural(a, owner, mb, pairs);
  Fields* fields = a.domain == Domain::kSeed    ? &mb->seed_fields
                   : a.domain == Domain::kInput ? &mb->input_fields
                   : a.domain == Domain::kEdge  ? &mb->blocks[static_cast<size_t>(a.layer)].fields
                                                : nullptr;
  if (fields == nullptr) {
    return absl::DataLossError(StrCat("batch file: ", Describe(a), ": the ", DomainName(a.domain),
                                      " domain has no fields"));
  }
  if (fields->Has(a.name))
    return absl::DataLossError(StrCat("batch file: ", Describe(a), " appears twice"));
  if (!a.matrix && a.width != 1) {
    return absl::DataLossError(StrCat("batch file: ", Describe(a), " has ", a.width,
                                      " values per entry but is not a matrix"));
  }
  Field f{std::string(a.name), a.width, a.matrix, Int64Array()};
  switch (a.dtype) {
    case core::DType::kInt64:
      f.values = Borrowed<int64_t>(a, owner);
      break;
    case core::DType::kInt32:
      f.values = Borrowed<int32_t>(a, owner);
      break;
    case core::DType::kFloat32:
      f.values = Borrowed<float>(a, owner);
      break;
    default:
      return absl::DataLossError(StrCat("batch file: ", Describe(a), " is ",
                                        core::DTypeName(a.dtype),
                                        "; fields are int64, int32 or float32"));
  }
  fields->Add(std::move(f));
  return absl::OkStatus();
}

absl::Status CheckArrayCounts(const std::vector<ArrayRef>& arrays, int64_t layers) {
  // Each domain's count, from its anchor: [domain][layer + 1].
  std::map<std::pair<Domain, int32_t>, int64_t> anchor;
  std::set<std::tuple<Domain, int32_t, std::string_view>> seen;
  for (const ArrayRef& a : arrays) {
    if (IsLayerDomain(a.domain) ? (a.layer < 0 || a.layer >= layers) : a.layer != -1) {
      return absl::DataLossError(StrCat("batch file: ", Describe(a), " (", DomainName(a.domain),
                                        " domain) names layer ", a.layer, " of a batch of ", layers,
                                        " layers"));
    }
    if (!seen.insert({a.domain, a.layer, a.name}).second) {
      return absl::DataLossError(StrCat("batch file: ", Describe(a), " appears twice"));
    }
    if (IsAnchor(a)) anchor[{a.domain, a.layer}] = a.count;
  }
  if (!anchor.count({Domain::kSeed, -1}))
    return absl::DataLossError("batch file: no 'seeds' array");
  for (int32_t l = 0; l < layers; ++l) {
    for (std::string_view name : {"src_nodes", "indptr", "indices", "eids", "dst"}) {
      if (!seen.count({name == "src_nodes" ? Domain::kSource
                       : name == "indptr"  ? Domain::kOffsets
                                           : Domain::kEdge,
                       l, name})) {
        return absl::DataLossError(StrCat("batch file: layer ", l, " has no '", name, "' array"));
      }
    }
    if (anchor[{Domain::kOffsets, l}] < 1)
      return absl::DataLossError(StrCat("batch file: layer ", l, "'s indptr is empty"));
  }
  if (layers > 0) anchor[{Domain::kInput, -1}] = anchor[{Domain::kSource, 0}];
  for (const ArrayRef& a : arrays) {
    if (a.domain == Domain::kRow) continue;
    auto it = anchor.find({a.domain, a.layer});
    if (it == anchor.end()) {
      return absl::DataLossError(StrCat("batch file: ", Describe(a), " has ", a.count,
                                        " entries, but the batch has no ", DomainName(a.domain),
                                        " arrays to count them by"));
    }
    if (a.count != it->second) {
      return absl::DataLossError(StrCat("batch file: ", Describe(a), " has ", a.count,
                                        " entries; its domain (", DomainName(a.domain), ") has ",
                                        it->second));
    }
  }
  return absl::OkStatus();
}

}  // namespace fanout::sampler
