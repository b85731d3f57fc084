// DistGraph's routing and merging, against fake sources: no files, no sockets, no servers.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "sampler/dist_graph.h"
#include "sampler/row_cache.h"
#include "tests/testing/fake_graph_source.h"

namespace fanout::sampler {
namespace {

using testing::FakeConfig;
using testing::FakeGraphSource;

float Value(int64_t v) { return 0.5f + static_cast<float>(v); }

// 12 nodes in 3 partitions [0,4) [4,8) [8,12); every node v has in-edges from (v+1), (v+5) and
// (v+7) mod 12, in that order, so every sample crosses partitions.
struct Graph {
  std::vector<std::shared_ptr<FakeGraphSource>> parts;
  core::PartitionConfig config = FakeConfig({0, 4, 8, 12}, {0, 12, 24, 36}, {"feat"});

  Graph() {
    for (int p = 0; p < 3; ++p) {
      auto f = std::make_shared<FakeGraphSource>(p, 4 * p, 4 * p + 4, 12 * p);
      for (int64_t v = 4 * p; v < 4 * p + 4; ++v) {
        for (int64_t k : {1, 5, 7}) f->AddEdge((v + k) % 12, v);
      }
      f->SetNodeField("feat", &Value);
      parts.push_back(f);
    }
  }
  std::unique_ptr<DistGraph> Router(int machine) const {
    std::vector<std::shared_ptr<core::GraphSource>> s(parts.begin(), parts.end());
    auto g = DistGraph::FromSources(config, machine, std::move(s));
    EXPECT_TRUE(g.ok()) << g.status();
    return std::move(*g);
  }
};

// What a sample of `seeds` must be: each seed's first `fanout` in-edges, seeds in order.
core::SampledEdges Expected(const std::vector<int64_t>& seeds, int fanout) {
  core::SampledEdges e;
  for (int64_t v : seeds) {
    int j = 0;
    for (int64_t k : {1, 5, 7}) {
      if (j++ >= fanout) break;
      e.src.push_back((v + k) % 12);
      e.dst.push_back(v);
      e.eid.push_back(v * 3 + (j - 1));
    }
  }
  return e;
}

void ExpectSameEdges(const core::SampledEdges& got, const core::SampledEdges& want) {
  EXPECT_EQ(got.src, want.src);
  EXPECT_EQ(got.dst, want.dst);
  EXPECT_EQ(got.eid, want.eid);
}

TEST(DistGraphRouterTest, MergesEveryPartitionsEdgesIntoSeedOrder) {
  Graph g;
  auto router = g.Router(1);
  const std::vector<int64_t> seeds = {9, 0, 5, 11, 4, 1, 8};
  core::SampleOptions o;
  o.fanout = 2;
  core::SampledEdges e;
  ASSERT_TRUE(router->SampleNeighbors(seeds, o, &e).ok());
  ExpectSameEdges(e, Expected(seeds, 2));
  for (auto& p : g.parts) EXPECT_EQ(p->sample_calls(), 1);
}

TEST(DistGraphRouterTest, SameAnswerWhenRemotePartsAnswerLateAndOutOfOrder) {
  Graph g;
  g.parts[0]->HoldAnswers();
  g.parts[2]->HoldAnswers();
  auto router = g.Router(1);
  const std::vector<int64_t> seeds = {3, 10, 6, 2, 7, 9};
  core::SampleOptions o;
  o.fanout = -1;
  core::SampledEdges e;
  std::thread::id caller;
  auto call = std::async(std::launch::async, [&] {
    caller = std::this_thread::get_id();
    return router->SampleNeighbors(seeds, o, &e);
  });
  // Partition 2 answers first, then partition 0: the reverse of the request's order.
  ASSERT_TRUE(g.parts[0]->WaitForHeld(1));
  ASSERT_TRUE(g.parts[2]->WaitForHeld(1));
  g.parts[2]->Release();
  ASSERT_TRUE(g.parts[2]->WaitForAnswers(1));
  g.parts[0]->Release();
  ASSERT_TRUE(call.get().ok());
  ExpectSameEdges(e, Expected(seeds, 3));
  // The machine's own partition works on the calling thread; the late ones on their own.
  EXPECT_EQ(g.parts[1]->last_answer_thread(), caller);
  EXPECT_NE(g.parts[0]->last_answer_thread(), caller);
}

TEST(DistGraphRouterTest, SeedsOfOnePartitionGoToThatPartitionOnly) {
  Graph g;
  auto router = g.Router(0);
  const std::vector<int64_t> seeds = {7, 4, 6};
  core::SampleOptions o;
  o.fanout = 1;
  core::SampledEdges e;
  ASSERT_TRUE(router->SampleNeighbors(seeds, o, &e).ok());
  ExpectSameEdges(e, Expected(seeds, 1));
  EXPECT_EQ(g.parts[0]->sample_calls(), 0);
  EXPECT_EQ(g.parts[1]->sample_calls(), 1);
  EXPECT_EQ(g.parts[2]->sample_calls(), 0);
  ASSERT_TRUE(router->SampleNeighbors({}, o, &e).ok());
  EXPECT_EQ(e.size(), 0u);
}

TEST(DistGraphRouterTest, FirstErrorInPartitionOrderAfterEveryPartHasAnswered) {
  Graph g;
  g.parts[2]->FailWith(absl::UnavailableError("server 10.0.0.3:1: SampleNeighbors: gone"));
  g.parts[0]->HoldAnswers();
  g.parts[0]->FailWith(absl::DeadlineExceededError("too slow"));
  auto router = g.Router(1);
  core::SampleOptions o;
  o.fanout = 2;
  core::SampledEdges e;
  auto call = std::async(std::launch::async,
                         [&] { return router->SampleNeighbors(std::vector<int64_t>{1, 5, 9}, o, &e); });
  // Partition 2 has failed, partition 0 is still working: the call must not return yet (its
  // buffers belong to this call until every partition has answered).
  ASSERT_TRUE(g.parts[2]->WaitForAnswers(1));
  ASSERT_TRUE(g.parts[0]->WaitForHeld(1));
  EXPECT_EQ(call.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  g.parts[0]->Release();
  absl::Status s = call.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_EQ(s.message(), "partition 0: too slow");
}

TEST(DistGraphRouterTest, EdgesNotGroupedBySeedAreAnInternalErrorNamingThePartition) {
  Graph g;
  g.parts[2]->UngroupEdges();
  auto router = g.Router(0);
  core::SampleOptions o;
  o.fanout = 2;
  core::SampledEdges e;
  absl::Status s = router->SampleNeighbors(std::vector<int64_t>{1, 8, 9}, o, &e);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("partition 2"), std::string::npos) << s;
}

TEST(DistGraphRouterTest, IdsOutsideTheGraphAreNamedBeforeAnyPartitionIsAsked) {
  Graph g;
  auto router = g.Router(0);
  core::SampleOptions o;
  core::SampledEdges e;
  absl::Status s = router->SampleNeighbors(std::vector<int64_t>{1, 12}, o, &e);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("node ID 12 is outside graph 'fake' [0, 12)"), std::string::npos) << s;
  std::vector<int64_t> src(1), dst(1);
  s = router->FindEdges(std::vector<int64_t>{-1}, src.data(), dst.data());
  EXPECT_NE(s.message().find("edge ID -1 is outside"), std::string::npos) << s;
  for (auto& p : g.parts) EXPECT_EQ(p->sample_calls(), 0);
}

TEST(DistGraphRouterTest, RowsDegreesAndEdgesComeBackInRequestOrder) {
  Graph g;
  g.parts[2]->AnswerFromOtherThread();
  auto router = g.Router(0);
  const std::vector<int64_t> ids = {11, 0, 6, 3, 8, 5};
  std::vector<float> rows(ids.size());
  ASSERT_TRUE(router->PullNodeRows("feat", ids, reinterpret_cast<char*>(rows.data())).ok());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(rows[i], Value(ids[i]));
  std::vector<int64_t> deg(ids.size());
  ASSERT_TRUE(router->Degrees(ids, core::EdgeDir::kIn, deg.data()).ok());
  EXPECT_EQ(deg, std::vector<int64_t>(ids.size(), 3));
  const std::vector<int64_t> eids = {35, 0, 13};  // node 11's third, node 0's first, node 4's second
  std::vector<int64_t> src(3), dst(3);
  ASSERT_TRUE(router->FindEdges(eids, src.data(), dst.data()).ok());
  EXPECT_EQ(src, (std::vector<int64_t>{6, 1, 9}));
  EXPECT_EQ(dst, (std::vector<int64_t>{11, 0, 4}));
  absl::Status s = router->PullNodeRows("nope", ids, reinterpret_cast<char*>(rows.data()));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
}

TEST(CachingGraphSourceTest, CachedRowsAreCopiedAndOnlyMissesReachTheSourceBehind) {
  Graph g;
  auto cache = std::make_shared<RowCache>(std::vector<std::string>{"feat"}, sizeof(float), std::vector<int64_t>{8, 10});
  for (int64_t id : {8, 10}) {
    const float v = Value(id);
    std::memcpy(cache->mutable_row(cache->Find(id)), &v, sizeof(v));
  }
  auto counters = std::make_shared<CacheCounters>();
  CachingGraphSource cached(g.parts[2], cache, counters);
  const std::vector<int64_t> ids = {10, 9, 8, 11}, positions = {3, 0, 1, 2};
  std::vector<float> rows(4);
  ASSERT_TRUE(core::WaitFor([&](core::Done d) {
    cached.GatherRows(core::FieldRef::Node("feat"), sizeof(float), ids, positions, reinterpret_cast<char*>(rows.data()),
                      std::move(d));
  }).ok());
  EXPECT_EQ(rows, (std::vector<float>{Value(9), Value(8), Value(11), Value(10)}));
  EXPECT_EQ(g.parts[2]->gathered_ids(), (std::vector<int64_t>{9, 11}));
  EXPECT_EQ(counters->hits, 2);
  EXPECT_EQ(counters->misses, 2);
  // All cached: the source behind is not asked at all.
  ASSERT_TRUE(core::WaitFor([&](core::Done d) {
    cached.GatherRows(core::FieldRef::Node("feat"), sizeof(float), std::vector<int64_t>{8}, std::vector<int64_t>{0},
                      reinterpret_cast<char*>(rows.data()), std::move(d));
  }).ok());
  EXPECT_EQ(g.parts[2]->gather_calls(), 1);
  // Another field passes through.
  absl::Status s = core::WaitFor([&](core::Done d) {
    cached.GatherRows(core::FieldRef::Node("label"), sizeof(float), ids, positions, reinterpret_cast<char*>(rows.data()),
                      std::move(d));
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(g.parts[2]->gather_calls(), 2);
}

TEST(DistGraphRouterTest, FromSourcesChecksOneSourcePerPartition) {
  Graph g;
  std::vector<std::shared_ptr<core::GraphSource>> two(g.parts.begin(), g.parts.begin() + 2);
  EXPECT_FALSE(DistGraph::FromSources(g.config, 0, two).ok());
  std::vector<std::shared_ptr<core::GraphSource>> holes = {g.parts[0], nullptr, g.parts[2]};
  EXPECT_FALSE(DistGraph::FromSources(g.config, 0, holes).ok());
}

}  // namespace
}  // namespace fanout::sampler
