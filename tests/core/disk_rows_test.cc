// core/disk_rows.h and PartitionStore with StoreOptions::row_cache_bytes (issue 40): node rows
// read from the files through a bounded row cache are the mapped store's rows, the cache keeps
// to its budget, S3-FIFO keeps a hot set through a scan that flushes LRU, and a field read from
// disk refuses pushes by name.
#include "core/disk_rows.h"

#include <unistd.h>

#include <cstring>
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

// Every way of reading (O_DIRECT or through the page cache; io_uring or threads calling pread)
// gives the file's rows: rows of whole pages in a file whose data starts on a page (as
// fanout-partition writes 1 MiB or more), rows that straddle pages (64-byte aligned data, an
// older partition), narrow rows, runs of consecutive rows, repeats, and the file's last row,
// whose page the file ends inside.
TEST(DiskRowsTest, EveryReadPathGivesTheFilesRows) {
  testing::TempDir dir;
  struct Case {
    int64_t rows, cols;
  };
  for (const Case c : {Case{300, 1024}, Case{200, 1000}, Case{5000, 3}}) {
    std::vector<float> data(static_cast<size_t>(c.rows * c.cols));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f;
    const std::string path = dir.Sub("f" + std::to_string(c.cols) + ".npy");
    ASSERT_TRUE(WriteNpy(path, DType::kFloat32, {c.rows, c.cols}, data.data()).ok());
    const size_t rb = static_cast<size_t>(c.cols) * sizeof(float);
    for (bool direct : {true, false}) {
      for (bool io_uring : {true, false}) {
        SCOPED_TRACE(std::to_string(c.cols) + " columns, " + (direct ? "direct" : "page cache") + ", " +
                     (io_uring ? "io_uring" : "threads"));
        auto file = OpenNpyFile(path);
        ASSERT_TRUE(file.ok()) << file.status();
        if (rb * static_cast<size_t>(c.rows) >= (1u << 20)) EXPECT_EQ(file->data_offset % 4096, 0u);
        DiskRows disk(std::move(*file), std::make_shared<RowCache>(0, CachePolicy::kS3Fifo), 0,
                      {.direct = direct, .io_uring = io_uring});
        std::mt19937_64 rng(static_cast<uint64_t>(c.cols));
        std::vector<int64_t> ids;
        for (int i = 0; i < 150; ++i) ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.rows)));
        for (int64_t r = 40; r < 60; ++r) ids.push_back(r);  // a run
        ids.push_back(c.rows - 1);                           // the last row
        ids.push_back(ids[5]);                               // a repeat
        std::vector<int64_t> dst(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) dst[i] = static_cast<int64_t>(ids.size() - 1 - i);
        std::vector<char> got(ids.size() * rb, 1);
        ASSERT_TRUE(disk.Read(ids, dst, got.data()).ok());
        for (size_t i = 0; i < ids.size(); ++i) {
          ASSERT_EQ(std::memcmp(got.data() + static_cast<size_t>(dst[i]) * rb,
                                reinterpret_cast<const char*>(data.data()) + static_cast<size_t>(ids[i]) * rb, rb),
                    0)
              << "row " << ids[i];
        }
        const RowCacheStats st = disk.stats();
        EXPECT_EQ(st.misses, static_cast<int64_t>(ids.size()));
        // The processes' report says how the rows were read.
        const std::string how = st.DescribeReads();
        EXPECT_NE(how.find(disk.direct() ? ", O_DIRECT)" : ", through the page cache)"), std::string::npos) << how;
        if (!io_uring) {
          EXPECT_NE(how.find("(threads calling pread,"), std::string::npos) << how;
        } else if (DiskRows::IoUringAvailable()) {
          EXPECT_NE(how.find("(io_uring,"), std::string::npos) << how;
        }
        std::set<int64_t> distinct(ids.begin(), ids.end());
        if (disk.direct() && rb % 4096 == 0) {
          // Page-aligned rows of whole pages: the disk reads those pages and no others.
          EXPECT_EQ(st.bytes_read, static_cast<int64_t>(distinct.size() * rb));
        } else {
          EXPECT_GE(st.bytes_read, static_cast<int64_t>(distinct.size() * rb));
        }
      }
    }
  }
}

// (A process that read nothing says so.)
TEST(DiskRowsTest, NothingReadIsSaidSo) { EXPECT_EQ(RowCacheStats{}.DescribeReads(), "nothing read from disk"); }

// A row past the end of a truncated file is an error naming the file and the rows, on every path.
TEST(DiskRowsTest, AFileCutShortIsNamedNotReadAsZeros) {
  testing::TempDir dir;
  std::vector<float> data(300 * 1024, 1.0f);
  const std::string path = dir.Sub("cut.npy");
  ASSERT_TRUE(WriteNpy(path, DType::kFloat32, {300, 1024}, data.data()).ok());
  for (bool direct : {true, false}) {
    for (bool io_uring : {true, false}) {
      auto file = OpenNpyFile(path);
      ASSERT_TRUE(file.ok()) << file.status();
      ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(file->data_offset + 100 * 4096)), 0);  // after the check
      DiskRows disk(std::move(*file), std::make_shared<RowCache>(0, CachePolicy::kLru), 0,
                    {.direct = direct, .io_uring = io_uring});
      std::vector<char> out(2 * 4096);
      const std::vector<int64_t> ids = {5, 250};
      const absl::Status s = disk.Read(ids, {}, out.data());
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      EXPECT_NE(s.message().find(path + ": cannot read rows 250..250: the file ended"), std::string::npos) << s;
      ASSERT_TRUE(WriteNpy(path, DType::kFloat32, {300, 1024}, data.data()).ok());
    }
  }
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
