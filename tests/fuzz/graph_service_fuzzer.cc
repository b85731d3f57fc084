// Fuzzes every handler of the graph service (server/graph_service.cc) in-process, without a
// socket: the input's first byte picks the handler, the rest is parsed as its request message,
// and GraphServiceImpl's Do* method answers it from a small partition built at start-up (a hub,
// self loops, an edge weight field, labels and masks; the server owns partition 0 of 2, so half
// the IDs are another partition's). Pushes are allowed, so they are fuzzed too.
//
// With bit 0x20 of the first byte the request goes to a typed partition instead (issue 29: two
// node types, three relations, typed fields and masks), so typed pulls and per-relation samples
// are fuzzed too.
//
// Whatever the request, a handler must return (no crash, no sanitizer report, nothing sized by
// the request beyond the limits), and what it answers OK must be well formed: tensors whose
// bytes match their shapes, one row per ID, three equal-length edge lists within the limit.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/thread_pool.h"
#include "core/graph_source.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "fanout/v1/graph.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "partition/dataset.h"
#include "partition/partitioner.h"
#include "rpc/rpc_codec.h"
#include "server/graph_service.h"
#include "server/server_stats.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace v1 = fanout::v1;
using fanout::core::DType;
using fanout::core::NpyArray;

constexpr int64_t kNodes = 240;
constexpr int64_t kMaxIds = 4096;
constexpr int64_t kMaxResponseBytes = 1 << 20;

struct World {
  std::shared_ptr<fanout::core::PartitionStore> store;
  std::unique_ptr<fanout::core::LocalGraphSource> source;
  fanout::server::ServerStats stats;
  fanout::base::ThreadPool pool{1};
  std::unique_ptr<fanout::server::GraphServiceImpl> service;
};

fanout::partition::Dataset MakeDataset() {
  fanout::partition::Dataset d;
  d.name = "fuzz";
  d.num_nodes = kNodes;
  std::vector<int64_t> edges;
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL, (x >> 33) % kNodes; };
  for (int64_t v = 1; v < kNodes; ++v) edges.insert(edges.end(), {v, 0});  // node 0 is a hub
  for (int64_t v = 0; v < 20; ++v) edges.insert(edges.end(), {v, v});      // self loops
  for (int i = 0; i < 1200; ++i) edges.insert(edges.end(), {static_cast<int64_t>(next()), static_cast<int64_t>(next())});
  const int64_t e = static_cast<int64_t>(edges.size()) / 2;
  d.edges = NpyArray::Adopt(std::move(edges), {e, 2});
  std::vector<float> feat(kNodes * 4);
  for (size_t i = 0; i < feat.size(); ++i) feat[i] = static_cast<float>(i % 97) * 0.25f;
  d.node_fields.push_back({"feat", NpyArray::Adopt(std::move(feat), {kNodes, 4})});
  std::vector<int64_t> label(kNodes);
  for (int64_t v = 0; v < kNodes; ++v) label[v] = v % 5;
  d.node_fields.push_back({"label", NpyArray::Adopt(std::move(label), {kNodes})});
  d.num_classes = 5;
  std::vector<float> w(e);
  for (int64_t i = 0; i < e; ++i) w[i] = static_cast<float>(i % 7);  // zeros included
  d.edge_fields.push_back({"w", NpyArray::Adopt(std::move(w), {e})});
  d.has_split = true;
  for (int64_t v = 0; v < kNodes; ++v) (v % 10 < 6 ? d.train_idx : v % 10 < 8 ? d.valid_idx : d.test_idx).push_back(v);
  return d;
}

