// fanout-launch's options, filled once from the command line, and their validation.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/security_options.h"

namespace fanout::launcher {

struct LaunchOptions {
  // Files. Relative paths are relative to the workspace (as in DGL's launch.py).
  std::string ip_config;    // required: one machine per line, `IP [PORT]`
  std::string part_config;  // required: <name>.json from fanout-partition; num_parts == machines
  std::string workspace;    // "" = the launcher's working folder; must exist on every machine

  // Processes per machine.
  int num_servers = 1;   // graph servers per machine; server s listens on PORT + s
  // Partitions each machine also serves as a replica (base::ServersOf: machine k serves
  // partitions k-1 .. k-R on PORT + num_servers + j), read when a partition's own machine does
  // not answer, or by the replica's machine itself. 0..machines-1; each needs that partition's
  // files on the machine (a shared folder, or copied).
  int replicas = 0;
  int ServersPerMachine() const { return num_servers + replicas; }
  int num_trainers = 1;  // trainers per machine
  int num_samplers = 0;  // sampler processes per trainer (started by the trainer itself)
  int sampler_nice = -1;  // their priority below the trainer's, 0-19; -1: the trainer's default

  // Remote machines.
  std::string ssh_command = "ssh";  // the ssh client (a path, or a name found in PATH)
  std::string ssh_user;             // "" = ssh's default
  int ssh_port = 22;
  bool always_ssh = false;  // start local machines over ssh (with --slurm: srun) too, as DGL does
  // --agent: reach every machine through this command instead of ssh (Open MPI's
  // plm_rsh_agent): its words, "{index}" and "{host}" replaced by the machine's index and
  // ip_config address, then "sh -c SCRIPT" (e.g. "ip netns exec fanout-m{index}", "docker exec -i
  // node{index}", "kubectl exec -i pod-{index} --"). No machine is then local. "" = ssh.
  std::string agent;

  // One launcher per machine (--machine-id K, e.g. one per Kubernetes pod, or
  // `srun --ntasks-per-node=1 fanout-launch --machine-id $SLURM_NODEID`): start machine K's
  // servers and trainers here, wait until every other machine's servers accept connections
  // (within --server-timeout), then start the trainers; stop when they are done. -1: start the
  // whole job from here.
  int machine_id = -1;

  // Slurm (--slurm), inside an allocation (sbatch or salloc): the machines are the allocation's
  // nodes (SLURM_JOB_NODELIST, expanded by `scontrol show hostnames`), one partition per node;
  // the launcher writes their ip_config (to --ip-config, default ip_config.slurm-<job>.txt in
  // the workspace) and starts the processes of other nodes with srun instead of ssh.
  bool slurm = false;
  int slurm_port = 30050;                 // every node's base port
  std::string srun_command = "srun";
  std::string scontrol_command = "scontrol";

  // What the processes get.
  std::string server_bin;        // "" = fanout-server next to fanout-launch (or in PATH)
  int num_server_threads = 0;    // fanout-server --num-threads; 0 = the server's default
  bool allow_push = false;       // fanout-server --allow-push: clients may write node data
  // >= 0: servers read node fields from disk behind a row cache of this many MiB
  // (fanout-server --feature-cache-mb), and trainers read their machine's the same way
  // (FANOUT_FEATURES_FROM_DISK_MB); -1: both map them.
  int features_from_disk_mb = -1;
  std::string features_cache_policy = "s3fifo";  // their row caches' policy: s3fifo or lru
  int num_omp_threads = 0;       // trainers' OMP_NUM_THREADS; 0 = max(1, cores / 2 / trainers)
  int coordinator_port = 0;      // 0 = the first port after the highest server port
  std::vector<std::string> extra_env;  // "NAME=VALUE" for every process, after the launcher's own
  std::string job_id;            // "" = <date>-<time>-<launcher pid>

  // Supervision.
  double server_timeout_s = 60;  // how long servers get to report ready
  double stop_grace_s = 5;       // SIGTERM (remote: hang-up) to SIGKILL when stopping the job
  double heartbeat_s = 1;          // servers and trainers send a heartbeat this often
  double heartbeat_timeout_s = 8;  // silent this long after their first: hung (0: not watched)
  std::string log_dir;           // "" = fanout-logs/<job-id> in the launcher's working folder
  bool dry_run = false;          // print the plan (every command and environment) and exit

  // Restarts (launcher/restarts.h): after a failure the whole job is stopped as always, then
  // started again, up to max_restarts times, after restart_backoff_s (doubled each time, at
  // most 5 minutes). Trainers see the attempt in FANOUT_RESTART_COUNT.
  int max_restarts = 0;
  double restart_backoff_s = 5;
  int restart_count = 0;  // the attempt being planned (set by the restart loop, not a flag)

  // Who may talk to the servers (base/security_options.h): servers get the flags, trainers
  // (and their samplers) the FANOUT_TLS_* / FANOUT_AUTH_TOKEN_FILE variables. Relative paths
  // are relative to the workspace. A job across machines without TLS and a token is warned of.
  base::SecurityOptions security;

  std::vector<std::string> command;  // the trainer command, everything after `--`
};

// Checks the flag values alone (no files are read): counts, ports, names, the command. An error
// here is a usage error.
absl::Status ValidateLaunchOptions(const LaunchOptions& o);


// Splits one --extra-env value into NAME=VALUE items: "A=1,B=2" is two items, while a comma not
// followed by NAME= stays in the value ("CUDA_VISIBLE_DEVICES=0,1" is one item); a trailing
// comma is dropped.
std::vector<std::string> SplitExtraEnv(const std::string& value);

// True for a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvName(const std::string& name);

}  // namespace fanout::launcher
