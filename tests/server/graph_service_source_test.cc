// The graph service over a graph source that is not a partition's files: a fake, answering late
// from its own thread. No sockets: the handlers are called as the worker pool calls them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "base/thread_pool.h"
#include "core/feature_codec.h"
#include "rpc/rpc_codec.h"
#include "server/graph_service.h"
#include "tests/testing/fake_graph_source.h"

namespace fanout::server {
namespace {

using testing::FakeConfig;
using testing::FakeGraphSource;

float Value(int64_t v) { return 0.25f + static_cast<float>(v); }

v1::Tensor Ids(const std::vector<int64_t>& ids) {
  v1::Tensor t;
  rpc::FillInt64Tensor(ids, &t);
  return t;
}

std::vector<int64_t> Values(const v1::Tensor& t) {
  auto v = rpc::Int64Vector(t, "answer");
  EXPECT_TRUE(v.ok()) << v.status();
  return v.value_or(std::vector<int64_t>{});
}

// Partition 1 of 8 nodes in two partitions [0,4) [4,8): node v has in-edges from v-4 and (v+1)
// mod 8, edge IDs 6.. in that order.
struct Served {
  core::PartitionConfig config = FakeConfig({0, 4, 8}, {0, 6, 14}, {"feat"});
  FakeGraphSource fake{1, 4, 8, 6};
  ServerStats stats;
  base::ThreadPool pool{1};
  std::unique_ptr<GraphServiceImpl> service;

  Served() {
    for (int64_t v = 4; v < 8; ++v) {
      fake.AddEdge(v - 4, v);
      fake.AddEdge((v + 1) % 8, v);
    }
    fake.SetNodeField("feat", &Value);
    fake.AnswerFromOtherThread();  // as a remote or GPU source would
    ServicePolicy policy;
    policy.allow_push = true;
    service = std::make_unique<GraphServiceImpl>(ServedPartition{.config = &config, .part_id = 1, .source = &fake},
                                                 &stats, &pool, policy);
  }
};

TEST(GraphServiceSourceTest, AnswersEveryReadFromTheSource) {
  Served s;
  v1::GetMetadataResponse meta;
  ASSERT_TRUE(s.service->DoGetMetadata(&meta).ok());
  EXPECT_EQ(meta.graph_name(), "fake");
  EXPECT_EQ(meta.part_id(), 1);
  EXPECT_EQ(meta.node_ranges(1).start(), 4);
  ASSERT_EQ(meta.node_fields_size(), 1);
  EXPECT_EQ(meta.node_fields(0).name(), "feat");

  v1::SampleRequest sample;
  *sample.mutable_seeds() = Ids({6, 4});
  sample.set_fanout(-1);
  sample.set_dir(v1::EDGE_DIR_IN);
  v1::SampleResponse edges;
  ASSERT_TRUE(s.service->DoSample(sample, &edges, {}).ok());
  EXPECT_EQ(Values(edges.src()), (std::vector<int64_t>{2, 7, 0, 5}));
  EXPECT_EQ(Values(edges.dst()), (std::vector<int64_t>{6, 6, 4, 4}));
  EXPECT_EQ(Values(edges.eid()), (std::vector<int64_t>{10, 11, 6, 7}));
  // The compact answer of the same call (what fanout's own clients ask for): int32 IDs, and the
  // destinations as (seed position, count) runs: 2 edges to seeds[0] = 6, 2 to seeds[1] = 4.
  sample.set_compact(true);
  v1::SampleResponse compact;
  ASSERT_TRUE(s.service->DoSample(sample, &compact, {}).ok());
  EXPECT_EQ(compact.src().dtype(), v1::INT32);
  EXPECT_EQ(compact.eid().dtype(), v1::INT32);
  EXPECT_EQ(*rpc::IdVector(compact.src(), "src"), (std::vector<int64_t>{2, 7, 0, 5}));
  EXPECT_EQ(*rpc::IdVector(compact.eid(), "eid"), (std::vector<int64_t>{10, 11, 6, 7}));
  EXPECT_EQ(*rpc::Int32Vector(compact.dst_runs(), "dst_runs"), (std::vector<int32_t>{0, 2, 1, 2}));
  EXPECT_FALSE(compact.has_dst());
  // 12 bytes an edge here (4 a run of 2), not 24; with a fanout of 15, 9.
  EXPECT_EQ(compact.src().data().size() + compact.eid().data().size() + compact.dst_runs().data().size(),
            (edges.src().data().size() + edges.dst().data().size() + edges.eid().data().size()) / 2);
  sample.set_compact(false);

  v1::PullRequest pull;
  *pull.mutable_ids() = Ids({7, 5, 5});
  pull.set_field("feat");
  v1::PullResponse rows;
  ASSERT_TRUE(s.service->DoPull(pull, /*node=*/true, &rows, {}).ok());
  ASSERT_EQ(rows.data().data().size(), 3 * sizeof(float));
  float got[3];
  std::memcpy(got, rows.data().data().data(), sizeof(got));
  EXPECT_EQ(got[0], Value(7));
  EXPECT_EQ(got[1], Value(5));
  EXPECT_EQ(got[2], Value(5));
  // The same rows as bfloat16 on the wire (fanout-train --wire-rows bfloat16): half the bytes,
  // each value its float32 rounded to bfloat16.
  pull.set_rows_as_bfloat16(true);
  v1::PullResponse narrow;
  ASSERT_TRUE(s.service->DoPull(pull, /*node=*/true, &narrow, {}).ok());
  EXPECT_TRUE(narrow.rows_as_bfloat16());
  ASSERT_EQ(narrow.data().data().size(), 3 * sizeof(uint16_t));
  float back[3];
  core::DecodeRows(core::FeatureCodec::kBFloat16, narrow.data().data().data(), 3, 1, back);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back[i], core::BFloat16ToFloat(core::FloatToBFloat16(got[i]))) << i;
  pull.set_rows_as_bfloat16(false);

