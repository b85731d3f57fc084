// core/disk_rows.h and PartitionStore with StoreOptions::row_cache_bytes (issue 40): node rows
// read from the files through a bounded row cache are the mapped store's rows, the cache keeps
// to its budget, S3-FIFO keeps a hot set through a scan that flushes LRU, and a field read from
// disk refuses pushes by name.
#include "core/disk_rows.h"

#include <random>
#include <set>

#include "core/partition_store.h"
#include "gtest/gtest.h"
#include "partition/partitioner.h"
#include "tests/testing/testing.h"

namespace fanout::core {
namespace {

// Hit rate on hot keys (each read twice in a row, every round: the high-degree nodes of every
// batch) while a scan of keys read once each goes by between rounds, for a cache that can hold
// the hot set four times over but not the hot set and the scan together.
double HotHitRate(CachePolicy policy) {
  constexpr size_t kRow = 64;
  RowCache cache(/*capacity_bytes=*/400 * (kRow + RowCache::kEntryOverhead), policy, /*num_shards=*/1);
  std::vector<char> row(kRow, 7), out(kRow);
  int64_t hot_hits = 0, hot_reads = 0;
  uint64_t scan = 1'000'000;
  for (int round = 0; round < 200; ++round) {
    for (uint64_t k = 0; k < 100; ++k) {  // the hot set, 100 rows
      for (int twice = 0; twice < 2; ++twice) {
        ++hot_reads;
        if (cache.Lookup(k, out.data(), kRow)) {
          ++hot_hits;
        } else {
          cache.Insert(k, row.data(), kRow);
        }
      }
    }
    for (int i = 0; i < 500; ++i, ++scan) {  // 500 rows read once each
      if (!cache.Lookup(scan, out.data(), kRow)) cache.Insert(scan, row.data(), kRow);
    }
  }
  EXPECT_LE(cache.charged_bytes(), cache.capacity_bytes());
  return static_cast<double>(hot_hits) / hot_reads;
}

TEST(RowCacheTest, S3FifoKeepsTheHotRowsThroughAScanThatFlushesLru) {
  const double s3 = HotHitRate(CachePolicy::kS3Fifo), lru = HotHitRate(CachePolicy::kLru);
  EXPECT_GT(s3, 0.95) << "S3-FIFO";
  EXPECT_LT(lru, 0.51) << "LRU: each scan of 500 pushes the 100 hot rows out of 400 slots: only the second reads hit";
}

TEST(RowCacheTest, RowsComeBackAsStoredAndTheBudgetHolds) {
  for (CachePolicy policy : {CachePolicy::kS3Fifo, CachePolicy::kLru}) {
    SCOPED_TRACE(CachePolicyName(policy));
    RowCache cache(64 << 10, policy, 4);
    std::mt19937_64 rng(1);
    std::vector<char> out(100);
    for (int i = 0; i < 20000; ++i) {
      const uint64_t k = rng() % 3000;
      std::vector<char> row(100, static_cast<char>(k % 127));
      if (cache.Lookup(k, out.data(), row.size())) {
        ASSERT_EQ(out, row) << "key " << k;
      } else {
        cache.Insert(k, row.data(), row.size());
      }
      ASSERT_LE(cache.charged_bytes(), cache.capacity_bytes());
    }
    EXPECT_GT(cache.rows(), 100);
    RowCache none(0, policy);
    none.Insert(1, out.data(), out.size());
    EXPECT_FALSE(none.Lookup(1, out.data(), out.size())) << "a zero budget caches nothing";
  }
  EXPECT_EQ(*CachePolicyFromName("lru"), CachePolicy::kLru);
  EXPECT_FALSE(CachePolicyFromName("clock").ok());
}

class DiskStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 900, .num_edges = 4000, .feat_dim = 33});
    partition::PartitionOptions o;
    o.out_dir = dir_.Sub("parts");
    o.num_parts = 2;
    o.quiet = true;
    auto s = partition::PartitionDataset(d, o);
    ASSERT_TRUE(s.ok()) << s.status();
    config_ = *LoadPartitionConfig(s->config_path);
    auto mapped = PartitionStore::Open(config_, 1);
    ASSERT_TRUE(mapped.ok()) << mapped.status();
    mapped_ = std::move(*mapped);
  }

  testing::TempDir dir_;
  PartitionConfig config_;
  std::unique_ptr<PartitionStore> mapped_;
};

