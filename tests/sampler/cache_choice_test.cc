// Which nodes a feature cache holds (sampler/cache_choice.h): the ranking by presampled counts
// and in-degree, and the presampling that counts the inputs of the batches training draws.
#include "sampler/cache_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "core/partition_config.h"
#include "sampler/dist_graph.h"
#include "tests/testing/testing.h"

namespace fanout::sampler {
namespace {

TEST(CacheChoiceTest, ByInDegreeTiesByLowerId) {
  const std::vector<int64_t> degree = {3, 9, 0, 9, 5, 1, 5};
  EXPECT_EQ(ChooseHottest({}, degree, 4), (std::vector<int64_t>{1, 3, 4, 6}));
  EXPECT_EQ(ChooseHottest({}, degree, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(ChooseHottest({}, degree, 0), (std::vector<int64_t>{}));
  EXPECT_EQ(ChooseHottest({}, degree, -3), (std::vector<int64_t>{}));
  EXPECT_EQ(ChooseHottest({}, degree, 100).size(), degree.size());
}

// Presampled counts come first; in-degree orders equal counts (and the nodes never counted).
TEST(CacheChoiceTest, MostCountedFirstThenByInDegree) {
  const std::vector<int64_t> degree = {3, 9, 0, 9, 5, 1, 5};
  const std::vector<int64_t> counts = {0, 0, 7, 2, 0, 2, 0};
  EXPECT_EQ(ChooseHottest(counts, degree, 3), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(ChooseHottest(counts, degree, 5), (std::vector<int64_t>{2, 3, 5, 1, 4}));
  EXPECT_EQ(ChooseHottest(counts, degree, 7), (std::vector<int64_t>{2, 3, 5, 1, 4, 6, 0}));
}

// Presampling counts exactly the input nodes of the batches training draws (a batch is a pure
// function of options, seeds, epoch and step). Chosen by those counts, a cache holds the most
// inputs of those batches that any set of its size can; chosen by in-degree, for a trainer whose
// seeds are one corner of the graph, far fewer.
TEST(CacheChoiceTest, PresamplingCountsTheInputsOfTheTrainingBatches) {
  fanout::testing::TempDir dir;
  const std::string path = fanout::testing::PartitionRandom(dir, {.num_nodes = 600, .num_edges = 3000, .feat_dim = 4}, 1);
  auto config = core::LoadPartitionConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  auto graph = DistGraph::Open(*config, DistGraphOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const int64_t n = (*graph)->num_nodes();
  SamplerOptions so;
  so.fanouts = {4, 3};
  so.batch_size = 16;
  so.feature_field = "";
  so.label_field = "";
  std::vector<int64_t> seeds(120);
  std::iota(seeds.begin(), seeds.end(), 200);  // one trainer's share: a corner of the graph
  MiniBatchSampler presampler(graph->get(), so, seeds);
  ASSERT_EQ(presampler.steps_per_epoch(), 8);
  auto counts = PresampleInputCounts(&presampler, 100, n);  // more than an epoch: all 8 steps
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(static_cast<int64_t>(counts->size()), n);

  MiniBatchSampler training(graph->get(), so, seeds);
  std::vector<int64_t> want(n, 0);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t step = 0; step < training.steps_per_epoch(); ++step) {
    auto mb = training.SampleBlocks(0, step);
    ASSERT_TRUE(mb.ok()) << mb.status();
    batches.push_back(mb->input_nodes().ToVector());
    for (int64_t v : batches.back()) ++want[v];
  }
  EXPECT_EQ(*counts, want);
  auto few = PresampleInputCounts(&presampler, 2, n);
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(std::accumulate(few->begin(), few->end(), int64_t{0}),
            static_cast<int64_t>(batches[0].size() + batches[1].size()));
  auto other_epoch = PresampleInputCounts(&presampler, 100, n, 1);
  ASSERT_TRUE(other_epoch.ok());
  EXPECT_NE(*other_epoch, *counts) << "epoch 1's batches are reshuffled";

  std::vector<int64_t> all(n), degree(n);
  std::iota(all.begin(), all.end(), 0);
  ASSERT_TRUE((*graph)->Degrees(all, core::EdgeDir::kIn, degree.data()).ok());
  auto hits = [&](const std::vector<int64_t>& chosen) {
    const std::unordered_set<int64_t> held(chosen.begin(), chosen.end());
    int64_t h = 0;
    for (const auto& b : batches) h += std::count_if(b.begin(), b.end(), [&](int64_t v) { return held.contains(v); });
    return h;
  };
  std::vector<int64_t> sorted = *counts;
  std::sort(sorted.rbegin(), sorted.rend());
  const int64_t best = std::accumulate(sorted.begin(), sorted.begin() + 60, int64_t{0});
  const int64_t presampled = hits(ChooseHottest(*counts, degree, 60)), by_degree = hits(ChooseHottest({}, degree, 60));
  EXPECT_EQ(presampled, best);
  EXPECT_GT(presampled, 3 * by_degree / 2) << "by degree: " << by_degree;
}

}  // namespace
}  // namespace fanout::sampler
