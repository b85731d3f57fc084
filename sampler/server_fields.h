// Node fields that live in the graph servers' memory, not in the partition's files: DistDGL's
// DistTensor (a script's own field) and DistEmbedding (learnable rows of a typed graph's
// featureless nodes). A field is created on every server of every partition (each server holds
// its own partition's rows, zero-filled), read from one server of each owning partition and
// written to all of them, so that whichever server answers a later read has the rows. Any server
// creates, writes and reads them (within its --max-created-bytes); --allow-push is for the
// partition's own fields.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/ip_config.h"
#include "core/partition_book.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "core/sparse_optim.h"
#include "rpc/client_options.h"

namespace fanout::rpc {
class GraphClient;
}

namespace fanout::sampler {

// Thread-safe.
class ServerFields {
 public:
  // `servers`: every partition's servers (a partition without any cannot hold created fields:
  // calls that need it fail naming it). `client.security` should be loaded already.
  static absl::StatusOr<std::unique_ptr<ServerFields>> Make(const core::PartitionConfig& config,
                                                            base::ServerMap servers, rpc::ClientOptions client);
  ~ServerFields();

  // Creates `schema` (a node field, or with node_type one for that type's nodes only) on every
  // server. Returns whether this call created it anywhere (false: it existed with this schema,
  // made by another process of the job).
  absl::StatusOr<bool> Create(const core::FieldSchema& schema);
  // Rows of `schema` for `ids` (any partitions; of its type when typed), row i to
  // out + i * schema.row_bytes(). The partitions are asked in parallel.
  absl::Status Pull(const core::FieldSchema& schema, std::span<const int64_t> ids, char* out);
  // Writes (or adds) rows[i] to `ids[i]`'s row on every server of its partition.
  absl::Status Push(const core::FieldSchema& schema, std::span<const int64_t> ids, const char* rows, core::PushOp op);
  // One sparse optimizer step on the rows of `rows` (float32 [dim]) for distinct `ids`, their
  // state in `state`, `grads` [ids.size(), dim]: applied by every server of each ID's partition
  // to its copy (the same step on the same bytes, so the copies stay equal).
  absl::Status SparseUpdate(const core::FieldSchema& rows, const core::FieldSchema& state, std::span<const int64_t> ids,
                            const float* grads, const core::SparseOptimizerOptions& options);

 private:
  ServerFields(core::PartitionConfig config, core::RangePartitionBook book, base::ServerMap servers,
               rpc::ClientOptions client);
  rpc::GraphClient& Client(const std::string& address);
  // positions[p]: the positions in `ids` owned by partition p; checks every partition with IDs
  // has a server.
  absl::StatusOr<std::vector<std::vector<int64_t>>> ByPartition(std::span<const int64_t> ids,
                                                                const std::string& what) const;

  core::PartitionConfig config_;
  core::RangePartitionBook book_;
  base::ServerMap servers_;
  rpc::ClientOptions client_options_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<rpc::GraphClient>> clients_;  // by address, under mu_
  std::atomic<uint64_t> read_turn_{0};  // spreads reads over a partition's servers
};

}  // namespace fanout::sampler
