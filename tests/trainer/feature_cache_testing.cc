#include "tests/trainer/feature_cache_testing.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <numeric>

#include "sampler/minibatch_sampler.h"
#include "trainer/batch_tensors.h"
#include "trainer/feature_cache.h"

namespace fanout::trainer::testing {

void ExpectCachedBatchesMatch(const sampler::DistGraph& graph, const c10::Device& device) {
  FeatureCacheOptions o;
  auto schema = graph.NodeFieldSchema("feat");
  ASSERT_TRUE(schema.ok());
  o.max_bytes = static_cast<int64_t>(schema->row_bytes()) * (graph.num_nodes() / 3);
  auto built = FeatureCache::Build(graph, o, device);
  ASSERT_TRUE(built.ok()) << built.status();
  const FeatureCache& cache = **built;
  EXPECT_EQ(cache.rows().device(), device);
  // The same nodes with their rows rounded to float16: assembled rows convert to float32.
  const FeatureCache half(cache.nodes()->ids(), cache.rows().to(at::kHalf));

  sampler::SamplerOptions plain;
  plain.fanouts = {5, 4};
  plain.batch_size = 64;
  sampler::SamplerOptions cached = plain;
  cached.cached_nodes = cache.nodes();
  std::vector<int64_t> seeds(graph.num_nodes() / 2);
  std::iota(seeds.begin(), seeds.end(), 0);
  sampler::MiniBatchSampler a(&graph, plain, seeds), b(&graph, cached, seeds);
  int64_t hits = 0, inputs = 0;
  for (int64_t step = 0; step < a.steps_per_epoch(); ++step) {
    auto want = a.Sample(0, step);
    auto got = b.Sample(0, step);
    ASSERT_TRUE(want.ok() && got.ok());
    ToTensorsOptions full{.device = device}, from_cache{.device = device, .feature_cache = &cache};
    auto w = ToTensors(*want, full);
    auto g = ToTensors(*got, from_cache);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->features.device(), device);
    EXPECT_TRUE(at::equal(g->features, w->features)) << "step " << step;
    hits += g->cached_inputs;
    inputs += got->blocks.front().num_src();
    from_cache.feature_cache = &half;
    g = ToTensors(*got, from_cache);
    ASSERT_TRUE(g.ok()) << g.status();
    const at::Tensor hit = at::tensor(got->feature_slots.ToVector())
                               .ge(0).nonzero().flatten().to(device);
    EXPECT_TRUE(at::equal(g->features.index_select(0, hit),
                          w->features.to(at::kHalf).to(at::kFloat).index_select(0, hit)));
  }
  EXPECT_GT(hits, 0);
  EXPECT_LT(hits, inputs);
}

}  // namespace fanout::trainer::testing
