// A mini-batch as a list of named arrays: what the batch file (sampler/shm_batch.h) writes and
// reads, and what the checksum (sampler/batch_checksum.h) covers. Each array declares its name,
// its domain (what it has one entry per: seed, positive or negative pair, source node, edge or
// indptr slot of a layer, input node, fetched feature row), its layer (for a layer's domains),
// dtype and width. The structural arrays (seeds, labels, the link pairs, each block's
// src_nodes / indptr / indices / eids / dst, the feature cache slots) have fixed names; every
// other array is a field (sampler/batch_fields.h) of its domain, carried by name.
//
// The schema (docs/architecture.md, "The batch"):
//   domain    per                          structural arrays                 fields
//   seed      seed                         seeds, labels                     MiniBatch::seed_fields
//   positive  positive link pair           pos_src, pos_dst, pair_eids
//   negative  negative link pair           neg_src, neg_dst
//   source    source node of layer l       src_nodes
//   offsets   destination of layer l, +1   indptr
//   edge      edge of layer l              indices, eids, dst                Block::fields
//   input     input node (layer 0 source)  feature_slots MiniBatch::input_fields row       fetched
//   feature row          features (Rows; its codec in the file's header)
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/dtype.h"
#include "sampler/minibatch.h"

namespace fanout::sampler {

enum class Domain : int32_t {
  kSeed = 1,
  kPositive = 2,
  kNegative = 3,
  kSource = 4,
  kOffsets = 5,
  kEdge = 6,
  kInput = 7,
  kRow = 8,
};
std::string_view DomainName(Domain d);
bool IsLayerDomain(Domain d);  // source, offsets, edge: one array per layer

struct ArrayRef {
  std::string_view name;
  Domain domain = Domain::kSeed;
  int32_t layer = -1;  // the layer of a layer's domain, else -1
  core::DType dtype = core::DType::kInt64;
  int64_t width = 1;  // values per entry
  int64_t count = 0;  // entries
  const void* data = nullptr;
  bool matrix = false;  // a row of `width` per entry (Field::matrix)

  size_t bytes() const { return static_cast<size_t>(count * width) * core::DTypeSize(dtype); }
};

// Every array of `mb` (and of a link batch's `pairs`, when given) but its features, in the
// batch file's order: seeds, labels (when any), the seed fields; the pairs; per layer, input
// layer first, src_nodes, indptr, indices, eids, dst and the block's fields; feature_slots (when
// any) and the input fields. `dst` is listed for every block; a block built without it lists
// it without data (whoever copies it derives it from indptr).
std::vector<ArrayRef> BatchArrays(const MiniBatch& mb, const LinkPairs* pairs = nullptr);

// The inverse: array `a`, borrowed from memory `owner` keeps alive, put in its place in `mb`
// (its blocks already sized) or `pairs` (may be null: a link batch's pairs are then dropped).
// Structural arrays go to their members (small ones, seeds, labels and pairs, are copied), any
// other name to its domain's fields. DATA_LOSS, naming the array, for one no batch has: a name
// a domain holds no field of, a dtype fields cannot be, a layer out of range.
absl::Status PlaceArray(const ArrayRef& a, const std::shared_ptr<const void>& owner, MiniBatch* mb,
                        LinkPairs* pairs);

// Checks that every array's entry count fits its domain: the seeds' for seed arrays, layer l's
// sources, edges or destinations + 1, the input nodes', the pairs' (each kind's arrays agree),
// and that every layer has its structural arrays. DATA_LOSS names the array and both counts.
absl::Status CheckArrayCounts(const std::vector<ArrayRef>& arrays, int64_t layers);

}  // namespace fanout::sampler
