// GraphSource: the one seam between a partition's graph data and whoever reads it. A source
// answers for the nodes and edges one partition owns: neighbour sampling, row gathers of node and
// edge fields, degrees and edge endpoints. Implementations:
//   - core::LocalGraphSource    a partition's memory-mapped files (PartitionStore), answered inline;
//   - rpc::RemoteGraphSource    a partition's graph servers over gRPC's asynchronous API;
//   - sampler::CachingGraphSource a decorator that answers cached rows from memory;
//   - testing::FakeGraphSource  an in-memory graph for tests (tests/testing/fake_graph_source.h).
// sampler::DistGraph routes every call over one source per partition, so the cross-partition
// logic is the same whatever the sources are, and is tested against fakes without sockets; a graph
// server (server::GraphServiceImpl) serves any one source over gRPC.
//
// Calls are asynchronous: each takes a `Done` that is called exactly once, on any thread, when
// the call has finished (a local source calls it before returning). The caller keeps every span
// and output buffer alive until then. No gRPC, no LibTorch here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/partition_store.h"
#include "core/sampling.h"

namespace fanout::core {

// Which field a gather reads: a node or edge field, of a node/edge type, by name. Graphs are
// homogeneous today ("" is their one type); a heterogeneous graph adds types to the key, not
// new methods.
struct FieldRef {
  enum class Kind { kNode, kEdge };
  Kind kind = Kind::kNode;
  std::string type;
  std::string name;

  static FieldRef Node(std::string name) { return {Kind::kNode, "", std::move(name)}; }
  static FieldRef Edge(std::string name) { return {Kind::kEdge, "", std::move(name)}; }
  // The field's name in a partition and on the wire: "NAME", or "TYPE/NAME" for a typed field
  // (FieldSchema::key()).
  std::string key() const { return type.empty() ? name : type + "/" + name; }
  // "node field 'feat'", "edge field 'w' of type 'cites'": for error messages.
  std::string ToString() const;
  bool operator==(const FieldRef&) const = default;
};

using Done = std::function<void(absl::Status)>;

class GraphSource {
 public:
  virtual ~GraphSource() = default;

  // Who answers, for logs: "partition 0 (local files)", "partition 1 (servers 10.0.0.2:30050)".
  // Errors are the source's own ("node ID 7 (index 2) belongs to partition 1, ..."): whoever
  // routes calls to several sources names the partition (DistGraph prefixes "partition P: "), and
  // a graph server passes them to its clients unchanged.
  virtual std::string Describe() const = 0;

  // DGL's sample_neighbors for owned `seeds`: edges grouped by seed, in `seeds` order.
  virtual void SampleNeighbors(std::span<const int64_t> seeds, const SampleOptions& options,
                               SampledEdges* out, Done done) = 0;
  // Rows of `field` for owned `ids`: row i is written at out + positions[i] * row_bytes, where
  // row_bytes is the field's row size as the partition config states it (a source whose rows
  // differ fails the call).
  virtual void GatherRows(const FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                          std::span<const int64_t> positions, char* out, Done done) = 0;
  // In- or out-degrees of owned nodes, one per ID into out[0, ids.size()).
  virtual void Degrees(std::span<const int64_t> ids, EdgeDir dir, int64_t* out, Done done) = 0;
  // Endpoints of owned edges, one per ID into src/dst[0, eids.size()).
  virtual void FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, Done done) = 0;
};

// The base of a GraphSource decorator (a cache, a counter, a fault injector): every call goes to
// `inner` unchanged; a decorator overrides only the calls it changes.
class ForwardingGraphSource : public GraphSource {
 public:
  explicit ForwardingGraphSource(std::shared_ptr<GraphSource> inner) : inner_(std::move(inner)) {}

  std::string Describe() const override { return inner_->Describe(); }
  void SampleNeighbors(std::span<const int64_t> seeds, const SampleOptions& options, SampledEdges* out,
                       Done done) override {
    inner_->SampleNeighbors(seeds, options, out, std::move(done));
  }
  void GatherRows(const FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, Done done) override {
    inner_->GatherRows(field, row_bytes, ids, positions, out, std::move(done));
  }
  void Degrees(std::span<const int64_t> ids, EdgeDir dir, int64_t* out, Done done) override {
    inner_->Degrees(ids, dir, out, std::move(done));
  }
  void FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, Done done) override {
    inner_->FindEdges(eids, src, dst, std::move(done));
  }

 protected:
  GraphSource& inner() const { return *inner_; }

 private:
  std::shared_ptr<GraphSource> inner_;
};

// Starts `call` with a Done of its own and waits for it: the synchronous form of any call,
// e.g. WaitFor([&](Done d) { source.Degrees(ids, dir, out, std::move(d)); }).
absl::Status WaitFor(const std::function<void(Done)>& call);

// A partition's files as a source. Calls run on the caller's thread and complete before they
// return. Thread-safe as PartitionStore is.
class LocalGraphSource final : public GraphSource {
 public:
  explicit LocalGraphSource(std::shared_ptr<const PartitionStore> store);
  const PartitionStore& store() const { return *store_; }

  std::string Describe() const override;
  void SampleNeighbors(std::span<const int64_t> seeds, const SampleOptions& options, SampledEdges* out,
                       Done done) override;
  void GatherRows(const FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, Done done) override;
  void Degrees(std::span<const int64_t> ids, EdgeDir dir, int64_t* out, Done done) override;
  void FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, Done done) override;

 private:
  std::shared_ptr<const PartitionStore> store_;
};

}  // namespace fanout::core