TEST_F(DiskStoreTest, RowsFromDiskAreTheMappedRows) {
  for (int64_t budget : {int64_t{0}, int64_t{8} << 10, int64_t{1} << 20}) {
    for (CachePolicy policy : {CachePolicy::kS3Fifo, CachePolicy::kLru}) {
      SCOPED_TRACE(std::to_string(budget) + " bytes, " + CachePolicyName(policy));
      auto disk = PartitionStore::Open(config_, 1, {.row_cache_bytes = budget, .row_cache_policy = policy});
      ASSERT_TRUE(disk.ok()) << disk.status();
      std::mt19937_64 rng(budget);
      for (int round = 0; round < 30; ++round) {
        std::vector<int64_t> ids;
        for (int i = 0; i < 64; ++i) ids.push_back(mapped_->node_start() + static_cast<int64_t>(rng() % mapped_->num_inner_nodes()));
        ids.push_back(ids[3]);  // a repeat
        for (const char* field : {"feat", "label", "train_mask"}) {
          std::string want, got;
          ASSERT_TRUE(mapped_->GatherNodeRows(field, ids, &want).ok());
          ASSERT_TRUE((*disk)->GatherNodeRows(field, ids, &got).ok());
          ASSERT_EQ(got, want) << field;
        }
        // Scattered to rows of a caller's matrix, as a sampler fills a batch.
        const size_t rb = 33 * sizeof(float);
        std::vector<int64_t> dst(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) dst[i] = static_cast<int64_t>(ids.size() - 1 - i);
        std::string want(ids.size() * rb, '\0'), got(ids.size() * rb, '\1');
        ASSERT_TRUE(mapped_->GatherNodeRowsAt("feat", ids, dst, want.data()).ok());
        ASSERT_TRUE((*disk)->GatherNodeRowsAt("feat", ids, dst, got.data()).ok());
        ASSERT_EQ(got, want);
      }
      const RowCacheStats st = (*disk)->row_cache_stats();
      EXPECT_EQ(st.hits + st.misses, 30 * (3 * 65 + 65));
      EXPECT_LE(st.cached_bytes, budget);
      EXPECT_GT(st.bytes_read, 0);
      if (budget == 0) {
        EXPECT_EQ(st.hits, 0);
      }
      if (budget == (int64_t{1} << 20)) {
        EXPECT_GT(st.hits, st.misses / 4) << "a cache that holds it all hits";
      }
      EXPECT_EQ(mapped_->row_cache_stats().hits, 0);
    }
  }
}

TEST_F(DiskStoreTest, AFieldReadFromDiskRefusesPushesAndCreatedFieldsStillWork) {
  auto disk = PartitionStore::Open(config_, 1, {.row_cache_bytes = 1 << 16});
  ASSERT_TRUE(disk.ok());
  const std::vector<int64_t> ids = {mapped_->node_start()};
  std::vector<float> row(33, 1.0f);
  absl::Status s = (*disk)->PushNodeRows("feat", ids, row.data(), row.size() * sizeof(float), PushOp::kAssign);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("feat.npy"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--feature-cache-mb"), std::string::npos) << s;
  bool created = false;
  ASSERT_TRUE((*disk)->CreateNodeField({"emb", DType::kFloat32, {4}}, 1 << 20, &created).ok());
  std::vector<float> four = {1, 2, 3, 4};
  ASSERT_TRUE((*disk)->PushNodeRows("emb", ids, four.data(), 16, PushOp::kAssign).ok());
  std::string got;
  ASSERT_TRUE((*disk)->GatherNodeRows("emb", ids, &got).ok());
  EXPECT_EQ(got, std::string(reinterpret_cast<const char*>(four.data()), 16));
}

TEST_F(DiskStoreTest, AFeatureFileOfTheWrongShapeIsNamedWhenTheStoreOpens) {
  const std::string path = config_.PartPath(1, PartFiles::NodeData("feat"));
  ASSERT_TRUE(WriteNpy(path, DType::kFloat32, {3, 33}, std::vector<float>(99).data()).ok());
  auto disk = PartitionStore::Open(config_, 1, {.row_cache_bytes = 1 << 16});
  ASSERT_FALSE(disk.ok());
  EXPECT_EQ(disk.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(disk.status().message().find(path), std::string::npos) << disk.status();
  EXPECT_NE(disk.status().message().find("found float32 [3, 33]"), std::string::npos) << disk.status();
}

}  // namespace
}  // namespace fanout::core
