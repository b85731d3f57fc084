// fanout-launch: starts a training job on every machine of an ip_config.txt.
//
//   fanout-launch --ip-config ip_config.txt --part-config OUT/graph.json --num-servers 1
//       --num-trainers 2 --num-samplers 2 -- fanout-train --model sage ...
#include <signal.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/security_options.h"
#include "base/strings.h"
#include "launcher/job_plan.h"
#include "launcher/launch_options.h"
#include "launcher/restarts.h"
#include "launcher/supervisor.h"

namespace {

constexpr const char* kAbout =
    "Starts --num-servers graph servers and --num-trainers trainers on every machine listed in\n"
    "--ip-config (machine k serves partition k; local addresses are started directly, others\n"
    "over ssh), streams their output prefixed with [mK role rank], keeps a log per process, and\n"
    "stops the whole job on the first failure, on Ctrl-C, or when every trainer has exited 0.\n"
    "The trainer command follows '--'; it reads its place in the job from FANOUT_* variables\n"
    "(docs/launcher.md) and starts its own --num-samplers sampler processes.\n\n";

int UsageError(const fanout::base::ArgParser& args, const std::string& message) {
  (void)args;
  std::fprintf(stderr, "fanout-launch: error: %s; 'fanout-launch --help' lists the flags\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fanout;
  launcher::LaunchOptions o;
  // Everything after the first `--` is the trainer command, whatever flags it has.
  std::vector<std::string> own;
  int i = 1;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) own.push_back(argv[i]);
  for (++i; i < argc; ++i) o.command.push_back(argv[i]);

  base::ArgParser args("fanout-launch",
                       "--ip-config FILE --part-config FILE [flags] -- TRAINER COMMAND...");
  args.SetDescription(kAbout);
  args.AddString("ip-config", &o.ip_config, "machines, one 'HOST [PORT]' per line (DGL's format); with --slurm, the file written");
  args.AddString("part-config", &o.part_config, "the <name>.json written by fanout-partition");
  args.AddString("workspace", &o.workspace,
                 "folder every process runs in, on every machine; relative paths are relative "
                 "to it (default: the current folder)");
  args.AddInt("num-servers", &o.num_servers, "graph servers per machine");
  args.AddInt("replicas", &o.replicas,
              "partitions each machine also serves as a replica: machine k serves partitions k-1 .. k-R too, on "
              "ports PORT+num-servers.., so that a partition stays served while its machine does not answer "
              "(each machine needs those partitions' files)");
  args.AddInt("num-trainers", &o.num_trainers, "trainers per machine");
  args.AddInt("num-samplers", &o.num_samplers, "sampler processes per trainer (the trainer starts them)");
  args.AddInt("sampler-nice", &o.sampler_nice,
              "how much those sampler processes lower their priority below the trainer's once their batches are "
              "ahead of the step (0-19; -1: the trainers' default, 10)");
  args.AddString("ssh-user", &o.ssh_user, "user name on remote machines (default: ssh's)");
  args.AddInt("ssh-port", &o.ssh_port, "ssh port of remote machines");
  args.AddString("ssh-command", &o.ssh_command, "the ssh client to run");
  args.AddBool("always-ssh", &o.always_ssh, "start local machines over ssh (with --slurm: srun) too, as DGL does");
  args.AddString("agent", &o.agent,
                 "reach every machine through this command instead of ssh: its words with {index} and {host} "
                 "replaced by the machine's index and address, then 'sh -c SCRIPT' (e.g. 'ip netns exec "
                 "fanout-m{index}', 'docker exec -i node{index}'); no machine is then local");
  args.AddInt("machine-id", &o.machine_id,
              "start only machine K's servers and trainers (one launcher per machine, e.g. per pod); "
              "its trainers start once every machine's servers answer (-1 = the whole job)");
  args.AddBool("slurm", &o.slurm,
               "inside a Slurm allocation: one machine per node (SLURM_JOB_NODELIST), ip_config written "
               "to --ip-config (default ip_config.slurm-<job>.txt), other nodes started with srun");
  args.AddInt("slurm-port", &o.slurm_port, "with --slurm: every node's base server port");
  args.AddString("srun-command", &o.srun_command, "with --slurm: the srun to run");
  args.AddString("scontrol-command", &o.scontrol_command, "with --slurm: the scontrol that expands the node list");
  args.AddString("server-bin", &o.server_bin,
                 "fanout-server's path on every machine (default: next to fanout-launch, else PATH)");
  args.AddInt("features-from-disk-mb", &o.features_from_disk_mb,
              "read node fields (features) from disk instead of mapping them, for features larger than the "
              "machines' memory: each server (fanout-server --feature-cache-mb) and each sampler process reading "
              "its machine's partition keeps a row cache of this many MiB; -1 = map them",
              -1);
  args.AddChoice("features-cache-policy", &o.features_cache_policy, {"s3fifo", "lru"},
                 "with --features-from-disk-mb: the row caches' policy (S3-FIFO, scan-resistant; LRU for "
                 "comparison)");
  args.AddBool("allow-push", &o.allow_push,
               "servers accept writes to the partition's own node data (fanout-server --allow-push); tensors and "
               "embeddings the job creates need no flag");
  args.AddInt("num-server-threads", &o.num_server_threads,
              "worker threads per server (0 = fanout-server's default)");
  args.AddInt("num-trainer-threads", &o.num_omp_threads,
              "each trainer's --num-threads, passed as OMP_NUM_THREADS (0 = max(1, cores / 2 / trainers))");
  args.AddAlias("num-omp-threads", "num-trainer-threads");  // DGL launch.py's --num_omp_threads
  args.AddInt("coordinator-port", &o.coordinator_port,
              "port of the trainers' rendezvous on machine 0 (0 = first port after every server port)");
  std::vector<std::string> extra_env_values;
  args.AddRepeatedString("extra-env", &extra_env_values,
                         "NAME=VALUE for every process; repeat it, or separate with commas");
  args.AddString("job-id", &o.job_id, "names the job in logs and FANOUT_JOB_ID (default: time-pid)");
  args.AddDouble("server-timeout", &o.server_timeout_s, "seconds servers get to report ready");
  args.AddDouble("stop-grace", &o.stop_grace_s, "seconds between SIGTERM and SIGKILL when stopping");
  args.AddDouble("heartbeat-interval", &o.heartbeat_s, "seconds between heartbeats of servers and trainers");
  args.AddDouble("heartbeat-timeout", &o.heartbeat_timeout_s,
                 "a server or trainer silent this long is hung: the job stops (0 = not watched)");
  args.AddString("log-dir", &o.log_dir, "per-process logs (default: fanout-logs/<job-id>)");
  args.AddInt("max-restarts", &o.max_restarts,
              "after a failure, stop the job and start it again up to N times; trainers resume from "
              "their newest checkpoint (docs/launcher.md, Restarts)",
              0, 1000);
  args.AddDouble("restart-backoff", &o.restart_backoff_s,
                 "seconds before the first restart; doubled for each next one, at most 300");
  args.AddBool("dry-run", &o.dry_run, "print every command and environment, start nothing");
  base::AddSecurityFlags(args, &o.security);

  std::vector<char*> own_argv = {argv[0]};
  for (std::string& a : own) own_argv.push_back(a.data());
  if (std::optional<int> exit = args.ParseForMain(static_cast<int>(own_argv.size()), own_argv.data())) {
    return *exit;
  }
  for (const std::string& v : extra_env_values) {
    for (std::string& item : launcher::SplitExtraEnv(v)) o.extra_env.push_back(std::move(item));
  }
  if (absl::Status s = launcher::ValidateLaunchOptions(o); !s.ok()) {
    return UsageError(args, std::string(s.message()));
  }

  absl::StatusOr<launcher::JobPlan> plan = launcher::PlanJob(o);
  if (!plan.ok()) return args.Fail(plan.status());
  if (std::string w = launcher::UnprotectedJobWarning(o, plan->machines); !w.empty()) {
    std::fprintf(stderr, "%s", w.c_str());
  }
  if (o.dry_run) {
    std::printf("%s", launcher::DescribePlan(*plan).c_str());
    return 0;
  }
  // A console that went away must not kill the launcher before it has stopped the job.
  signal(SIGPIPE, SIG_IGN);
  launcher::SupervisorOptions so;
  so.server_timeout_s = o.server_timeout_s;
  so.stop_grace_s = o.stop_grace_s;
  so.heartbeat_timeout_s = o.heartbeat_timeout_s;
  so.log_dir = o.log_dir.empty() ? base::StrCat("fanout-logs/", plan->job_id) : o.log_dir;
  return launcher::RunWithRestarts(std::move(o), std::move(*plan), so);
}