// Types a (150 nodes, with features, labels and a split) and b (90, nothing); relations a:r:b,
// b:s:a and a:t:a (self loops included).
fanout::partition::Dataset MakeTypedDataset() {
  fanout::partition::Dataset d;
  d.name = "fuzztyped";
  d.node_types = {"a", "b"};
  d.node_type_offsets = {0, 150, 240};
  d.num_nodes = 240;
  d.edge_types = {{"a", "r", "b"}, {"b", "s", "a"}, {"a", "t", "a"}};
  std::vector<int64_t> edges;
  uint64_t x = 777;
  auto next = [&](int64_t lo, int64_t hi) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(hi - lo));
  };
  d.edge_type_offsets = {0};
  for (int i = 0; i < 400; ++i) edges.insert(edges.end(), {next(0, 150), next(150, 240)});
  d.edge_type_offsets.push_back(static_cast<int64_t>(edges.size() / 2));
  for (int i = 0; i < 300; ++i) edges.insert(edges.end(), {next(150, 240), next(0, 150)});
  d.edge_type_offsets.push_back(static_cast<int64_t>(edges.size() / 2));
  for (int64_t v = 0; v < 150; ++v) edges.insert(edges.end(), {v, v % 7 == 0 ? v : next(0, 150)});
  d.edge_type_offsets.push_back(static_cast<int64_t>(edges.size() / 2));
  const int64_t e = static_cast<int64_t>(edges.size()) / 2;
  d.edges = NpyArray::Adopt(std::move(edges), {e, 2});
  std::vector<float> feat(150 * 3, 0.5f);
  d.node_fields.push_back({"feat", NpyArray::Adopt(std::move(feat), {150, 3}), "a"});
  std::vector<int64_t> label(150);
  for (int64_t v = 0; v < 150; ++v) label[v] = v % 4 == 0 ? -1 : v % 3;
  d.node_fields.push_back({"label", NpyArray::Adopt(std::move(label), {150}), "a"});
  d.num_classes = 3;
  d.has_split = true;
  for (int64_t v = 0; v < 150; ++v) (v % 2 ? d.train_idx : d.test_idx).push_back(v);
  return d;
}

World* MakeWorld(bool typed) {
  {
    auto* world = new World();
    fanout::partition::PartitionOptions o;
    o.out_dir = fanout::fuzz::TempDir() + (typed ? "/typed" : "/parts");
    o.add_reverse_edges = typed;
    o.num_parts = 2;
    o.method = fanout::partition::PartMethod::kRandom;
    o.quiet = true;
    o.num_threads = 1;
    auto summary = fanout::partition::PartitionDataset(typed ? MakeTypedDataset() : MakeDataset(), o);
    FANOUT_CHECK(summary.ok()) << summary.status();
    auto config = fanout::core::LoadPartitionConfig(summary->config_path);
    FANOUT_CHECK(config.ok()) << config.status();
    auto store = fanout::core::PartitionStore::Open(*config, 0);
    FANOUT_CHECK(store.ok()) << store.status();
    world->store = std::move(*store);
    fanout::server::ServicePolicy policy;
    policy.limits.max_ids_per_request = kMaxIds;
    policy.limits.max_response_bytes = kMaxResponseBytes;
    policy.allow_push = true;
    policy.limits.max_created_bytes = 1 << 20;  // created fields accumulate over the run: bounded
    world->source = std::make_unique<fanout::core::LocalGraphSource>(world->store);
    fanout::server::ServedPartition served{.config = &world->store->config(),
                                           .part_id = 0,
                                           .source = world->source.get(),
                                           .writable = world->store.get()};
    world->service = std::make_unique<fanout::server::GraphServiceImpl>(served, &world->stats, &world->pool, policy);
    return world;
  }
}

World* TheWorld(bool typed = false) {
  static World* plain = MakeWorld(false);
  static World* typed_world = MakeWorld(true);
  return typed ? typed_world : plain;
}

void CheckTensorOk(const v1::Tensor& t) { FANOUT_CHECK(fanout::rpc::CheckTensor(t, "answer").ok()); }

int64_t Rows(const v1::Tensor& t) { return t.shape_size() == 0 ? -1 : t.shape(0); }

