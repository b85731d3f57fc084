#include "rpc/remote_graph_source.h"

#include <cstdio>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/strings.h"

namespace fanout::rpc {

using base::StrCat;

RemoteGraphSource::RemoteGraphSource(int part, std::vector<std::unique_ptr<GraphClient>> clients)
    : part_(part), clients_(std::move(clients)), down_(new std::atomic<bool>[clients_.size()]) {
  FANOUT_CHECK(!clients_.empty());
  for (size_t i = 0; i < clients_.size(); ++i) down_[i] = false;
}

size_t RemoteGraphSource::live_servers() const {
  size_t n = 0;
  for (size_t i = 0; i < clients_.size(); ++i) n += !down_[i].load();
  return n;
}

void RemoteGraphSource::WithFailover(std::shared_ptr<const Call> call, core::Done done, size_t tried) {
  const size_t n = clients_.size();
  size_t pick = n;
  const uint64_t start = next_.fetch_add(1, std::memory_order_relaxed);
  for (size_t k = 0; k < n && pick == n; ++k) {
    if (!down_[(start + k) % n].load()) pick = (start + k) % n;
  }
  if (pick == n) pick = start % n;  // every server taken out: try anyway, and report its answer
  (*call)(clients_[pick].get(), [this, call, done = std::move(done), pick, tried](absl::Status s) mutable {
    if (s.code() != absl::StatusCode::kUnavailable) return done(std::move(s));
    if (!down_[pick].exchange(true)) {
      std::fprintf(stderr, "fanout: server %s of partition %d is unavailable (%s); %zu other server(s) left\n",
                   clients_[pick]->address().c_str(), part_, std::string(s.message()).c_str(), live_servers());
    }
    if (tried + 1 >= clients_.size() || live_servers() == 0) {
      return done(absl::UnavailableError(StrCat(Describe(), ": no server left answering; the last said: ", s.message())));
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
