#include "sampler/cache_choice.h"

#include <algorithm>
#include <numeric>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::sampler {

using base::StrCat;

std::vector<int64_t> ChooseHottest(const std::vector<int64_t>& counts, const std::vector<int64_t>& degree,
                                   int64_t max_rows) {
  const int64_t n = static_cast<int64_t>(degree.size());
  const int64_t k = std::clamp<int64_t>(max_rows, 0, n);
  const bool counted = !counts.empty();
  std::vector<int64_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  auto hotter = [&](int64_t a, int64_t b) {
    if (counted && counts[a] != counts[b]) return counts[a] > counts[b];
    return degree[a] != degree[b] ? degree[a] > degree[b] : a < b;
  };
  std::nth_element(ids.begin(), ids.begin() + k, ids.end(), hotter);
  ids.resize(k);
  std::sort(ids.begin(), ids.end(), hotter);
  return ids;
}

namespace {

// counts[v] += 1 for every input node v of `sample(step)`'s batch, steps [0, steps).
template <typename Sample>
absl::StatusOr<std::vector<int64_t>> CountInputs(int64_t steps, int64_t num_nodes, Sample sample) {
  std::vector<int64_t> counts(num_nodes, 0);
  for (int64_t step = 0; step < steps; ++step) {
    ASSIGN_OR_RETURN(const MiniBatch* mb, sample(step));
    for (int64_t v : mb->input_nodes()) {
      if (v < 0 || v >= num_nodes) {
        return absl::InternalError(StrCat("presampling: input node ", v, " is outside [0, ", num_nodes, ")"));
      }
      ++counts[v];
    }
  }
  return counts;
}

// What presampling reads of the batches: which nodes they take, none of their fields.
void DropFields(SamplerOptions* so) {
  so->feature_field = "";
  so->label_field = "";
  so->edge = {};
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> PresampleInputCounts(MiniBatchSampler* sampler, int64_t steps,
                                                          int64_t num_nodes, int64_t epoch) {
  MiniBatch mb;
  return CountInputs(std::min(steps, sampler->steps_per_epoch()), num_nodes,
                     [&](int64_t step) -> absl::StatusOr<const MiniBatch*> {
                       ASSIGN_OR_RETURN(mb, sampler->SampleBlocks(epoch, step));
                       return &mb;
                     });
}

absl::StatusOr<std::vector<int64_t>> PresampleSeeds(const DistGraph* graph, SamplerOptions so,
                                                    std::vector<int64_t> seeds, int64_t steps, int64_t epoch) {
  DropFields(&so);
  MiniBatchSampler presampler(graph, std::move(so), std::move(seeds));
  return PresampleInputCounts(&presampler, steps, graph->num_nodes(), epoch);
}

absl::StatusOr<std::vector<int64_t>> PresampleLinkSeeds(const DistGraph* graph, LinkSamplerOptions lo,
                                                        SeedArray edges, int64_t steps, int64_t epoch) {
  DropFields(&lo.sampling);
  ASSIGN_OR_RETURN(std::unique_ptr<LinkBatchSampler> presampler,
                   LinkBatchSampler::Create(graph, std::move(lo), std::move(edges)));
  LinkMiniBatch b;
  return CountInputs(std::min(steps, presampler->steps_per_epoch()), graph->num_nodes(),
                     [&](int64_t step) -> absl::StatusOr<const MiniBatch*> {
                       ASSIGN_OR_RETURN(b, presampler->SampleBlocks(epoch, step));
                       return &b.nodes;
                     });
}

}  // namespace fanout::sampler
