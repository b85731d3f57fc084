#include "rpc/remote_graph_source.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/strings.h"

namespace fanout::rpc {

using base::StrCat;

RemoteGraphSource::RemoteGraphSource(int part, std::vector<std::unique_ptr<GraphClient>> clients, std::vector<int> tiers,
                                     double retry_after_seconds)
    : part_(part), clients_(std::move(clients)), tiers_(std::move(tiers)),
      retry_after_ms_(static_cast<int64_t>(retry_after_seconds * 1000)),
      down_at_ms_(new std::atomic<int64_t>[clients_.size()]) {
  FANOUT_CHECK(!clients_.empty());
  if (tiers_.empty()) tiers_.assign(clients_.size(), 0);
  FANOUT_CHECK(tiers_.size() == clients_.size());
  tier_order_ = tiers_;
  std::sort(tier_order_.begin(), tier_order_.end());
  tier_order_.erase(std::unique(tier_order_.begin(), tier_order_.end()), tier_order_.end());
  for (size_t i = 0; i < clients_.size(); ++i) down_at_ms_[i] = 0;
}

std::unique_ptr<RemoteGraphSource> RemoteGraphSource::Connect(const base::ServerMap& servers, int part, int machine,
                                                              const ClientOptions& options) {
  ClientOptions counted = options;
  if (servers.addresses.at(part).size() + servers.ReplicasOf(part).size() > 1) counted.max_attempts = 1;
  ClientOptions uncounted = counted;
  uncounted.wire = nullptr;
  std::vector<std::unique_ptr<GraphClient>> clients;
  std::vector<int> tiers;
  for (const std::string& a : servers.addresses.at(part)) {
    clients.push_back(GraphClient::Connect(a, servers.OnMachine(a, machine) ? uncounted : counted));
    tiers.push_back(1);
  }
  for (const std::string& a : servers.ReplicasOf(part)) {
    const bool here = servers.OnMachine(a, machine);
    clients.push_back(GraphClient::Connect(a, here ? uncounted : counted));
    tiers.push_back(here ? 0 : 2);
  }
  return std::make_unique<RemoteGraphSource>(part, std::move(clients), std::move(tiers));
}

namespace {

int64_t NowMs() {
  // Never 0, which means "live".
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
             .count() +
         1;
}

}  // namespace

size_t RemoteGraphSource::live_servers() const {
  size_t n = 0;
  for (size_t i = 0; i < clients_.size(); ++i) n += down_at_ms_[i].load() == 0;
  return n;
}

size_t RemoteGraphSource::Pick() {
  const size_t n = clients_.size();
  const uint64_t start = next_.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = NowMs();
  for (int tier : tier_order_) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (start + k) % n;
      if (tiers_[i] != tier) continue;
      int64_t at = down_at_ms_[i].load();
      if (at == 0) return i;
      if (now - at >= retry_after_ms_ && down_at_ms_[i].compare_exchange_strong(at, now)) return i;
    }
  }
  return n;
}

void RemoteGraphSource::WithFailover(std::shared_ptr<const Call> call, core::Done done, size_t tried) {
  const size_t n = clients_.size();
  size_t pick = Pick();
  if (pick == n) pick = next_.load(std::memory_order_relaxed) % n;  // every server out: try anyway, report its answer
  (*call)(clients_[pick].get(), [this, call, done = std::move(done), pick, tried](absl::Status s) mutable {
    const bool failed = s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded;
    if (!failed) {
      if (down_at_ms_[pick].exchange(0) != 0) {
        std::fprintf(stderr, "fanout: server %s of partition %d answers again\n", clients_[pick]->address().c_str(),
                     part_);
      }
      return done(std::move(s));
    }
    if (down_at_ms_[pick].exchange(NowMs()) == 0) {  // (a retry that failed again says nothing)
      std::fprintf(stderr, "fanout: server %s of partition %d is unavailable (%s); %zu other server(s) left\n",
                   clients_[pick]->address().c_str(), part_, std::string(s.message()).c_str(), live_servers());
    }
    if (tried + 1 >= clients_.size() || live_servers() == 0) {
      return done(absl::Status(s.code(), StrCat(Describe(), ": no server left answering; the last said: ", s.message())));
    }
    WithFailover(std::move(call), std::move(done), tried + 1);
  });
}

std::string RemoteGraphSource::Describe() const {
  std::vector<std::string> addresses;
  for (const auto& c : clients_) addresses.push_back(c->address());
  return StrCat("partition ", part_, " (server", clients_.size() > 1 ? "s " : " ", base::StrJoin(addresses, ", "), ")");
}

void RemoteGraphSource::SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                                        core::SampledEdges* out, core::Done done) {
  Send([seeds, options, out](GraphClient* c, core::Done d) { c->SampleNeighborsAsync(seeds, options, out, std::move(d)); },
       std::move(done));
}

void RemoteGraphSource::GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                                   std::span<const int64_t> positions, char* out, core::Done done) {
  const bool node = field.kind == core::FieldRef::Kind::kNode;
  Send(
      [node, key = field.key(), row_bytes, ids, positions, out](GraphClient* c, core::Done d) {
        c->PullRowsAsync(node, key, row_bytes, ids, positions, out, std::move(d));
      },
      std::move(done));
}

void RemoteGraphSource::Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) {
  Send([ids, dir, out](GraphClient* c, core::Done d) { c->GetDegreesAsync(ids, dir, out, std::move(d)); },
       std::move(done));
}

void RemoteGraphSource::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) {
  Send([eids, src, dst](GraphClient* c, core::Done d) { c->FindEdgesAsync(eids, src, dst, std::move(d)); },
       std::move(done));
}

}  // namespace fanout::rpc