template <typename T>
bool Parse(T* m, const uint8_t* data, size_t size) {
  return m->ParseFromArray(data, static_cast<int>(size));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  TheWorld();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  World& w = *TheWorld((data[0] & 0x20) != 0);
  const fanout::server::GraphServiceImpl& s = *w.service;
  const uint8_t* body = data + 1;
  const size_t len = size - 1;
  // Half the time the handler is told to stop between chunks (as for a cancelled call).
  const fanout::server::StopCheck stop = [pick = data[0]] { return (pick & 0x80) != 0; };
  switch (data[0] % 8) {
    case 0: {
      v1::GetMetadataResponse r;
      FANOUT_CHECK(s.DoGetMetadata(&r).ok());
      break;
    }
    case 1:
    case 2: {
      v1::PullRequest q;
      if (!Parse(&q, body, len)) return 0;
      v1::PullResponse r;
      if (s.DoPull(q, data[0] % 8 == 1, &r, stop).ok()) {
        CheckTensorOk(r.data());
        FANOUT_CHECK(Rows(r.data()) == Rows(q.ids()));
        FANOUT_CHECK(static_cast<int64_t>(r.data().data().size()) <= kMaxResponseBytes);
      }
      break;
    }
    case 3: {
      if (data[0] & 0x40) {  // a created field, then pushes and pulls may name it
        v1::CreateNodeFieldRequest q;
        if (!Parse(&q, body, len)) return 0;
        v1::CreateNodeFieldResponse r;
        (void)s.DoCreateNodeField(q, &r);
        break;
      }
      v1::PushRequest q;
      if (!Parse(&q, body, len)) return 0;
      (void)s.DoPush(q);
      break;
    }
    case 4: {
      v1::SampleRequest q;
      if (!Parse(&q, body, len)) return 0;
      v1::SampleResponse r;
      if (s.DoSample(q, &r, stop).ok()) {
        for (const v1::Tensor* t : {&r.src(), &r.eid()}) CheckTensorOk(*t);
        FANOUT_CHECK(Rows(r.src()) == Rows(r.eid()));
        if (r.has_dst_runs()) {
          // A compact answer (in-edges, asked for): no dst, but (seed position, count) pairs that
          // stay inside the request's seeds and cover every edge once.
          FANOUT_CHECK(q.compact() && !r.has_dst());
          CheckTensorOk(r.dst_runs());
          auto runs = fanout::rpc::Int32Vector(r.dst_runs(), "dst_runs");
          FANOUT_CHECK(runs.ok() && runs->size() % 2 == 0);
          int64_t covered = 0;
          for (size_t i = 0; i < runs->size(); i += 2) {
            FANOUT_CHECK((*runs)[i] >= 0 && (*runs)[i] < Rows(q.seeds()) && (*runs)[i + 1] > 0);
            covered += (*runs)[i + 1];
          }
          FANOUT_CHECK(covered == Rows(r.eid()));
        } else {
          CheckTensorOk(r.dst());
          FANOUT_CHECK(Rows(r.dst()) == Rows(r.eid()));
        }
        FANOUT_CHECK(Rows(r.eid()) * 24 <= kMaxResponseBytes);
        // A typed graph's answer has an edge-type column, one per edge; a plain graph's none.
        const bool typed = w.store->num_edge_types() > 1;
        if (!typed) {
          FANOUT_CHECK(!r.has_etype());
        } else if (Rows(r.eid()) > 0) {
          FANOUT_CHECK(r.has_etype());
        }
        if (r.has_etype()) {
          CheckTensorOk(r.etype());
          FANOUT_CHECK(Rows(r.etype()) == Rows(r.eid()));
        }
      }
      break;
    }
    case 5: {
      v1::DegreesRequest q;
      if (!Parse(&q, body, len)) return 0;
      v1::DegreesResponse r;
      if (s.DoDegrees(q, &r).ok()) {
        CheckTensorOk(r.degrees());
        FANOUT_CHECK(Rows(r.degrees()) == Rows(q.ids()));
      }
      break;
    }
    case 6: {
      v1::FindEdgesRequest q;
      if (!Parse(&q, body, len)) return 0;
      v1::FindEdgesResponse r;
      if (s.DoFindEdges(q, &r).ok()) {
        CheckTensorOk(r.src());
        CheckTensorOk(r.dst());
        FANOUT_CHECK(Rows(r.src()) == Rows(q.eids()) && Rows(r.dst()) == Rows(q.eids()));
      }
      break;
    }
    default: {
      if (data[0] & 0x40) {  // a sparse optimizer step on created fields (learnable embeddings)
        v1::SparseUpdateRequest q;
        if (!Parse(&q, body, len)) return 0;
        (void)s.DoSparseUpdate(q);
        break;
      }
      v1::GetStatsResponse r;
      FANOUT_CHECK(s.DoGetStats(&r).ok());
      break;
    }
  }
  return 0;
}
