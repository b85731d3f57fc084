// The job's layout as fanout-launch resolved it, and its transport security, handed to each
// process in its environment (trainers read all of it, servers their IDs and security): one
// writer (the launcher's plan, ToEnv), one reader (fanout-train, FromEnvironment), one table of
// variable names between them, so that the two sides cannot drift. The names are also a contract
// with users (docs/launcher.md): any command the launcher starts can read them.
//
// The graph servers travel resolved (FANOUT_SERVERS, every server's address), so the rule that
// places server s of machine k on PORT_k + s lives in the launcher only; FANOUT_IP_CONFIG stays for
// commands that want the machines themselves.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/security_options.h"

namespace fanout::base {

// What other launchers tell a process by their own names (torchrun, and the Slurm or Kubernetes
// wrappers that speak them), read with the job's variables so that no other code reads the
// environment for them: fanout-train falls back to these where fanout-launch's are unset. Raw
// text ("": unset): the code that falls back parses them, naming the variable, so a malformed
// one matters only where it is used.
struct ForeignEnv {
  std::string rank, world_size;        // RANK, WORLD_SIZE
  std::string local_world_size;        // LOCAL_WORLD_SIZE: trainers on this machine
  std::string group_rank, local_rank;  // GROUP_RANK (this machine), LOCAL_RANK
  std::string master_addr, master_port;  // MASTER_ADDR, MASTER_PORT: torch.distributed's store
  std::string omp_num_threads;         // OMP_NUM_THREADS: fanout-train's intra-op threads by default
};

// An environment variable's count: an integer in [0, 2^30], else INVALID_ARGUMENT naming the
// variable and its value. "" leaves `out` as it is (unset).
absl::Status ParseEnvCount(const char* name, const std::string& text, int* out);

struct JobEnv {
  // Unset: "" for text, -1 for counts and indices.
  std::string job_id;       // FANOUT_JOB_ID
  std::string part_config;  // FANOUT_PART_CONFIG: absolute path of <name>.json
  std::string ip_config;    // FANOUT_IP_CONFIG: absolute path of ip_config.txt
  std::string servers;      // FANOUT_SERVERS: "P=HOST:PORT,..." for every server of the job
  std::string coordinator;  // FANOUT_COORDINATOR: host:port of trainer rank 0's rendezvous
  int num_machines = -1;    // FANOUT_NUM_MACHINES (= partitions)
  int machine_id = -1;      // FANOUT_MACHINE_ID: this machine, which hosts that partition
  int num_servers = -1;     // FANOUT_NUM_SERVERS: per machine
  int num_trainers = -1;    // FANOUT_NUM_TRAINERS: per machine
  int num_samplers = -1;    // FANOUT_NUM_SAMPLERS: sampler processes per trainer
  int sampler_nice = -1;    // FANOUT_SAMPLER_NICE: their priority below the trainer's (0-19)
  int local_rank = -1;      // FANOUT_LOCAL_RANK: this trainer on its machine
  int rank = -1;            // FANOUT_RANK
  int world_size = -1;      // FANOUT_WORLD_SIZE
  // FANOUT_RESTART_COUNT: with fanout-launch --max-restarts, how many times the job has been
  // restarted after a failure (0: the first run). A trainer with checkpoints resumes when > 0.
  int restart_count = -1;
  // FANOUT_FEATURES_FROM_DISK_MB: with fanout-launch --features-from-disk-mb N, the servers read
  // node fields from disk behind an N MiB row cache, and so does each process of a trainer that
  // reads its own machine's partition (its sampler processes).
  int features_from_disk_mb = -1;
  // FANOUT_FEATURES_CACHE_POLICY: those row caches' policy (fanout-launch
  // --features-cache-policy: "s3fifo" or "lru"); "" = the default.
  std::string features_cache_policy;
  // Transport security (base/security_options.h's table: FANOUT_TLS_CERT, FANOUT_TLS_KEY,
  // FANOUT_TLS_CA, FANOUT_TLS_SERVER_NAME, FANOUT_AUTH_TOKEN_FILE): the same for every process of
  // the job, servers and trainers alike.
  SecurityOptions security;
  // Other launchers' variables (read, never written by ToEnv).
  ForeignEnv foreign;

  // "NAME=VALUE" for every set field, in the table's order.
  std::vector<std::string> ToEnv() const;
  // The set variables of `getenv` (default: the process's); an empty value counts as unset. A
  // count that is not an integer in [0, 2^30] is an error naming the variable and its value.
  static absl::StatusOr<JobEnv> FromEnvironment(
      const std::function<const char*(const char*)>& getenv = nullptr);
};

}  // namespace fanout::base