  v1::DegreesRequest deg;
  *deg.mutable_ids() = Ids({5});
  deg.set_dir(v1::EDGE_DIR_IN);
  v1::DegreesResponse degrees;
  ASSERT_TRUE(s.service->DoDegrees(deg, &degrees).ok());
  EXPECT_EQ(Values(degrees.degrees()), std::vector<int64_t>{2});

  v1::FindEdgesRequest find;
  *find.mutable_eids() = Ids({13});
  v1::FindEdgesResponse ends;
  ASSERT_TRUE(s.service->DoFindEdges(find, &ends).ok());
  EXPECT_EQ(Values(ends.src()), std::vector<int64_t>{0});
  EXPECT_EQ(Values(ends.dst()), std::vector<int64_t>{7});
}

// The service checks a request against the config before the source sees it, so a source need not
// defend itself; the source's own errors reach the client unchanged (no partition prefix: a client
// of one server knows which partition it asked).
TEST(GraphServiceSourceTest, ChecksRequestsBeforeTheSourceAndPassesItsErrorsOn) {
  Served s;
  v1::PullRequest pull;
  *pull.mutable_ids() = Ids({5, 2});
  pull.set_field("feat");
  v1::PullResponse rows;
  absl::Status st = s.service->DoPull(pull, true, &rows, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "node ID 2 (index 1) belongs to partition 0, not to partition 1 which owns [4, 8)");
  pull.set_field("label");
  *pull.mutable_ids() = Ids({5});
  st = s.service->DoPull(pull, true, &rows, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "no node field 'label' (this graph has: feat)");
  EXPECT_EQ(s.fake.gather_calls(), 0);

  v1::SampleRequest sample;
  *sample.mutable_seeds() = Ids({4, 99});
  sample.set_dir(v1::EDGE_DIR_IN);
  v1::SampleResponse edges;
  st = s.service->DoSample(sample, &edges, {});
  EXPECT_EQ(st.message(), "node ID 99 (index 1) is outside the graph [0, 8)");
  sample.set_fanout(-2);
  EXPECT_EQ(s.service->DoSample(sample, &edges, {}).message(), "fanout must be -1 (all) or >= 0, got -2");
  v1::FindEdgesRequest find;
  *find.mutable_eids() = Ids({3});
  v1::FindEdgesResponse ends;
  EXPECT_EQ(s.service->DoFindEdges(find, &ends).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.fake.sample_calls(), 0);

  s.fake.FailWith(absl::UnavailableError("the device is busy"));
  sample.set_fanout(1);
  *sample.mutable_seeds() = Ids({4});
  st = s.service->DoSample(sample, &edges, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "the device is busy");

  // Writes need a store; this source has none, whatever the policy allows.
  v1::PushRequest push;
  *push.mutable_ids() = Ids({4});
  push.set_field("feat");
  st = s.service->DoPush(push);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("takes no writes"), std::string::npos) << st;
}

}  // namespace
}  // namespace fanout::server
