#include "trainer/feature_cache.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "base/status.h"
#include "base/strings.h"
#include "sampler/cache_choice.h"
#include "sampler/minibatch_sampler.h"
#include "trainer/tensor_convert.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using base::StrCat;

absl::StatusOr<std::shared_ptr<const FeatureCache>> FeatureCache::Build(const sampler::DistGraph& graph,
                                                                        const FeatureCacheOptions& options,
                                                                        const c10::Device& device) {
  ASSIGN_OR_RETURN(core::FieldSchema schema, graph.NodeFieldSchema(options.field));
  const auto row_bytes = static_cast<int64_t>(schema.row_bytes());
  if (row_bytes <= 0 || options.max_bytes < row_bytes) {
    return absl::InvalidArgumentError(StrCat("--gpu-cache-bytes ", options.max_bytes, " holds no row of node field '",
                                             options.field, "' (", row_bytes, " bytes each)"));
  }
  const int64_t n = graph.num_nodes();
  const int64_t max_rows = std::min(n, options.max_bytes / row_bytes);
  if (!options.counts.empty() && static_cast<int64_t>(options.counts.size()) != n) {
    return absl::InvalidArgumentError(
        StrCat("feature cache: ", options.counts.size(), " presampled counts for ", n, " nodes"));
  }
  std::vector<int64_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  if (max_rows < n) {
    std::vector<int64_t> degree(n);
    RETURN_IF_ERROR(graph.Degrees(ids, core::EdgeDir::kIn, degree.data()));
    ids = sampler::ChooseHottest(options.counts, degree, max_rows);
  }
  const int64_t cols = schema.row_elems();
  const at::ScalarType type = ScalarTypeOf(schema.dtype);
  ASSIGN_OR_RETURN(at::Tensor rows, CatchTorch("allocating the feature cache", [&] {
                     return at::empty({max_rows, cols}, at::TensorOptions().dtype(type).device(device));
                   }));
  // Pulled in chunks through a host buffer, so the host holds at most one chunk beside the cache.
  constexpr int64_t kChunkRows = int64_t{1} << 16;
  at::Tensor host = at::empty({std::min(max_rows, kChunkRows), cols}, at::TensorOptions().dtype(type));
  for (int64_t start = 0; start < max_rows; start += kChunkRows) {
    const int64_t count = std::min(kChunkRows, max_rows - start);
    RETURN_IF_ERROR(graph.PullNodeRows(options.field, std::span<const int64_t>(ids).subspan(start, count),
                                       static_cast<char*>(host.data_ptr())));
    RETURN_IF_ERROR(CatchTorch("filling the feature cache",
                               [&] { rows.narrow(0, start, count).copy_(host.narrow(0, 0, count)); }));
  }
  return std::make_shared<const FeatureCache>(std::move(ids), std::move(rows), n);
}

FeatureCache::FeatureCache(std::vector<int64_t> ids, at::Tensor rows, int64_t num_nodes) : rows_(std::move(rows)) {
  if (num_nodes < 0) num_nodes = ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end()) + 1;
  nodes_ = sampler::IndexNodes(std::move(ids), num_nodes);
}

int64_t FeatureCache::bytes() const { return static_cast<int64_t>(rows_.numel() * rows_.element_size()); }

absl::StatusOr<FeatureCache::Placement> FeatureCache::Place(const at::Tensor& slots, int64_t fetched,
                                                           int64_t cols) const {
  if (slots.dim() != 1 || slots.scalar_type() != at::kLong || !slots.device().is_cpu()) {
    return absl::InvalidArgumentError("feature slots must be a 1-D int64 CPU tensor");
  }
  const int64_t n = slots.size(0), cached = size();
  const int64_t* s = slots.data_ptr<int64_t>();
  std::vector<int64_t> hit_pos, hit_slot, miss_pos;
  for (int64_t i = 0; i < n; ++i) {
    if (s[i] >= cached || s[i] < -1) {
      return absl::InvalidArgumentError(
          StrCat("input node ", i, " names feature cache slot ", s[i], "; the cache has ", cached, " (or -1: not cached)"));
    }
    if (s[i] >= 0) {
      hit_pos.push_back(i);
      hit_slot.push_back(s[i]);
    } else {
      miss_pos.push_back(i);
    }
  }
  const auto misses = static_cast<int64_t>(miss_pos.size());
  if (fetched != misses || (misses > 0 && cols != rows_.size(1))) {
    return absl::InvalidArgumentError(StrCat("the batch has ", fetched, " fetched feature rows of width ", cols,
                                             "; its slots leave ", misses, " inputs uncached and the cache is ",
                                             rows_.size(1), " wide"));
  }
  Placement p;
  p.hit_pos = Int64Tensor(hit_pos);
  p.hit_slot = Int64Tensor(hit_slot);
  p.miss_pos = Int64Tensor(miss_pos);
  return p;
}

at::Tensor FeatureCache::Gather(const Placement& p, const at::Tensor& misses, core::FeatureCodec codec) const {
  const int64_t n = p.hit_pos.size(0) + p.miss_pos.size(0), cols = rows_.size(1);
  if (codec != core::FeatureCodec::kNone) {
    at::Tensor stored = at::empty({n, cols}, rows_.options());
    if (p.hit_pos.size(0) > 0) stored.index_copy_(0, p.hit_pos, rows_.index_select(0, p.hit_slot));
    if (p.miss_pos.size(0) > 0) stored.index_copy_(0, p.miss_pos, misses.to(rows_.scalar_type()));
    return DecodeFeatures(stored, codec);
  }
  at::Tensor out = at::empty({n, cols}, at::TensorOptions().dtype(at::kFloat).device(rows_.device()));
  if (rows_.device().is_cpu() && rows_.scalar_type() == at::kFloat && rows_.is_contiguous() &&
      (p.miss_pos.size(0) == 0 || (misses.scalar_type() == at::kFloat && misses.is_contiguous()))) {
    // On the CPU, one pass that copies each row where it goes (ATen's index_select then
    // index_copy_ would write the cached rows twice): this is on the trainer's critical path.
    float* to = out.data_ptr<float>();
    const float* cache = rows_.data_ptr<float>();
    const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
    const int64_t *hit_pos = p.hit_pos.data_ptr<int64_t>(), *hit_slot = p.hit_slot.data_ptr<int64_t>();
    for (int64_t k = 0; k < p.hit_pos.size(0); ++k) {
      std::memcpy(to + hit_pos[k] * cols, cache + hit_slot[k] * cols, row_bytes);
    }
    if (p.miss_pos.size(0) > 0) {
      const float* fetched = misses.data_ptr<float>();
      const int64_t* miss_pos = p.miss_pos.data_ptr<int64_t>();
      for (int64_t k = 0; k < p.miss_pos.size(0); ++k) std::memcpy(to + miss_pos[k] * cols, fetched + k * cols, row_bytes);
    }
    return out;
  }
  if (p.hit_pos.size(0) > 0) out.index_copy_(0, p.hit_pos, rows_.index_select(0, p.hit_slot).to(at::kFloat));
  if (p.miss_pos.size(0) > 0) out.index_copy_(0, p.miss_pos, misses.to(at::kFloat));
  return out;
}

}  // namespace fanout::trainer
