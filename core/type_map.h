// Node and edge types (issue 29: heterogeneous graphs). A graph's nodes (edges) have one ID space,
// as DistDGL's: in every partition, the nodes of each type hold one contiguous range of the
// partition's IDs, types in their schema order, so that an ID's partition (RangePartitionBook) and
// its type are both a range lookup. A node's type-wise ID numbers the nodes of its type from 0,
// partition by partition: what users and their original IDs see per type.
//
// Today's graphs are the one-type case: node type "_N", edge type ("_N", "_E", "_N"), DGL's names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::core {

inline constexpr const char* kDefaultNodeType = "_N";
inline constexpr const char* kDefaultRelation = "_E";

// A node type or relation name: letters, digits, '_', '-' and '.', not starting with '.' (it
// names folders of the partition).
bool IsTypeName(std::string_view name);

// DGL's canonical edge type (source type, relation, destination type), written "src:rel:dst".
struct CanonicalEdgeType {
  std::string src, rel, dst;
  std::string ToString() const { return src + ":" + rel + ":" + dst; }
  // "paper:cites:paper" -> its three parts; each must be non-empty and without ':'.
  static absl::StatusOr<CanonicalEdgeType> Parse(std::string_view text);
  bool operator==(const CanonicalEdgeType&) const = default;
};

// The index of the edge type `name` names among `types`: its canonical "SRC:REL:DST", or a
// relation name only one of them has (DGL's rule). NOT_FOUND and INVALID_ARGUMENT (a relation
// name several types share) say which, listing the types. The one resolver of edge type names:
// the partitioner's --link-etype, fanout-train's --relation-fanout and the Python data plane's
// etype arguments all use it.
absl::StatusOr<int> FindEdgeType(const std::vector<CanonicalEdgeType>& types, std::string_view name);

// Immutable after Make; thread-safe.
class TypeMap {
 public:
  // Node type names are plain names; edge type names are canonical "src:rel:dst".
  enum class Kind { kNode, kEdge };
  // `names[t]` and `ranges[t][p]` = [begin, end): type t's IDs in partition p. Within every
  // partition the types' ranges must follow each other in type order, from the partition's
  // first ID (`bounds[p]`) to its last (`bounds[p + 1]`).
  static absl::StatusOr<TypeMap> Make(Kind kind, std::vector<std::string> names,
                                      std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges,
                                      const std::vector<int64_t>& bounds);
  // One type owning all of every partition: "_N" for nodes, "_N:_E:_N" for edges. Fails as Make
  // does when `bounds` are not ascending.
  static absl::StatusOr<TypeMap> Single(Kind kind, const std::vector<int64_t>& bounds);

  int num_types() const { return static_cast<int>(names_.size()); }
  int num_parts() const { return num_parts_; }
  const std::string& name(int type) const { return names_[type]; }
  const std::vector<std::string>& names() const { return names_; }
  // The type named `name`; NOT_FOUND lists the types.
  absl::StatusOr<int> TypeId(std::string_view name) const;
  // [begin, end) of `type` in partition `part`, and the type's count over all partitions.
  std::pair<int64_t, int64_t> Range(int type, int part) const;
  int64_t count(int type) const { return typewise_start_[type].back(); }
  // [begin, end) of `type`'s type-wise IDs in partition `part` (a type's IDs number its nodes
  // partition by partition).
  std::pair<int64_t, int64_t> TypeWiseRange(int type, int part) const {
    return {typewise_start_[type][part], typewise_start_[type][part + 1]};
  }

  // The type of ID `id`, and its type-wise ID; `id` must be in [0, total IDs). O(log(K * T)).
  std::pair<int, int64_t> ToTypeWise(int64_t id) const;
  // The ID of the type-wise ID `typewise` of `type`; requires 0 <= typewise < count(type).
  int64_t ToHomogeneous(int type, int64_t typewise) const;

 private:
  TypeMap() = default;
  std::vector<std::string> names_;
  int num_parts_ = 0;
  // Every (partition, type) range in ID order: starts_[i] is its first ID, segment_type_[i] its
  // type and segment_typewise_[i] the type-wise ID of that first ID.
  std::vector<int64_t> starts_;
  std::vector<int> segment_type_;
  std::vector<int64_t> segment_typewise_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges_;  // [type][part]
  std::vector<std::vector<int64_t>> typewise_start_;  // [type][part]: K+1 running counts
};

}  // namespace fanout::core
