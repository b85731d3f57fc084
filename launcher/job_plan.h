// The plan of a job: every process fanout-launch will start, with its command, environment,
// working folder and, for a machine that is not this host, the ssh command that runs it there.
// Building the plan is pure (BuildJobPlan) so that commands and environments are unit-tested;
// PlanJob does the reading (ip_config, partition config, interfaces) around it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/ip_config.h"
#include "launcher/launch_options.h"

namespace fanout::launcher {

using base::CheckMachinesMatchPartitions;
using base::HostPort;
using base::LoadIpConfig;
using base::MachineEntry;

enum class Role { kServer, kTrainer };
std::string_view RoleName(Role role);  // "server", "trainer"

// Printed by fanout-server once it serves; the launcher waits for it on every server.
inline constexpr std::string_view kServerReadyMarker = "fanout-server: ready:";

struct ProcessSpec {
  Role role = Role::kTrainer;
  int machine = 0;       // index in ip_config, = the partition it trains next to
  int part = -1;         // server: the partition it serves as a replica (-1: its machine's)
  int rank = 0;          // server: its server ID on the machine; trainer: its local rank
  int global_rank = -1;  // trainer: FANOUT_RANK; -1 for servers
  std::string ip;        // the machine's address
  std::string address;   // server: the host:port it listens on; "" for trainers
  bool remote = false;   // started over ssh, through --agent, or with --slurm through srun
  std::string via;       // remote: "ssh", "srun" or "agent" (--agent); "" for a local process

  // What runs on the machine: program and arguments, the variables added to its environment
  // ("NAME=VALUE"), and its working folder.
  std::vector<std::string> command;
  std::vector<std::string> env;
  std::string workspace;

  // What the launcher executes on this host: `command` itself (with `env` added to the
  // launcher's environment and `workspace` as working folder), or for a remote machine the ssh
  // client whose remote command sets up env and workspace there. Remote processes get a pipe as
  // stdin; closing it stops them (see RemoteScript).
  std::vector<std::string> argv;
  std::vector<std::string> local_env;
  std::string local_cwd;

  // "m1 server 0", "m0 trainer 3": the console prefix and log file stem.
  std::string Label() const;
  // A server's partition: its machine's, or `part` for a replica.
  int ServedPart() const { return part >= 0 ? part : machine; }
  // "machine 1 at 10.0.0.2, server 0 on 10.0.0.2:30050" (", replica of partition 0") /
  // "machine 0 at 10.0.0.1, trainer local rank 1, rank 1".
  std::string Describe() const;
};

// A server of another machine that a per-machine launcher (--machine-id) waits for.
struct PeerServer {
  std::string label;  // "m1 server 0"
  std::string host;
  int port = 0;
};

struct JobPlan {
  std::string job_id;
  std::vector<MachineEntry> machines;
  std::string coordinator;          // FANOUT_COORDINATOR, host:port on machine 0
  std::vector<ProcessSpec> servers;   // machine-major: m0 s0, m0 s1, m1 s0, ...
  std::vector<ProcessSpec> trainers;  // in FANOUT_RANK order
  // With --machine-id K: servers and trainers hold machine K's processes only (all local), and
  // peer_servers every other machine's servers, which must accept connections before K's
  // trainers start. -1: the whole job.
  int only_machine = -1;
  std::vector<PeerServer> peer_servers;
};

// A warning to print when the job's servers listen beyond loopback without TLS and a token
// (anyone who can reach their ports could read or, with --allow-push, change the graph); "" when
// every machine is a loopback address or both are configured.
std::string UnprotectedJobWarning(const LaunchOptions& o, const std::vector<MachineEntry>& machines);

// What BuildJobPlan needs besides the options: everything read from files or the host.
struct PlanInputs {
  std::vector<MachineEntry> machines;  // from ip_config
  std::vector<bool> remote;            // per machine: started over ssh (or srun)
  int num_parts = 0;                   // from the partition config
  std::string ip_config_path;          // absolute, as processes will see them
  std::string part_config_path;
  std::string workspace;               // absolute
  std::string job_id;
  std::string server_bin;
  int host_cores = 1;                  // for the default OMP_NUM_THREADS
};

// Builds the plan. Errors: machine/partition count mismatch, server ports past 65535, two
// machines on one address with overlapping server ports, a coordinator port that is a server
// port on machine 0's host.
absl::StatusOr<JobPlan> BuildJobPlan(const LaunchOptions& o, const PlanInputs& in);

// Reads ip_config and the partition config (relative paths under the workspace), decides which
// machines are local (getifaddrs; with --machine-id only that machine, without resolving others), finds fanout-server and, for local machines, checks that the
// server and trainer programs exist; then BuildJobPlan. Starts nothing.
absl::StatusOr<JobPlan> PlanJob(const LaunchOptions& o);

// Text for --dry-run: per process its label, what it is, and the shell command that would run
// it ("cd WS && env NAME=VALUE... command" on this host; the full ssh command for a remote one).
std::string DescribePlan(const JobPlan& plan);

// --- shell commands (exposed for tests) ---

// `s` as one POSIX shell word: unchanged when it only has safe characters, else single-quoted.
std::string ShellQuote(std::string_view s);
std::string ShellJoin(const std::vector<std::string>& words);

// The sh script a remote machine runs: cd to the workspace, start `env NAME=VALUE... command`
// in its own session, and watch stdin: when it closes (the launcher stopped the job, died, or
// the connection dropped) the command's process group gets SIGTERM, then SIGKILL after
// `kill_grace_s`. The script exits with the command's status (128 + N if signal N ended it).
std::string RemoteScript(const std::string& workspace, const std::vector<std::string>& env,
                         const std::vector<std::string>& command, double kill_grace_s);

// ssh [options] -p PORT [user@]ip 'sh -c <script>'.
std::vector<std::string> SshArgv(const LaunchOptions& o, const std::string& ip,
                                 const std::string& script);

// --agent's command for machine `index` at `host` (its words, "{index}" and "{host}" replaced),
// then sh -c <script>; the agent hands its stdin to the script, so the watcher works as over ssh.
std::vector<std::string> AgentArgv(const std::string& agent, int index, const std::string& host,
                                   const std::string& script);

// srun, one task on node `host` as a step of the current allocation, sharing the node with the
// job's other steps (--overlap), running sh -c <script>; srun hands its stdin to the task, so
// the script's watcher works as over ssh. `name` names the step (squeue, sacct).
std::vector<std::string> SrunArgv(const LaunchOptions& o, const std::string& host, const std::string& name,
                                  const std::string& script);

// --- Slurm ---

// The ip_config text for the allocation's nodes (`hosts`, in Slurm's order), all on `port`.
std::string SlurmIpConfigText(const std::vector<std::string>& hosts, int port, const std::string& slurm_job_id,
                              const std::string& nodelist);

// With --slurm: expands SLURM_JOB_NODELIST with `scontrol show hostnames` and writes the
// ip_config to `path` (atomically). An existing file is kept when it holds the same text and is
// otherwise an error: the launcher never overwrites a file it did not write for this job.
absl::Status WriteSlurmIpConfig(const LaunchOptions& o, const std::string& path);

}  // namespace fanout::launcher
