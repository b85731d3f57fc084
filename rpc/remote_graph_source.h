// A partition served by one or more graph servers, as a GraphSource: every call is one
// asynchronous RPC (gRPC's callback API; nothing blocks, no thread is started), sent to the
// partition's servers in turn.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/graph_source.h"
#include "rpc/graph_client.h"

namespace fanout::rpc {

class RemoteGraphSource final : public core::GraphSource {
 public:
  // `clients` (at least one) all serve partition `part`.
  RemoteGraphSource(int part, std::vector<std::unique_ptr<GraphClient>> clients);

  const std::vector<std::unique_ptr<GraphClient>>& clients() const { return clients_; }

  std::string Describe() const override;
  void SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                       core::SampledEdges* out, core::Done done) override;
  void GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, core::Done done) override;
  void Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) override;
  void FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) override;

 private:
  GraphClient* Next();

  int part_;
  std::vector<std::unique_ptr<GraphClient>> clients_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace fanout::rpc
