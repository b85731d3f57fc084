// A job process's one handle on the distributed graph: reads through a DistGraph (local partition,
// remote servers with failover), created fields and writes through ServerFields, the halo-caching
// graphs that sampler processes map, and the watch that ends the process when another machine
// stops answering. The Python data plane's `fanout._native.Graph` is this object behind pybind11
// (python/native/module.cc adds only the conversions to and from NumPy), so everything a script
// does to the graph is tested here in C++ (tests/sampler/job_graph_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/partition_config.h"
#include "core/sparse_optim.h"
#include "rpc/reachability.h"
#include "sampler/dist_graph.h"
#include "sampler/server_fields.h"

namespace fanout::sampler {

struct JobGraphOptions {
  std::string part_config;  // the partition config's path
  // This process's machine (its partition is read from its files), or -1 for none.
  int machine_id = -1;
  // Where the servers are: FANOUT_SERVERS' form, else an ip_config file and servers per machine
  // (base::ResolveServers).
  std::string servers;
  std::string ip_config;
  int num_servers = 1;
  double deadline_seconds = 60;  // each RPC's, and connecting's
  // The local partition from its files (else through its servers, when it has any).
  bool read_local_files = true;
  // A machine silent this long ends the process through on_unreachable (0: not watched).
  double unreachable_timeout_seconds = 0;
  std::function<void(const std::string&)> on_unreachable;
};

// Thread-safe.
class JobGraph {
 public:
  // Security settings come from the environment (base::FillSecurityFromEnvironment).
  // INVALID_ARGUMENT for a machine that is not a partition of the config.
  static absl::StatusOr<std::unique_ptr<JobGraph>> Open(const JobGraphOptions& options);
  // The same from settings already resolved (fanout-train's flags: servers found, security
  // loaded into graph.client, wire counters, the halo cache): `config` read from
  // `part_config_path`. `watch.timeout_s` <= 0 or no `on_unreachable`: not watched.
  static absl::StatusOr<std::unique_ptr<JobGraph>> Open(
      core::PartitionConfig config, std::string part_config_path, DistGraphOptions graph,
      const rpc::ReachabilityOptions& watch, std::function<void(const std::string&)> on_unreachable);

  const DistGraph& graph() const { return *graph_; }
  // For the trainer's own samplers, which take the graph they sample by pointer.
  DistGraph* mutable_graph() { return graph_.get(); }
  // The created fields' writer, for the trainer's learnable rows (trainer/dist_embedding.h),
  // which keep their own schemas.
  ServerFields& fields() { return *fields_; }
  const DistGraphOptions& options() const { return options_; }
  const core::PartitionConfig& config() const { return config_; }
  const std::string& part_config_path() const { return part_config_path_; }

  // Stops watching the other machines (the job is ending: its servers may go first).
  void StopWatching();

  // The graph with the halo cache a sampler process opened with `go` (graph()'s options with a
  // cache_field and cache_max_bytes) would pull, held in shared memory, which sampler processes
  // map instead of each pulling a copy (as fanout-train's do). Opened once per (field, size) and
  // kept while this object lives: a script's later loaders (an evaluation's, one per layer in
  // DGL's examples) start without pulling it again.
  absl::StatusOr<const DistGraph*> CachingGraph(const DistGraphOptions& go);

  // A node field in the servers' memory (a DistTensor a script creates): made on every server of
  // every partition, zero-filled. Returns whether this call created it anywhere (false: it
  // existed with this schema, made by another process). INVALID_ARGUMENT for a name the
  // partition's files already have, or a node type the graph does not.
  absl::StatusOr<bool> CreateNodeField(const core::FieldSchema& schema);
  // The schema of a node field: one this object created, or the partition's.
  absl::StatusOr<core::FieldSchema> NodeSchema(const std::string& field) const;
  bool IsCreated(const std::string& field) const;

  // Rows of `field` for `ids`, row i at out + i * NodeSchema(field).row_bytes(): created fields
  // from the servers (or their shared memory), the partition's through graph().
  absl::Status PullNodeRows(const std::string& field, std::span<const int64_t> ids,
                            char* out) const;
  // `rows` (ids.size() rows of the field's dtype and shape, `bytes` in all) written, or added
  // (`add`), to every server of each ID's partition. INVALID_ARGUMENT when `bytes` does not match.
  absl::Status PushNodeRows(const std::string& field, std::span<const int64_t> ids,
                            const char* rows, size_t bytes, bool add);
  // One sparse optimizer step (core/sparse_optim.h) on created field `field`'s rows for distinct
  // `ids`, their state in created field `state_field`, `grads` float32 [ids, dim] (`num_grads`
  // values): every server of each ID's partition applies it where the rows live.
  // INVALID_ARGUMENT for fields this object did not create, a gradient count or a state width
  // that does not fit.
  absl::Status SparseUpdate(const std::string& field, const std::string& state_field,
                            std::span<const int64_t> ids, const float* grads, size_t num_grads,
                            const core::SparseOptimizerOptions& options);

 private:
  JobGraph() = default;
  // The schema of a field this object created, or none.
  std::optional<core::FieldSchema> Created(const std::string& field) const;

  core::PartitionConfig config_;
  std::string part_config_path_;
  DistGraphOptions options_;
  std::unique_ptr<DistGraph> graph_;
  std::unique_ptr<ServerFields> fields_;                  // created fields, on the servers
  std::unique_ptr<rpc::ReachabilityWatch> reachability_;  // null: not watched
  std::mutex watch_mu_;
  std::mutex caching_mu_;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<DistGraph>> caching_;  // CachingGraph's
  mutable std::mutex created_mu_;
  std::map<std::string, core::FieldSchema> created_;  // by key (TYPE/NAME for a typed field)
};

}  // namespace fanout::sampler
