// Node fields that live in the graph servers' memory, not in the partition's files: DistDGL's
// DistTensor (a script's own field) and DistEmbedding (learnable rows of a typed graph's
// featureless nodes). A field is created on every server of every partition (each server holds
// its own partition's rows, zero-filled), read from one server of each owning partition and
// written to all of them, so that whichever server answers a later read has the rows. Any server
// creates, writes and reads them (within its --max-created-bytes); --allow-push is for the
// partition's own fields.
//
// A server keeps created rows in shared memory and says how to map them (core/shared_rows.h).
// Where this process may map them (a server on this machine, run by this user), Pull reads that
// partition's rows and SparseUpdate applies the optimizer to them in place, with no RPC: a
// trainer updates the rows of its own machine's partition, which is where the job's learnable
// embeddings send each row's gradient (trainer/dist_embedding.h). Push and every other partition
// go through the servers. The rows' bytes are not locked between processes: as in DistDGL's
// KVStore, the job orders its reads after the writes they must see (DistEmbeddings' barrier).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/ip_config.h"
#include "core/partition_book.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "core/shared_rows.h"
#include "core/sparse_optim.h"
#include "rpc/client_options.h"
#include "rpc/remote_graph_source.h"

namespace fanout::rpc {
class GraphClient;
}

namespace fanout::sampler {

// Thread-safe.
class ServerFields {
 public:
  // `servers`: every partition's servers (a partition without any cannot hold created fields:
  // calls that need it fail naming it). `client.security` should be loaded already.
  // `map_shared` false: every partition through its servers, none mapped. `machine_id`: this
  // process's machine (-1: none), whose servers (its partition's, and replicas on its host) are
  // read first and whose calls count no bytes in client.wire, as DistGraph's reads (they cross no
  // link).
  static absl::StatusOr<std::unique_ptr<ServerFields>> Make(const core::PartitionConfig& config,
                                                            base::ServerMap servers, rpc::ClientOptions client,
                                                            bool map_shared = true, int machine_id = -1);
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
  // Whether this process reads and updates partition `part`'s rows of `schema` in shared memory
  // (every server of the partition mapped; Create maps them).
  bool Mapped(const core::FieldSchema& schema, int part) const;

 private:
  ServerFields(core::PartitionConfig config, core::RangePartitionBook book, base::ServerMap servers,
               rpc::ClientOptions client, bool map_shared, int machine_id);
  // One server's copy of a created field, mapped: rows of nodes [first_id, first_id + num_rows).
  struct MappedRows {
    std::unique_ptr<core::SharedRows> shm;
    int64_t first_id = 0, num_rows = 0;
    size_t row_bytes = 0;
  };
  // Partition `part`'s mapped copies of field `key` (one per server), or empty when any of its
  // servers' is not mapped.
  std::vector<const MappedRows*> MappedCopies(const std::string& key, int part) const;
  // The positions of `ids` (all of partition `part`) as row indices of `copy`; INVALID_ARGUMENT
  // for an ID outside its rows (a node of another type for a typed field).
  absl::StatusOr<std::vector<int64_t>> RowIndices(const MappedRows& copy, const std::string& key,
                                                  std::span<const int64_t> ids, std::span<const int64_t> positions) const;
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
  std::map<std::string, std::unique_ptr<rpc::GraphClient>> clients_;  // by address, under mu_ (writes)
  const int machine_id_;  // this process's machine (-1: none): base::ServerMap::OnMachine
  // Reads, per partition with servers: a replica on this machine first, its own servers in turn,
  // its other replicas when none answers (rpc::RemoteGraphSource::Connect, as DistGraph builds them).
  std::vector<std::unique_ptr<rpc::RemoteGraphSource>> readers_;
  std::atomic<uint64_t> read_turn_{0};  // spreads mapped reads over a partition's copies
  const bool map_shared_;
  // (field key, server address) -> its mapped rows; entries are only added (Create), and a
  // MappedRows stays where it is until this object goes.
  mutable std::shared_mutex mapped_mu_;
  std::map<std::pair<std::string, std::string>, MappedRows> mapped_;  // under mapped_mu_
};

}  // namespace fanout::sampler
