#include "core/graph_source.h"

#include <future>
#include <memory>

#include "base/strings.h"

namespace fanout::core {

std::string FieldRef::ToString() const {
  return base::StrCat(kind == Kind::kNode ? "node" : "edge", " field '", name, "'",
                type.empty() ? "" : base::StrCat(" of type '", type, "'"));
}

absl::Status WaitFor(const std::function<void(Done)>& call) {
  // Shared: `done` may run on another thread and still be inside set_value when this returns.
  auto result = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> ready = result->get_future();
  call([result](absl::Status s) { result->set_value(std::move(s)); });
  return ready.get();
}

LocalGraphSource::LocalGraphSource(std::shared_ptr<const PartitionStore> store) : store_(std::move(store)) {}

std::string LocalGraphSource::Describe() const { return base::StrCat("partition ", store_->part_id(), " (local files)"); }

void LocalGraphSource::SampleNeighbors(std::span<const int64_t> seeds, const SampleOptions& options,
                                       SampledEdges* out, Done done) {
  done(core::SampleNeighbors(*store_, seeds, options, out));
}

void LocalGraphSource::GatherRows(const FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                                  std::span<const int64_t> positions, char* out, Done done) {
  const bool node = field.kind == FieldRef::Kind::kNode;
  absl::StatusOr<FieldSchema> schema = node ? store_->NodeFieldSchema(field.key()) : store_->EdgeFieldSchema(field.key());
  if (!schema.ok()) return done(schema.status());
  if (schema->row_bytes() != row_bytes) {
    return done(absl::FailedPreconditionError(
        base::StrCat(field.ToString(), " has rows of ", schema->row_bytes(), " bytes here; the caller expects ", row_bytes)));
  }
  done(node ? store_->GatherNodeRowsAt(field.key(), ids, positions, out)
            : store_->GatherEdgeRowsAt(field.key(), ids, positions, out));
}

void LocalGraphSource::Degrees(std::span<const int64_t> ids, EdgeDir dir, int64_t* out, Done done) {
  done(store_->Degrees(ids, dir, out));
}

void LocalGraphSource::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, Done done) {
  done(store_->FindEdges(eids, src, dst));
}

}  // namespace fanout::core
