#include "trainer/batch_tensors.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "base/status.h"
#include "base/strings.h"
#include "trainer/device_upload.h"
#include "trainer/feature_cache.h"
#include "trainer/tensor_convert.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// Every field has one entry per member of its domain (`count` of them, `what` names one), and
// float values are finite. `eids`: the edges' IDs, for naming an edge.
absl::Status ValidateFields(const sampler::Fields& fields, int64_t count, const std::string& what,
                            const sampler::Int64Array* eids = nullptr) {
  for (const sampler::Field& f : fields) {
    if (f.width < 1 || f.num_values() != static_cast<size_t>(count * f.width)) {
      return absl::InvalidArgumentError(StrCat(what, " field '", f.name, "' has ", f.num_values(),
                                               " values for ", count, " entries of width ",
                                               f.width));
    }
    const auto* values = std::get_if<sampler::FloatArray>(&f.values);
    if (values == nullptr) continue;
    for (size_t i = 0; i < values->size(); ++i) {
      if (!std::isfinite((*values)[i])) {
        const size_t e = i / static_cast<size_t>(f.width);
        return absl::InvalidArgumentError(
            StrCat(what, " ", e,
                   eids != nullptr && e < eids->size() ? StrCat(" (edge ID ", (*eids)[e], ")") : "",
                   " has ", f.name, " ", (*values)[i], "; field values must be finite"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBlock(const sampler::Block& b, size_t l) {
  const int64_t num_src = b.num_src();
  if (b.num_dst < 0 || b.num_dst > num_src) {
    return absl::InvalidArgumentError(
        StrCat("block ", l, ": num_dst ", b.num_dst, " is not in [0, num_src = ", num_src, "]"));
  }
  if (static_cast<int64_t>(b.indptr.size()) != b.num_dst + 1) {
    return absl::InvalidArgumentError(StrCat("block ", l, ": indptr has ", b.indptr.size(),
                                             " entries, expected num_dst + 1 = ", b.num_dst + 1));
  }
  if (b.indptr.front() != 0 || b.indptr.back() != b.num_edges()) {
    return absl::InvalidArgumentError(StrCat("block ", l, ": indptr runs from ", b.indptr.front(),
                                             " to ", b.indptr.back(), ", expected 0 to ",
                                             b.num_edges(), " (the number of indices)"));
  }
  for (int64_t j = 0; j < b.num_dst; ++j) {
    if (b.indptr[j] > b.indptr[j + 1]) {
      return absl::InvalidArgumentError(StrCat("block ", l, ": indptr decreases at destination ", j,
                                               " (", b.indptr[j], " > ", b.indptr[j + 1], ")"));
    }
  }
  for (int64_t e = 0; e < b.num_edges(); ++e) {
    if (b.indices[e] < 0 || b.indices[e] >= num_src) {
      return absl::InvalidArgumentError(StrCat("block ", l, ": indices[", e, "] = ", b.indices[e],
                                               " is not a source index in [0, ", num_src, ")"));
    }
  }
  return ValidateFields(b.fields, b.num_edges(), StrCat("block ", l, ": edge"), &b.eids);
}

// A CPU tensor over `a`'s memory, without a copy: the deleter holds what keeps it alive
// (sampler/array.h). Read-only, like the features: a sampler process's batch file is mapped so.
template <typename T>
at::Tensor View(const sampler::Array<T>& a, at::IntArrayRef shape, at::ScalarType type) {
  if (a.empty()) return at::empty(shape, type);
  return at::from_blob(const_cast<T*>(a.data()), shape, [owner = a.Share()](void*) {}, at::TensorOptions().dtype(type));
}

// BlockTensors::dst_runs of a typed block whose destinations have types `types` (a prefix of the
// batch's input types).
std::vector<BlockTensors::DstRun> TypeRuns(const sampler::Block& b, const int32_t* types) {
  std::vector<BlockTensors::DstRun> runs;
  const int64_t* indptr = b.indptr.data();
  const int32_t* etype = b.etype().data();
  std::vector<char> used;
  for (int64_t v = 0; v < b.num_dst;) {
    BlockTensors::DstRun run;
    run.begin = v;
    while (v < b.num_dst && types[v] == types[run.begin]) ++v;
    run.end = v;
    run.edge_begin = indptr[run.begin];
    run.edge_end = indptr[run.end];
    std::fill(used.begin(), used.end(), 0);
    for (int64_t e = run.edge_begin; e < run.edge_end; ++e) {
      const size_t r = static_cast<size_t>(etype[e]);
      if (r >= used.size()) used.resize(r + 1, 0);
      used[r] = 1;
    }
    for (size_t r = 0; r < used.size(); ++r) {
      if (used[r]) run.relations.push_back(static_cast<int64_t>(r));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

// Host tensors of `fields` (each of its shape, [count] or [count, width]; int32 widened to int64),
// in order.
TensorFields FieldTensors(const sampler::Fields& fields) {
  TensorFields out;
  for (const sampler::Field& f : fields) {
    const std::vector<int64_t> shape = f.shape();
    at::Tensor t = std::visit(
        [&](const auto& a) {
          using T = typename std::decay_t<decltype(a)>::value_type;
          return View(a, shape, ScalarTypeOf(core::DTypeOf<T>()));
        },
        f.values);
    out.Set(f.name, t.scalar_type() == at::kInt ? t.to(at::kLong) : t);
  }
  return out;
}

// `types`: the batch's input node types, or null. On the host; ToTensors moves it.
BlockTensors ConvertBlock(const sampler::Block& b, const int32_t* types) {
  BlockTensors out;
  out.num_src = b.num_src();
  out.num_dst = b.num_dst;
  const int64_t ne = b.num_edges();
  out.indptr = View(b.indptr, {b.num_dst + 1}, at::kLong);
  out.src = View(b.indices, {ne}, at::kLong);
  const int64_t* indptr = b.indptr.data();
  if (static_cast<int64_t>(b.dst.size()) == ne) {
    out.dst = View(b.dst, {ne}, at::kLong);  // computed by the sampler
  } else {  // a block built by hand
    out.dst = at::empty({ne}, at::kLong);
    int64_t* dst = out.dst.data_ptr<int64_t>();
    for (int64_t j = 0; j < b.num_dst; ++j) {
      for (int64_t e = indptr[j]; e < indptr[j + 1]; ++e) dst[e] = j;
    }
  }
  out.in_degree = at::empty({b.num_dst}, at::kLong);
  int64_t* deg = out.in_degree.data_ptr<int64_t>();
  for (int64_t j = 0; j < b.num_dst; ++j) deg[j] = indptr[j + 1] - indptr[j];
  out.fields = FieldTensors(b.fields);
  if (types != nullptr && b.fields.Has(sampler::kEdgeType)) out.dst_runs = TypeRuns(b, types);
  return out;
}

// The fetched feature rows as a host tensor of their stored dtype: a view of `f` (no copy) when
// something keeps its memory alive, else a copy. ToTensors moves it (float16: half the bytes
// cross to a device) and converts it to float32.
at::Tensor HostFeatures(const sampler::Rows& f) {
  const auto options = at::TensorOptions().dtype(ScalarTypeOf(f.dtype));
  if (f.rows * f.cols == 0) return at::empty({f.rows, f.cols}, options);
  void* data = const_cast<void*>(f.data);
  // The deleter holds a reference to the owner, so the memory outlives every view of it.
  if (f.owner != nullptr) return at::from_blob(data, {f.rows, f.cols}, [owner = f.owner](void*) {}, options);
  return at::from_blob(data, {f.rows, f.cols}, options).clone();  // nothing would keep f's memory alive
}

}  // namespace

const at::Tensor& TensorFields::Get(std::string_view name) const {
  static const at::Tensor kNone;
  for (const auto& [n, t] : fields_) {
    if (n == name) return t;
  }
  return kNone;
}

void TensorFields::Set(std::string_view name, at::Tensor t) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (it->first != name) continue;
    if (t.defined()) {
      it->second = std::move(t);
    } else {
      fields_.erase(it);
    }
    return;
  }
  if (t.defined()) fields_.emplace_back(std::string(name), std::move(t));
}

// More relations than any graph has (a corrupt batch's edge types would size tables by them).
constexpr int32_t kMaxRelations = 1 << 16;

absl::Status ValidateMiniBatch(const sampler::MiniBatch& batch, int64_t num_classes) {
  if (batch.blocks.empty()) return absl::InvalidArgumentError("mini-batch has no blocks");
  for (size_t l = 0; l < batch.blocks.size(); ++l) {
    const sampler::Block& b = batch.blocks[l];
    if (absl::Status s = ValidateBlock(b, l); !s.ok()) return s;
    if (l == 0) continue;
    const sampler::Block& below = batch.blocks[l - 1];
    if (b.num_src() != below.num_dst) {
      return absl::InvalidArgumentError(StrCat("block ", l, " has ", b.num_src(),
                                               " source nodes, but block ", l - 1, " has ",
                                               below.num_dst, " destination nodes"));
    }
    for (int64_t i = 0; i < b.num_src(); ++i) {
      if (b.src_nodes[i] != below.src_nodes[i]) {
        return absl::InvalidArgumentError(StrCat("block ", l, ": source node ", i, " is ",
                                                 b.src_nodes[i], " but destination node ", i,
                                                 " of block ", l - 1, " is ", below.src_nodes[i]));
      }
    }
  }
  const sampler::Rows& f = batch.features;
  const int64_t num_inputs = batch.blocks.front().num_src();
  const sampler::Int64Array& slots = batch.feature_slots;
  if (!slots.empty() && static_cast<int64_t>(slots.size()) != num_inputs) {
    return absl::InvalidArgumentError(
        StrCat("the batch has ", slots.size(), " feature cache slots for ", num_inputs, " input nodes"));
  }
  RETURN_IF_ERROR(ValidateFields(batch.input_fields, num_inputs, "input node"));
  RETURN_IF_ERROR(ValidateFields(batch.seed_fields, batch.blocks.back().num_dst, "seed"));
  const bool typed = batch.input_fields.Has(sampler::kInputTypes);
  if (typed) {
    // Rows for the input nodes whose type has features (those the task's input layer counts).
    for (size_t l = 0; l < batch.blocks.size(); ++l) {
      const sampler::Block& b = batch.blocks[l];
      if (!b.fields.Has(sampler::kEdgeType)) {
        return absl::InvalidArgumentError(
            StrCat("block ", l, " of a typed batch has no edge types"));
      }
      const sampler::Int32Array& etype = b.etype();
      for (size_t e = 0; e < etype.size(); ++e) {
        if (etype[e] < 0 || etype[e] >= kMaxRelations) {
          return absl::InvalidArgumentError(
              StrCat("block ", l, ": edge ", e, " has edge type ", etype[e]));
        }
      }
    }
    if (f.rows < 0 || f.rows > num_inputs || (f.rows > 0 && (f.cols <= 0 || f.data == nullptr))) {
      return absl::InvalidArgumentError(StrCat("features are ", f.rows, " x ", f.cols, " for a typed batch of ",
                                               num_inputs, " input nodes"));
    }
  }
  const int64_t fetched = slots.empty() ? num_inputs : std::count(slots.begin(), slots.end(), int64_t{-1});
  if (typed) {
  } else if (f.rows != fetched || f.cols < 0 || (f.data == nullptr && f.rows * f.cols > 0)) {
    return absl::InvalidArgumentError(StrCat(
        "features are ", f.rows, " x ", f.cols, (f.data == nullptr ? " without data" : ""), ", expected one row per ",
        slots.empty() ? "input node (" : "input node the feature cache does not hold (", fetched,
        ")"));
  }
  const sampler::Block& top = batch.blocks.back();
  const int64_t num_seeds = top.num_dst;
  if (!batch.seeds.empty()) {
    if (static_cast<int64_t>(batch.seeds.size()) != num_seeds) {
      return absl::InvalidArgumentError(StrCat("mini-batch has ", batch.seeds.size(),
                                               " seeds but the output block has ", num_seeds,
                                               " destination nodes"));
    }
    for (int64_t i = 0; i < num_seeds; ++i) {
      if (batch.seeds[i] != top.src_nodes[i]) {
        return absl::InvalidArgumentError(StrCat("seed ", i, " is ", batch.seeds[i],
                                                 " but output node ", i, " is ", top.src_nodes[i]));
      }
    }
  }
  if (!batch.labels.empty() && static_cast<int64_t>(batch.labels.size()) != num_seeds) {
    return absl::InvalidArgumentError(
        StrCat("mini-batch has ", batch.labels.size(), " labels for ", num_seeds, " output nodes"));
  }
  if (num_classes > 0) {
    for (size_t i = 0; i < batch.labels.size(); ++i) {
      if (batch.labels[i] < 0 || batch.labels[i] >= num_classes) {
        return absl::InvalidArgumentError(StrCat("label ", i, " (node ", top.src_nodes[i], ") is ",
                                                 batch.labels[i], ", not in [0, ", num_classes,
                                                 ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BatchTensors> ToTensors(const sampler::MiniBatch& batch,
                                       const ToTensorsOptions& options) {
  if (absl::Status s = ValidateMiniBatch(batch, options.num_classes); !s.ok()) return s;
  const sampler::Int64Array& slots = batch.feature_slots;
  const FeatureCache* cache = options.feature_cache;
  if (!slots.empty() && cache == nullptr) {
    return absl::InvalidArgumentError("the batch leaves input rows to a feature cache, but the trainer has none");
  }
  if (!slots.empty() && cache->rows().device() != options.device) {
    return absl::InvalidArgumentError(StrCat("the feature cache is on ", cache->rows().device().str(),
                                             ", the batch goes to ", options.device.str()));
  }
  if (options.uploader != nullptr && options.uploader->device() != options.device) {
    return absl::InvalidArgumentError(StrCat("the uploader copies to ", options.uploader->device().str(),
                                             ", the batch goes to ", options.device.str()));
  }
  // Everything as host tensors first (views of the batch's memory), then to the device at once.
  ASSIGN_OR_RETURN(BatchTensors out, CatchTorch("converting a mini-batch to tensors", [&] {
    BatchTensors out;
    out.blocks.reserve(batch.blocks.size());
    const sampler::Int32Array& types = batch.input_types();
    for (const sampler::Block& b : batch.blocks)
      out.blocks.push_back(ConvertBlock(b, types.empty() ? nullptr : types.data()));
    out.features = HostFeatures(batch.features);
    out.input_fields = FieldTensors(batch.input_fields);
    out.seed_fields = FieldTensors(batch.seed_fields);
    if (!batch.labels.empty()) out.labels = Int64Tensor(batch.labels);
    return out;
  }));
  // Each block's sources are a prefix of the inputs: their types are a view (on the device too).
  // Each block's sources' types (on the device): a prefix of the inputs'.
  auto set_src_types = [&out] {
    if (!out.input_types().defined()) return;
    for (BlockTensors& b : out.blocks) b.src_type = out.input_types().narrow(0, 0, b.num_src);
  };
  FeatureCache::Placement placement;
  if (!slots.empty()) {
    ASSIGN_OR_RETURN(placement, cache->Place(View(slots, {static_cast<int64_t>(slots.size())}, at::kLong),
                                             batch.features.rows, batch.features.cols));
    out.cached_inputs = placement.hit_pos.size(0);
  }
  RETURN_IF_ERROR(CatchTorch("copying a mini-batch to the device", [&] {
    if (!options.device.is_cpu()) {
      std::vector<at::Tensor*> moved = {&out.features, &out.labels, &placement.hit_pos,
                                        &placement.hit_slot, &placement.miss_pos};
      for (auto* fields : {&out.input_fields, &out.seed_fields}) {
        for (auto& [name, t] : *fields) moved.push_back(&t);
      }
      for (BlockTensors& b : out.blocks) {
        for (at::Tensor* t : {&b.indptr, &b.src, &b.dst, &b.in_degree}) moved.push_back(t);
        for (auto& [name, t] : b.fields) moved.push_back(&t);
      }
      std::vector<at::Tensor> host;
      for (at::Tensor* t : moved) host.push_back(*t);
      std::vector<at::Tensor> there = options.uploader != nullptr ? options.uploader->Upload(host)
                                                                  : DeviceUploader(options.device).Upload(host);
      for (size_t i = 0; i < moved.size(); ++i) *moved[i] = std::move(there[i]);
    }
    set_src_types();
    // Fetched rows travel in their stored dtype (and codec) and become float32 where they arrived.
    out.features = !slots.empty() ? cache->Gather(placement, out.features, batch.features.codec)
                                  : DecodeFeatures(out.features, batch.features.codec);
  }));
  return out;
}

}  // namespace fanout::trainer
