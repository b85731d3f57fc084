#include "rpc/remote_graph_source.h"

#include "base/check.h"
#include "base/strings.h"

namespace fanout::rpc {

using base::StrCat;

RemoteGraphSource::RemoteGraphSource(int part, std::vector<std::unique_ptr<GraphClient>> clients)
    : part_(part), clients_(std::move(clients)) {
  FANOUT_CHECK(!clients_.empty());
}

std::string RemoteGraphSource::Describe() const {
  std::vector<std::string> addresses;
  for (const auto& c : clients_) addresses.push_back(c->address());
  return StrCat("partition ", part_, " (server", clients_.size() > 1 ? "s " : " ", base::StrJoin(addresses, ", "), ")");
}

GraphClient* RemoteGraphSource::Next() {
  return clients_[next_.fetch_add(1, std::memory_order_relaxed) % clients_.size()].get();
}

void RemoteGraphSource::SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                                        core::SampledEdges* out, core::Done done) {
  Next()->SampleNeighborsAsync(seeds, options, out, std::move(done));
}

void RemoteGraphSource::GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                                   std::span<const int64_t> positions, char* out, core::Done done) {
  const bool node = field.kind == core::FieldRef::Kind::kNode;
  if (!node && !field.type.empty()) {
    return done(absl::UnimplementedError(StrCat(field.ToString(), ": typed edge fields are not supported yet")));
  }
  Next()->PullRowsAsync(node, field.key(), row_bytes, ids, positions, out, std::move(done));
}

void RemoteGraphSource::Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) {
  Next()->GetDegreesAsync(ids, dir, out, std::move(done));
}

void RemoteGraphSource::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) {
  Next()->FindEdgesAsync(eids, src, dst, std::move(done));
}

}  // namespace fanout::rpc
