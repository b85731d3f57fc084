// A partition served by one or more graph servers, as a GraphSource: every call is one
// asynchronous RPC (gRPC's callback API; nothing blocks, no thread is started), sent to the
// partition's servers in turn.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/ip_config.h"
#include "core/graph_source.h"
#include "rpc/graph_client.h"

namespace fanout::rpc {

// Calls go round-robin over the partition's live servers of the most preferred tier that has one
// (a replica on this machine, then the partition's own servers, then replicas elsewhere:
// DistGraph's order). A server that answers UNAVAILABLE (after the client's own retries: it died,
// or its link is cut and the channel's keepalive gave up) or, with another server to ask, lets a
// call run out its deadline is taken out, and the call goes to the next one: with several servers
// per partition a job survives losing all but one of them (issue 31). A server taken out is asked
// again by one call every `retry_after_seconds` (30), and is back when that call is answered (a link
// restored). Reads only, so a call is safe to repeat. The error once none is left names them.
class RemoteGraphSource final : public core::GraphSource {
 public:
  // `clients` (at least one) all serve partition `part`; `tiers[i]` (default all 0) is client i's
  // preference, lower first.
  RemoteGraphSource(int part, std::vector<std::unique_ptr<GraphClient>> clients, std::vector<int> tiers = {},
                    double retry_after_seconds = 30);

  // Partition `part`'s servers in `servers` (at least one), in the order calls prefer them: its
  // replicas on machine `machine` (this process's, -1 for none), its own servers, its replicas
  // elsewhere. A server on `machine` (ServerMap::OnMachine) crosses no link: its calls are not
  // counted in options.wire. With more than one server each client makes one attempt: the
  // failover is the retry, so a call that finds its server gone moves on at once. Nothing is
  // connected yet.
  static std::unique_ptr<RemoteGraphSource> Connect(const base::ServerMap& servers, int part, int machine,
                                                    const ClientOptions& options);

  const std::vector<std::unique_ptr<GraphClient>>& clients() const { return clients_; }
  // Servers not taken out.
  size_t live_servers() const;

  std::string Describe() const override;
  void SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                       core::SampledEdges* out, core::Done done) override;
  void GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, core::Done done) override;
  void Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) override;
  void FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) override;

 private:
  // One call on a live client (`call(client, done)`), moved to the next live one on UNAVAILABLE.
  // With one server the call goes straight to it (nothing to fail over to, nothing allocated).
  using Call = std::function<void(GraphClient*, core::Done)>;
  template <typename F>
  void Send(F&& call, core::Done done) {
    if (clients_.size() == 1) return call(clients_[0].get(), std::move(done));
    WithFailover(std::make_shared<const Call>(std::forward<F>(call)), std::move(done), 0);
  }
  void WithFailover(std::shared_ptr<const Call> call, core::Done done, size_t tried);
  // The client for the next call: a live one of the lowest tier that has one, or one taken out
  // whose retry is due (claimed, so one call at a time retries it); clients_.size() if none.
  size_t Pick();

  int part_;
  std::vector<std::unique_ptr<GraphClient>> clients_;
  std::vector<int> tiers_;       // per client
  std::vector<int> tier_order_;  // the distinct tiers, ascending
  int64_t retry_after_ms_;
  // Per client: when it was taken out or last retried (milliseconds on a steady clock); 0: live.
  std::unique_ptr<std::atomic<int64_t>[]> down_at_ms_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace fanout::rpc
