// The device feature cache (trainer/feature_cache.h): which nodes it picks, and that a batch
// assembled from its rows and the sampler's misses equals the plain gather, on the CPU here and
// on a GPU where there is one (tests/trainer/gpu_test.cc runs the same check on CUDA).
#include "trainer/feature_cache.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "base/status.h"
#include "core/partition_config.h"
#include "sampler/cache_choice.h"
#include "sampler/minibatch_sampler.h"
#include "tests/testing/testing.h"
#include "tests/trainer/feature_cache_testing.h"
#include "trainer/batch_tensors.h"

namespace fanout::trainer {
namespace {

class FeatureCacheGraphTest : public ::testing::Test {
 protected:
  void Open(const fanout::testing::RandomGraphSpec& spec) {
    const std::string path = fanout::testing::PartitionRandom(dir_, spec, 1);
    ASSERT_FALSE(path.empty());
    auto config = core::LoadPartitionConfig(path);
    ASSERT_TRUE(config.ok());
    auto g = sampler::DistGraph::Open(*config, sampler::DistGraphOptions{});
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = std::move(*g);
  }
  fanout::testing::TempDir dir_;
  std::unique_ptr<sampler::DistGraph> graph_;
};

TEST_F(FeatureCacheGraphTest, BuildKeepsTheHottestRowsWithinTheBudget) {
  Open({.num_nodes = 400, .num_edges = 3000, .feat_dim = 8});
  FeatureCacheOptions o;
  o.max_bytes = 50 * 8 * 4 + 31;  // 50 float32 rows of 8, and not quite another
  auto cache = FeatureCache::Build(*graph_, o, c10::Device(c10::kCPU));
  ASSERT_TRUE(cache.ok()) << cache.status();
  ASSERT_EQ((*cache)->size(), 50);
  EXPECT_EQ((*cache)->bytes(), 50 * 8 * 4);
  const std::vector<int64_t>& ids = (*cache)->nodes()->ids();
  std::vector<int64_t> all(graph_->num_nodes()), degree(graph_->num_nodes());
  std::iota(all.begin(), all.end(), 0);
  ASSERT_TRUE(graph_->Degrees(all, core::EdgeDir::kIn, degree.data()).ok());
  EXPECT_EQ(ids, sampler::ChooseHottest({}, degree, 50));
  // Each slot holds its node's row, as the graph serves it.
  std::vector<float> want(ids.size() * 8);
  ASSERT_TRUE(graph_->PullNodeRows("feat", ids, reinterpret_cast<char*>(want.data())).ok());
  const at::Tensor rows = (*cache)->rows().contiguous();
  EXPECT_EQ(std::memcmp(rows.data_ptr<float>(), want.data(), want.size() * 4), 0);

  // A budget that holds every row takes every node.
  o.max_bytes = int64_t{1} << 30;
  cache = FeatureCache::Build(*graph_, o, c10::Device(c10::kCPU));
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->size(), graph_->num_nodes());
  // Less than one row, or an unknown field, is an error that names the flag or the field.
  o.max_bytes = 31;
  EXPECT_EQ(FeatureCache::Build(*graph_, o, c10::Device(c10::kCPU)).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.max_bytes = 1 << 20;
  o.field = "no_such_field";
  EXPECT_FALSE(FeatureCache::Build(*graph_, o, c10::Device(c10::kCPU)).ok());
}

// Presampled counts order the choice (sampler::ChooseHottest, tests/sampler/cache_choice_test.cc);
// the cache holds exactly those nodes' rows. Counts that do not cover the graph are refused.
TEST_F(FeatureCacheGraphTest, PresampledCountsChooseTheRows) {
  Open({.num_nodes = 300, .num_edges = 2000, .feat_dim = 4});
  const int64_t n = graph_->num_nodes();
  FeatureCacheOptions o;
  o.max_bytes = 30 * 4 * 4;  // 30 float32 rows of 4
  o.counts.resize(n);
  for (int64_t v = 0; v < n; ++v) o.counts[v] = (v * 7) % 11;
  auto cache = FeatureCache::Build(*graph_, o, c10::Device(c10::kCPU));
  ASSERT_TRUE(cache.ok()) << cache.status();
  std::vector<int64_t> all(n), degree(n);
  std::iota(all.begin(), all.end(), 0);
  ASSERT_TRUE(graph_->Degrees(all, core::EdgeDir::kIn, degree.data()).ok());
  const std::vector<int64_t>& ids = (*cache)->nodes()->ids();
  EXPECT_EQ(ids, sampler::ChooseHottest(o.counts, degree, 30));
  // The 27 nodes counted 10 (v = 3 mod 11), then three counted 9, those with the most in-edges.
  ASSERT_EQ(ids.size(), 30u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(o.counts[ids[i]], i < 27 ? 10 : 9) << i;
  EXPECT_GE(degree[ids[27]], degree[ids[28]]);
  EXPECT_GE(degree[ids[28]], degree[ids[29]]);
  std::vector<float> want(ids.size() * 4);
  ASSERT_TRUE(graph_->PullNodeRows("feat", ids, reinterpret_cast<char*>(want.data())).ok());
  EXPECT_EQ(std::memcmp((*cache)->rows().contiguous().data_ptr<float>(), want.data(), want.size() * 4), 0);
  o.counts.pop_back();
  EXPECT_EQ(FeatureCache::Build(*graph_, o, c10::Device(c10::kCPU)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FeatureCacheGraphTest, BatchesAssembledFromTheCacheEqualThePlainGather) {
  Open({.num_nodes = 500, .num_edges = 4000, .feat_dim = 6});
  testing::ExpectCachedBatchesMatch(*graph_, c10::Device(c10::kCPU));
}

// Place then Gather, on the CPU.
absl::StatusOr<at::Tensor> Assemble(const FeatureCache& cache, const at::Tensor& slots, const at::Tensor& misses) {
  ASSIGN_OR_RETURN(FeatureCache::Placement p, cache.Place(slots, misses.size(0), misses.size(1)));
  return cache.Gather(p, misses);
}

TEST(FeatureCacheAssembleTest, SlotsAndRowsThatDisagreeAreInvalidArgument) {
  FeatureCache cache({7, 3}, at::arange(6, at::kFloat).reshape({2, 3}));
  const at::Tensor slots = at::tensor(std::vector<int64_t>{1, -1, 0}, at::kLong);
  auto x = Assemble(cache, slots, at::full({1, 3}, 9.0f));
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_TRUE(at::equal(*x, at::tensor(std::vector<float>{3, 4, 5, 9, 9, 9, 0, 1, 2}).reshape({3, 3})));
  // float16 misses are converted on the way.
  x = Assemble(cache, slots, at::full({1, 3}, 0.5, at::kHalf));
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->scalar_type(), at::kFloat);
  EXPECT_EQ((*x)[1][2].item<float>(), 0.5f);

  EXPECT_EQ(Assemble(cache, at::tensor(std::vector<int64_t>{2, -1}, at::kLong), at::zeros({1, 3})).status().code(),
            absl::StatusCode::kInvalidArgument);  // slot 2 of 2
  EXPECT_EQ(Assemble(cache, at::tensor(std::vector<int64_t>{-2}, at::kLong), at::zeros({0, 3})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Assemble(cache, slots, at::zeros({2, 3})).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Assemble(cache, slots, at::zeros({1, 4})).status().code(), absl::StatusCode::kInvalidArgument);

  // A batch that leaves rows to a cache cannot be converted without one.
  sampler::MiniBatch mb;
  mb.blocks.push_back(sampler::Block{{7, 3}, 1, {0, 1}, {1}, {0}});
  mb.feature_slots = {0, 1};
  mb.features.rows = 0;
  mb.features.cols = 3;
  EXPECT_EQ(ToTensors(mb).status().code(), absl::StatusCode::kInvalidArgument);
  ToTensorsOptions to;
  to.feature_cache = &cache;
  auto bt = ToTensors(mb, to);
  ASSERT_TRUE(bt.ok()) << bt.status();
  EXPECT_EQ(bt->cached_inputs, 2);
  EXPECT_TRUE(at::equal(bt->features, cache.rows()));
  mb.features.rows = 1;  // a row for an input that has a slot
  EXPECT_EQ(ToTensors(mb, to).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fanout::trainer
