// What a sampler hands a trainer: one mini-batch of a multi-layer neighbour sample, as DGL's
// blocks (message-flow graphs), with the input nodes' features (in their stored dtype) and the
// seeds' labels.
//
// Layer order follows DGL: blocks[0] is the input layer (its source nodes are the input nodes
// whose features are fetched), blocks.back() is the output layer (its destination nodes are the
// seeds). blocks[l + 1].src_nodes == blocks[l].dst nodes, i.e. the first blocks[l].num_dst
// entries of blocks[l].src_nodes. No LibTorch here: the trainer wraps these arrays in tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/check.h"
#include "core/dtype.h"
#include "core/feature_codec.h"
#include "sampler/array.h"
#include "sampler/batch_fields.h"

namespace fanout::sampler {

// One layer. Node IDs are global (new) IDs; edges are stored by destination (CSC) with
// compacted (local) source indices. The arrays are sampler::Arrays (sampler/array.h): written by
// the sampler, borrowed by the trainer from a sampler process's batch file, wrapped in tensors
// without a copy.
struct Block {
  // Source nodes, global IDs, distinct. The first num_dst of them are the destination nodes, in
  // order (DGL: "a block's source nodes list its destination nodes first").
  Int64Array src_nodes;
  int64_t num_dst = 0;
  // Destination j's sampled in-edges are [indptr[j], indptr[j + 1]); indptr has num_dst + 1
  // entries. indices[e] is the edge's source as an index into src_nodes; eids[e] its global
  // edge ID.
  Int64Array indptr;
  Int64Array indices;
  Int64Array eids;
  // Per edge, its destination j (what the models index by besides the CSC), computed once by the
  // sampler; empty in blocks built by hand, for which the trainer derives it from indptr.
  Int64Array dst;
  // Per edge, optional named fields (sampler/batch_fields.h), each with one entry per edge:
  // kEdgeWeight (float32, the sampler's SamplerOptions::edge.weight_field), kEdgeFeat (float32 x
  // width, SamplerOptions::edge.feature_field, edge-major) and, on a typed graph, kEdgeType
  // (int32: each edge's relation, an index of the partition config's edge types; edges stay
  // grouped by destination, and within a destination come relation by relation).
  Fields fields;

  const FloatArray& edge_weight() const { return fields.Get<float>(kEdgeWeight); }
  const Int32Array& etype() const { return fields.Get<int32_t>(kEdgeType); }
  int64_t num_src() const { return static_cast<int64_t>(src_nodes.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
};

// A row-major matrix of `dtype` (the stored dtype of the field it was gathered from: float16
// features cross from sampler to trainer at two bytes each, and the trainer converts). Its
// memory may live in the heap or in a shared-memory mapping handed over by a sampler process;
// `owner` keeps it alive (a tensor can borrow `data`).
struct Rows {
  std::shared_ptr<const void> owner;
  const void* data = nullptr;
  core::DType dtype = core::DType::kFloat32;
  int64_t rows = 0;
  int64_t cols = 0;  // values per stored row
  // Compressed features (core/feature_codec.h): the trainer decodes each row into cols - 8
  // (int8) or cols (bfloat16) float32 values.
  core::FeatureCodec codec = core::FeatureCodec::kNone;

  size_t row_bytes() const { return static_cast<size_t>(cols) * core::DTypeSize(dtype); }
  size_t bytes() const { return static_cast<size_t>(rows) * row_bytes(); }
  // The rows as T; CHECK-fails unless T is the dtype.
  template <typename T>
  const T* as() const {
    FANOUT_CHECK(core::DTypeOf<T>() == dtype);
    return static_cast<const T*>(data);
  }
};

// Link prediction's pairs over a batch's seeds (sampler/link_sampler.h): positive i is
// (seeds[pos_src[i]], seeds[pos_dst[i]]), the stored edge eids[i]; its negatives are rows
// i * k .. (i + 1) * k - 1 of neg_src / neg_dst (k negatives per positive, neg_src[j] = pos_src[i]).
struct LinkPairs {
  std::vector<int64_t> pos_src, pos_dst, neg_src, neg_dst;
  std::vector<int64_t> eids;  // the positive edges' global IDs
};

struct MiniBatch {
  int64_t epoch = 0;
  int64_t step = 0;                  // 0-based, within the epoch
  std::vector<int64_t> seeds;        // output nodes, global IDs (== blocks.back()'s dst nodes)
  std::vector<Block> blocks;         // blocks[0] = input layer ... blocks.back() = output layer
  Rows features;                     // one row per input node (blocks[0].src_nodes), or see below
  // With a trainer's feature cache (SamplerOptions::cached_nodes): per input node, the cache slot
  // that holds its features, or -1 when its row is in `features`, which then holds only those
  // rows, in input order (the misses: only they were fetched). Empty without a cache. A sampler
  // process's batch that leaves the rows of its machine's shared memory to the trainer
  // (sampler/machine_rows.h) uses the same form with MachineRows' slots; the loader fills the
  // rows in and empties it before the batch reaches anyone.
  Int64Array feature_slots;
  // Per input node, optional named fields: on a typed graph kInputTypes (int32: each input
  // node's type, an index of the config's node types). On a typed graph `features` holds the rows
  // of the input nodes whose type has the feature field, in input order; the others have none (a
  // model gives them learnable embeddings, or zeros).
  Fields input_fields;
  std::vector<int64_t> labels;       // one per seed; empty when the loader fetches no labels
  Fields seed_fields;                // per seed, optional named fields
  // Where the producer spent its time on this batch (for the trainer's epoch breakdown):
  // sampling the blocks (labels included) and gathering the input features.
  double sample_seconds = 0;
  double fetch_seconds = 0;

  const Int64Array& input_nodes() const { return blocks.front().src_nodes; }
  const Int32Array& input_types() const { return input_fields.Get<int32_t>(kInputTypes); }
};

}  // namespace fanout::sampler
