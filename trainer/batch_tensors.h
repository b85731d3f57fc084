// A sampler::MiniBatch as LibTorch tensors on one device: the form the models consume.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/minibatch.h"

namespace fanout::trainer {

// Named tensors of one domain (a block's per-edge fields, a batch's per-input-node or per-seed
// fields): sampler/batch_fields.h's Fields as tensors, in the batch's order, each [count] or
// [count, width], float32 or int64 (int32 fields are widened).
class TensorFields {
 public:
  // Field `name`, or an undefined tensor when there is none.
  const at::Tensor& Get(std::string_view name) const;
  // Sets field `name`, replacing one of that name; an undefined tensor removes it.
  void Set(std::string_view name, at::Tensor t);

  std::vector<std::pair<std::string, at::Tensor>>::iterator begin() { return fields_.begin(); }
  std::vector<std::pair<std::string, at::Tensor>>::iterator end() { return fields_.end(); }
  std::vector<std::pair<std::string, at::Tensor>>::const_iterator begin() const {
    return fields_.begin();
  }
  std::vector<std::pair<std::string, at::Tensor>>::const_iterator end() const {
    return fields_.end();
  }

 private:
  std::vector<std::pair<std::string, at::Tensor>> fields_;
};

// One block (message-flow graph), in CSC form and as edge lists. Edge e runs from source node
// src[e] (an index into the block's source nodes) to destination node dst[e] (an index into its
// destination nodes, which are the first num_dst source nodes). Edges are grouped by destination
// in increasing order (the sampler's CSC order): destination j owns edges indptr[j] ..
// indptr[j + 1] - 1, so dst is non-decreasing and in_degree[j] = indptr[j + 1] - indptr[j].
// Multi-edges are kept and count once each.
struct BlockTensors {
  at::Tensor indptr;     // int64 [num_dst + 1]
  at::Tensor src;        // int64 [num_edges]: the CSC's indices
  at::Tensor dst;        // int64 [num_edges], non-decreasing
  at::Tensor in_degree;  // int64 [num_dst]; may be 0
  // Optional int64 [num_src]: each source's out-degree in the whole graph, for layers that
  // normalise by it (GCN). Undefined (mini-batches): the layer counts the source's edges in the
  // block, as DGL does. Full-graph inference sets it, so that its blocks, which hold only a
  // batch of destinations, normalise as the whole graph does.
  at::Tensor out_degree;
  // The block's per-edge fields, each [num_edges] or [num_edges, width]: e.g. "edge_weight"
  // (fanout-train --edge-weight FIELD), "edge_feat" (--edge-feature FIELD, for scripted models:
  // block["edge_feat"]), "etype" (typed graphs). Scripted models get each in their block dict
  // under its name.
  TensorFields fields;
  // The two fields the built-in models read. edge_weight: float32 [num_edges], multiplied into
  // the messages as DGL's layers do with `edge_weight`; undefined: all 1. etype: int64
  // [num_edges], each edge's relation (an index of the config's edge types); undefined on a graph
  // with one edge type.
  const at::Tensor& edge_weight() const { return fields.Get(sampler::kEdgeWeight); }
  const at::Tensor& etype() const { return fields.Get(sampler::kEdgeType); }
  // Typed graphs: int64 [num_src], each source node's type (a view of BatchTensors::input_types():
  // a block's sources are a prefix of the batch's inputs). Undefined on a graph with one type.
  at::Tensor src_type;
  // Typed blocks: the destinations as runs of consecutive nodes of one type (the sampler groups
  // each hop's new nodes by type, so a block has a few runs), each with the range of its edges
  // and the relations they use, ascending. Host data whatever the device. Empty when the batch
  // has no node types; the R-GCN layer then treats the block as one run.
  struct DstRun {
    int64_t begin = 0, end = 0;            // destinations [begin, end)
    int64_t edge_begin = 0, edge_end = 0;  // their edges, contiguous in the CSC
    std::vector<int64_t> relations;
  };
  std::vector<DstRun> dst_runs;
  int64_t num_src = 0;
  int64_t num_dst = 0;

  int64_t num_edges() const { return src.defined() ? src.size(0) : 0; }
};

struct BatchTensors {
  std::vector<BlockTensors> blocks;  // blocks[0] = input layer ... blocks.back() = output layer
  // float32 [blocks[0].num_src, feature dim]. On CPU, features stored as float32 borrow the
  // mini-batch's Rows memory (kept alive through Rows::owner) instead of copying it: treat it as
  // read-only. Other stored dtypes (float16, integers, float64) are converted here, after the
  // copy to the device.
  at::Tensor features;
  at::Tensor labels;  // int64 [blocks.back().num_dst]; undefined when the batch has no labels
  // The batch's per-input-node and per-seed fields.
  TensorFields input_fields, seed_fields;
  // Typed graphs: int64 [blocks[0].num_src], each input node's type; `features` then holds the
  // rows of the input nodes whose type has features, in input order (sampler/minibatch.h).
  // Undefined on a graph with one node type.
  const at::Tensor& input_types() const { return input_fields.Get(sampler::kInputTypes); }
  int64_t cached_inputs = 0;  // input nodes whose features came from the feature cache
};

class DeviceUploader;
class FeatureCache;

struct ToTensorsOptions {
  c10::Device device = c10::Device(c10::kCPU);  // where every tensor goes
  // When > 0, every label must lie in [0, num_classes) (a bad label is INVALID_ARGUMENT here
  // rather than an opaque failure inside the loss, or a device-side assert on CUDA).
  int64_t num_classes = 0;
  // The trainer's feature cache, which batches made with its nodes (SamplerOptions::cached_nodes)
  // leave rows to (MiniBatch::feature_slots); the features are then assembled on its device.
  const FeatureCache* feature_cache = nullptr;
  // For a CUDA device: copies through pinned memory on a side stream without blocking the host
  // (device_upload.h). Null: the same through an uploader made for this call.
  DeviceUploader* uploader = nullptr;
};

// Checks the mini-batch contract (sampler/minibatch.h): indptr shape and monotonicity, source
// indices in range, destinations listed first, blocks chained (blocks[l + 1]'s source nodes are
// blocks[l]'s destination nodes, in order), one feature row per input node (or, with feature
// slots, one per slot of -1), one label per seed.
// INVALID_ARGUMENT names the block, the entry and what was expected.
absl::Status ValidateMiniBatch(const sampler::MiniBatch& batch, int64_t num_classes = 0);

// Validates `batch` and converts it. On CPU nothing is copied: the index arrays, edge weights
// and features are borrowed (each tensor holds what keeps its memory alive: the batch file of a
// sampler process, or the sampler's own vectors), so treat every tensor as read-only; a CUDA
// device gets one copy of each. Per-edge destinations come from the sampler (Block::dst) and
// are derived here only for blocks built without them; in-degrees are derived from indptr. Rows
// without an owner are copied, since nothing would keep their memory alive. Every tensor of a
// batch goes to a device in one Upload (options.uploader), features in their stored dtype,
// converted to float32 there. Thread-safe (an uploader is not: one thread per uploader).
absl::StatusOr<BatchTensors> ToTensors(const sampler::MiniBatch& batch,
                                       const ToTensorsOptions& options = {});

}  // namespace fanout::trainer
