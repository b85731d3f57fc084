#include "launcher/job_plan.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/check.h"
#include "base/fsync.h"
#include "base/heartbeat.h"
#include "base/ip_config.h"
#include "base/job_env.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "launcher/local_address.h"
#include "launcher/process.h"

namespace fanout::launcher {
namespace {

namespace fs = std::filesystem;
using base::StrCat;

std::string Var(const char* name, const std::string& value) { return StrCat(name, "=", value); }
std::string Var(const char* name, int value) { return StrCat(name, "=", value); }
std::string Var(const char* name, double value) { return StrCat(name, "=", value); }

// Fills argv / local_env / local_cwd: the command itself here, or ssh (srun) for a remote machine.
void SetLaunchCommand(const LaunchOptions& o, ProcessSpec* p) {
  if (p->remote) {
    const std::string script = RemoteScript(p->workspace, p->env, p->command, o.stop_grace_s);
    p->via = o.slurm ? "srun" : !o.agent.empty() ? "agent" : "ssh";
    if (!o.agent.empty()) {
      p->argv = AgentArgv(o.agent, p->machine, p->ip, script);
    } else if (o.slurm) {
      std::string name = StrCat("fanout-", p->Label());  // the step's name in squeue and sacct
      std::replace(name.begin(), name.end(), ' ', '-');
      p->argv = SrunArgv(o, p->ip, name, script);
    } else {
      p->argv = SshArgv(o, p->ip, script);
    }
    p->local_env.clear();
    p->local_cwd.clear();
  } else {
    p->argv = p->command;
    p->local_env = p->env;
    p->local_cwd = p->workspace;
  }
}

std::string Where(const std::string& ip_config_path, const MachineEntry& m) {
  return StrCat(ip_config_path, ":", m.line);
}

bool IsExecutableFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

// Where `program` is found as execvp would find it, running in `cwd`; "" when nowhere.
std::string FindProgram(const std::string& program, const std::string& cwd) {
  if (program.find('/') != std::string::npos) {
    fs::path p = fs::path(program).is_absolute() ? fs::path(program) : fs::path(cwd) / program;
    return IsExecutableFile(p) ? p.string() : "";
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(start, colon - start);
    fs::path p = (dir.empty() ? fs::path(cwd) : fs::path(dir)) / program;
    if (IsExecutableFile(p)) return p.string();
    start = colon + 1;
  }
  return "";
}

// fanout-server next to this executable (an installation), or in the build tree next door
// (build/launcher/fanout-launch, build/server/fanout-server); else the bare name, which each
// machine looks up in its PATH.
std::string DefaultServerBin() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p : {self.parent_path() / "fanout-server",
                       self.parent_path().parent_path() / "server" / "fanout-server"}) {
      if (IsExecutableFile(p)) return fs::canonical(p, ec).string();
    }
  }
  return "fanout-server";
}

std::string DefaultJobId() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return StrCat(buf, "-", getpid());
}

std::string Absolute(const std::string& base, const std::string& path) {
  fs::path p(path);
  return (p.is_absolute() ? p : fs::path(base) / p).lexically_normal().string();
}

}  // namespace

std::string_view RoleName(Role role) { return role == Role::kServer ? "server" : "trainer"; }

std::string ProcessSpec::Label() const { return StrCat("m", machine, " ", RoleName(role), " ", rank); }

std::string ProcessSpec::Describe() const {
  if (role == Role::kServer) {
    return StrCat("machine ", machine, " at ", ip, ", server ", rank, " on ", address,
                  ServedPart() != machine ? StrCat(", replica of partition ", part) : "");
  }
  return StrCat("machine ", machine, " at ", ip, ", trainer local rank ", rank, ", rank ", global_rank);
}

std::string ShellQuote(std::string_view s) {
  bool safe = !s.empty();
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              std::string_view("_-./:=@%+,").find(c) != std::string_view::npos;
    if (!ok) safe = false;
  }
  if (safe) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string ShellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(w);
  }
  return out;
}

std::string RemoteScript(const std::string& workspace, const std::vector<std::string>& env,
                         const std::vector<std::string>& command, double kill_grace_s) {
  std::vector<std::string> run = {"setsid", "env"};
  run.insert(run.end(), env.begin(), env.end());
  run.insert(run.end(), command.begin(), command.end());
  const int grace = std::max(1, static_cast<int>(std::ceil(kill_grace_s)));
  // The command runs under setsid so that its process group (= its pid) can be signalled as a
  // whole. A background job of a non-interactive sh is not a group leader, so setsid does not
  // fork and $! is the command's own pid. The watcher reads the launcher's end of the pipe
  // (ssh's stdin) until end of file: the launcher closed it, died, or the connection dropped.
  // dash's kill takes `-TERM -PGID` but not `--`.
  // A command ended by SIGKILL (status 137) while the out-of-memory kills of its memory cgroup
  // rose (ReadOomKillCount's files; /proc/vmstat where a network namespace's /sys remount hides
  // them) gets a last error line saying so, naming that cgroup and its limit where /sys shows
  // them: the launcher ends the job's failure line with it (OomKillHint's, for a local process).
  return StrCat(
      "cd ", ShellQuote(workspace), " || exit 126\n",
      "cg=$(sed -n 's/^[0-9]*:memory:\\(.*\\)$/\\1/p; s/^0::\\(.*\\)$/\\1/p' /proc/self/cgroup | head -n 1)\n",
      "oom_kills() {\n",
      "  for f in \"/sys/fs/cgroup/memory$cg/memory.oom_control\" \"/sys/fs/cgroup$cg/memory.events.local\" /proc/vmstat; do\n",
      "    if [ -r \"$f\" ]; then awk '$1 == \"oom_kill\" {print $2; exit}' \"$f\"; return; fi\n",
      "  done\n",
      "}\n",
      "oom0=$(oom_kills)\n",
      "exec 3<&0 </dev/null\n",
      ShellJoin(run), " 3<&- &\n",
      "child=$!\n",
      "setsid sh -c 'while read -r _; do :; done; kill -TERM -$1 2>/dev/null; sleep ", grace,
      "; kill -KILL -$1 2>/dev/null' watch \"$child\" <&3 >/dev/null 2>&1 &\n",
      "watcher=$!\n",
      "exec 3<&-\n",
      "wait \"$child\"\n",
      "rc=$?\n",
      "kill -KILL -\"$watcher\" 2>/dev/null\n",
      "kill -KILL -\"$child\" 2>/dev/null\n",
      "oom1=$(oom_kills)\n",
      "if [ \"$rc\" = 137 ] && [ -n \"$oom0\" ] && [ -n \"$oom1\" ] && [ \"$oom1\" -gt \"$oom0\" ]; then\n",
      "  lim=$(cat \"/sys/fs/cgroup/memory$cg/memory.limit_in_bytes\" \"/sys/fs/cgroup$cg/memory.max\" 2>/dev/null | head -n 1)\n",
      "  case $lim in *[!0-9]* | ???????????????????*) lim= ;; esac\n",
      "  echo \"fanout-launch: error: killed by the kernel's out-of-memory killer (the oom_kill count of its memory",
      " cgroup, or the machine's, rose while it ran; memory cgroup ${cg:-/}${lim:+, limit $lim bytes}): ",
      kOutOfMemoryRemedy, "\" >&2\n",
      "fi\n",
      "exit \"$rc\"\n");
}

std::vector<std::string> SshArgv(const LaunchOptions& o, const std::string& ip,
                                 const std::string& script) {
  return {o.ssh_command,
          "-T",
          "-o", "BatchMode=yes",
          "-o", "StrictHostKeyChecking=accept-new",
          "-o", "ServerAliveInterval=10",
          "-o", "ServerAliveCountMax=3",
          "-p", std::to_string(o.ssh_port),
          o.ssh_user.empty() ? ip : StrCat(o.ssh_user, "@", ip),
          StrCat("sh -c ", ShellQuote(script))};
}

std::vector<std::string> AgentArgv(const std::string& agent, int index, const std::string& host,
                                   const std::string& script) {
  std::vector<std::string> argv;
  std::istringstream words(agent);
  for (std::string w; words >> w;) {
    for (const auto& [name, value] : {std::pair<std::string, std::string>{"{index}", std::to_string(index)},
                                      {"{host}", host}}) {
      for (size_t at = w.find(name); at != std::string::npos; at = w.find(name, at + value.size())) {
        w.replace(at, name.size(), value);
      }
    }
    argv.push_back(std::move(w));
  }
  argv.insert(argv.end(), {"sh", "-c", script});
  return argv;
}

std::vector<std::string> SrunArgv(const LaunchOptions& o, const std::string& host, const std::string& name,
                                  const std::string& script) {
  return {o.srun_command,
          "--nodes=1",
          "--ntasks=1",
          StrCat("--nodelist=", host),
          "--overlap",
          "--kill-on-bad-exit=1",
          StrCat("--job-name=", name),
          "sh",
          "-c",
          script};
}

std::string SlurmIpConfigText(const std::vector<std::string>& hosts, int port, const std::string& slurm_job_id,
                              const std::string& nodelist) {
  std::string out = StrCat("# written by fanout-launch --slurm for Slurm job ", slurm_job_id, " (nodes ", nodelist,
                           "): node k serves partition k\n");
  for (const std::string& h : hosts) out += StrCat(h, " ", port, "\n");
  return out;
}

absl::Status WriteSlurmIpConfig(const LaunchOptions& o, const std::string& path) {
  const char* nodelist = std::getenv("SLURM_JOB_NODELIST");
  if (nodelist == nullptr || *nodelist == '\0') {
    return absl::FailedPreconditionError(
        "--slurm: SLURM_JOB_NODELIST is not set; run fanout-launch inside a Slurm allocation "
        "(an sbatch script, or a shell from salloc)");
  }
  const char* job = std::getenv("SLURM_JOB_ID");
  ASSIGN_OR_RETURN(std::string listed,
                   RunForOutput({o.scontrol_command, "show", "hostnames", nodelist}, std::chrono::seconds(30)));
  std::vector<std::string> hosts;
  std::istringstream lines(listed);
  for (std::string line; std::getline(lines, line);) {
    if (std::string_view host = base::StripSpaces(line); !host.empty()) hosts.emplace_back(host);
  }
  if (hosts.empty()) {
    return absl::FailedPreconditionError(
        StrCat("--slurm: '", o.scontrol_command, " show hostnames ", nodelist, "' listed no nodes"));
  }
  const std::string text = SlurmIpConfigText(hosts, o.slurm_port, job != nullptr ? job : "?", nodelist);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    std::ifstream f(path);
    if (std::string(std::istreambuf_iterator<char>(f), {}) == text) return absl::OkStatus();
    return absl::AlreadyExistsError(StrCat(
        path, " already exists with other contents; fanout-launch --slurm writes the allocation's "
              "machines there and does not overwrite it: remove it, or name another file with --ip-config"));
  }
  if (absl::Status s = base::WriteFileDurably(path, text); !s.ok()) {
    return absl::Status(s.code(), StrCat("--slurm's ip_config: ", s.message()));
  }
  return absl::OkStatus();
}

std::string UnprotectedJobWarning(const LaunchOptions& o, const std::vector<MachineEntry>& machines) {
  std::vector<std::string> exposed;
  for (const MachineEntry& m : machines) {
    if (!base::IsLoopbackHost(m.ip) && std::find(exposed.begin(), exposed.end(), m.ip) == exposed.end()) {
      exposed.push_back(m.ip);
    }
  }
  const std::string missing = base::MissingProtection(o.security.tls(), o.security.token());
  if (exposed.empty() || missing.empty()) return "";
  return StrCat("fanout-launch: WARNING: the graph servers listen on ", base::StrJoin(exposed, ", "), " without ",
                missing, ": anyone who can reach their ports can read every feature and label. Give --tls-cert, "
                "--tls-key, --tls-ca and --auth-token-file (docs/security.md), or firewall the ports.\n");
}

namespace {

// Every machine's S server ports fit below 65536 and do not overlap another machine's on one host.
absl::Status CheckServerPorts(const LaunchOptions& o, const PlanInputs& in) {
  const int S = o.ServersPerMachine();
  if (o.replicas >= static_cast<int>(in.machines.size())) {
    return absl::InvalidArgumentError(StrCat("--replicas ", o.replicas, ": a job of ", in.machines.size(),
                                             " machine(s) has at most ", in.machines.size() - 1,
                                             " other machine(s) to hold a partition's replicas"));
  }
  const std::vector<MachineEntry>& ms = in.machines;
  for (size_t k = 0; k < ms.size(); ++k) {
    if (ms[k].port + S - 1 > 65535) {
      return absl::InvalidArgumentError(StrCat(
          Where(in.ip_config_path, ms[k]), ": machine ", k, "'s ", S, " servers would listen on ports ",
          ms[k].port, "..", ms[k].port + S - 1, ", past 65535"));
    }
    for (size_t j = 0; j < k; ++j) {
      if (ms[j].ip == ms[k].ip && ms[j].port < ms[k].port + S && ms[k].port < ms[j].port + S) {
        return absl::InvalidArgumentError(StrCat(
            Where(in.ip_config_path, ms[k]), ": machines ", j, " and ", k, " are both ", ms[k].ip,
            " and their server ports overlap (", ms[j].port, "..", ms[j].port + S - 1, " and ",
            ms[k].port, "..", ms[k].port + S - 1, " with --num-servers ", o.num_servers,
            o.replicas > 0 ? StrCat(" and --replicas ", o.replicas) : "",
            "); give them ports at least ", S, " apart"));
      }
    }
  }
  return absl::OkStatus();
}

// The trainers' rendezvous port on machine 0, where trainer rank 0 listens on all of its
// interfaces. The default is the first port past every server port of the file, so that it
// cannot meet a server even when several ip_config lines are one host (127.0.0.1, 127.0.0.2).
// The port after it is MASTER_PORT, where a Python script's torch.distributed (env://) puts its
// TCPStore, which cannot share fanout's store; neither may be a server port on machine 0's host.
absl::StatusOr<int> CoordinatorPort(const LaunchOptions& o, const PlanInputs& in) {
  const int S = o.ServersPerMachine();
  const std::vector<MachineEntry>& ms = in.machines;
  int coordinator_port = o.coordinator_port;
  if (coordinator_port == 0) {
    for (const MachineEntry& m : ms) coordinator_port = std::max(coordinator_port, m.port + S);
    if (coordinator_port > 65535) {
      return absl::InvalidArgumentError(StrCat(
          "the default coordinator port (after the highest server port) would be ",
          coordinator_port, ", past 65535; give --coordinator-port"));
    }
  }
  const int torch_port = coordinator_port + 1;
  if (torch_port > 65535) {
    return absl::InvalidArgumentError(StrCat("--coordinator-port ", coordinator_port,
                                             ": the port after it (MASTER_PORT, for torch.distributed) "
                                             "would be past 65535"));
  }
  for (size_t k = 0; k < ms.size(); ++k) {
    // Machines on machine 0's host: its own address, or every local machine when it is local.
    const bool same_host = ms[k].ip == ms[0].ip || (!in.remote[0] && !in.remote[k]);
    for (const auto& [port, what] : {std::pair{coordinator_port, "is"}, std::pair{torch_port, "+ 1 (MASTER_PORT) is"}}) {
      if (same_host && port >= ms[k].port && port < ms[k].port + S) {
        return absl::InvalidArgumentError(StrCat(
            "--coordinator-port ", coordinator_port, " ", what, " a server port of machine ", k, " (",
            ms[k].ip, " ports ", ms[k].port, "..", ms[k].port + S - 1,
            "), on the same host as machine 0 where the trainers' rendezvous listens"));
      }
    }
  }
  return coordinator_port;
}

// Server s of machine k.
ProcessSpec ServerSpec(const LaunchOptions& o, const PlanInputs& in, int k, int s) {
  const std::vector<MachineEntry>& ms = in.machines;
  const int M = static_cast<int>(ms.size());
  // Servers past --num-servers are replicas of the partitions before k (base::ServersOf).
  const int part = s < o.num_servers ? k : base::ReplicaPart(k, s - o.num_servers, M);
  // A server only needs a second or so to let in-flight calls finish: it is stopped at the end
  // of the job, or when the job has already failed.
  const double server_grace = std::min(1.0, o.stop_grace_s / 2);
  ProcessSpec p;
  p.role = Role::kServer;
  p.machine = k;
  if (part != k) p.part = part;
  p.rank = s;
  p.ip = ms[k].ip;
  p.address = HostPort(ms[k].ip, ms[k].port + s);
  p.remote = in.remote[k];
  p.workspace = in.workspace;
  // fanout-server adds --server-id to --port itself.
  p.command = {in.server_bin,  "--part-config", in.part_config_path,
               "--part-id",    std::to_string(part),
               "--host",       ms[k].ip,
               "--port",       std::to_string(ms[k].port),
               "--server-id",  std::to_string(s),
               "--shutdown-grace", StrCat(server_grace)};
  if (o.allow_push) p.command.push_back("--allow-push");
  if (o.features_from_disk_mb >= 0) {
    p.command.push_back("--feature-cache-mb");
    p.command.push_back(std::to_string(o.features_from_disk_mb));
    p.command.push_back("--feature-cache-policy");
    p.command.push_back(o.features_cache_policy);
  }
  if (o.num_server_threads > 0) {
    p.command.push_back("--num-threads");
    p.command.push_back(std::to_string(o.num_server_threads));
  }
  // Security travels in the environment, as the trainers': one form for every process (and
  // not in the command line, which every user of the machine can read).
  p.env = base::JobEnv{.job_id = in.job_id, .machine_id = k, .restart_count = o.restart_count, .security = o.security}
              .ToEnv();
  if (o.heartbeat_timeout_s > 0) p.env.push_back(Var(base::kHeartbeatEnv, o.heartbeat_s));
  p.env.insert(p.env.end(), o.extra_env.begin(), o.extra_env.end());
  SetLaunchCommand(o, &p);
  return p;
}

// Trainer r of machine k, with the job's facts in its environment.
ProcessSpec TrainerSpec(const LaunchOptions& o, const PlanInputs& in, const std::string& servers,
                        const std::string& coordinator, int torch_port, int k, int r) {
  const std::vector<MachineEntry>& ms = in.machines;
  const int M = static_cast<int>(ms.size()), T = o.num_trainers;
  const int omp = o.num_omp_threads > 0 ? o.num_omp_threads : std::max(1, in.host_cores / 2 / T);
  ProcessSpec p;
  p.role = Role::kTrainer;
  p.machine = k;
  p.rank = r;
  p.global_rank = k * T + r;
  p.ip = ms[k].ip;
  p.remote = in.remote[k];
  p.workspace = in.workspace;
  p.command = o.command;
  base::JobEnv job{.job_id = in.job_id,
                   .part_config = in.part_config_path,
                   .ip_config = in.ip_config_path,
                   .servers = servers,
                   .coordinator = coordinator,
                   .num_machines = M,
                   .machine_id = k,
                   .num_servers = o.num_servers,
                   .num_trainers = T,
                   .num_samplers = o.num_samplers,
                   .sampler_nice = o.sampler_nice,
                   .local_rank = r,
                   .rank = p.global_rank,
                   .world_size = M * T,
                   .restart_count = o.restart_count,
                   .features_from_disk_mb = o.features_from_disk_mb,
                   .features_cache_policy = o.features_from_disk_mb >= 0 ? o.features_cache_policy : "",
                   .security = o.security};
  p.env = job.ToEnv();
  p.env.insert(p.env.end(), {
           // torchrun's names for the same facts, for tools and scripts that read them.
           // MASTER_PORT is free for torch.distributed's own store (a Python script's
           // init_process_group("env://")): fanout's rendezvous, which does not speak
           // TCPStore's protocol, is FANOUT_COORDINATOR, the port before it.
           Var("RANK", p.global_rank),
           Var("WORLD_SIZE", M * T),
           Var("LOCAL_RANK", r),
           Var("LOCAL_WORLD_SIZE", T),
           Var("GROUP_RANK", k),
           Var("MASTER_ADDR", ms[0].ip),
           Var("MASTER_PORT", torch_port),
           Var("OMP_NUM_THREADS", omp)});
  if (o.heartbeat_timeout_s > 0) p.env.push_back(Var(base::kHeartbeatEnv, o.heartbeat_s));
  p.env.insert(p.env.end(), o.extra_env.begin(), o.extra_env.end());
  SetLaunchCommand(o, &p);
  return p;
}

// One launcher per machine: keep machine `machine_id`'s processes; the others' servers are
// waited for.
void KeepOneMachine(int machine_id, JobPlan* plan) {
  plan->only_machine = machine_id;
  std::vector<ProcessSpec> mine;
  for (ProcessSpec& p : plan->servers) {
    if (p.machine == machine_id) {
      mine.push_back(std::move(p));
    } else {
      absl::StatusOr<base::HostAndPort> at = base::SplitHostPort(p.address);
      FANOUT_CHECK(at.ok()) << p.address;  // made by ServersOf
      plan->peer_servers.push_back({p.Label(), at->host, at->port});
    }
  }
  plan->servers = std::move(mine);
  std::erase_if(plan->trainers, [&](const ProcessSpec& p) { return p.machine != machine_id; });
}

}  // namespace

absl::StatusOr<JobPlan> BuildJobPlan(const LaunchOptions& o, const PlanInputs& in) {
  RETURN_IF_ERROR(CheckMachinesMatchPartitions(in.machines.size(), in.ip_config_path, in.num_parts,
                                               in.part_config_path));
  FANOUT_CHECK(in.remote.size() == in.machines.size());
  RETURN_IF_ERROR(CheckServerPorts(o, in));
  ASSIGN_OR_RETURN(const int coordinator_port, CoordinatorPort(o, in));
  const int M = static_cast<int>(in.machines.size());
  JobPlan plan;
  plan.job_id = in.job_id;
  plan.machines = in.machines;
  plan.coordinator = HostPort(in.machines[0].ip, coordinator_port);
  const std::string servers = base::FormatServerList(base::ServersOf(in.machines, o.num_servers, o.replicas));
  for (int k = 0; k < M; ++k) {
    for (int s = 0; s < o.ServersPerMachine(); ++s) plan.servers.push_back(ServerSpec(o, in, k, s));
  }
  for (int k = 0; k < M; ++k) {
    for (int r = 0; r < o.num_trainers; ++r) {
      plan.trainers.push_back(TrainerSpec(o, in, servers, plan.coordinator, coordinator_port + 1, k, r));
    }
  }
  if (o.machine_id >= 0) KeepOneMachine(o.machine_id, &plan);
  return plan;
}

std::string DescribePlan(const JobPlan& plan) {
  std::string out = StrCat("job ", plan.job_id, ", coordinator ", plan.coordinator, "\n");
  for (const auto* group : {&plan.servers, &plan.trainers}) {
    for (const ProcessSpec& p : *group) {
      out += StrCat("[", p.Label(), "] ", p.Describe(), p.remote ? StrCat(p.via == "ssh" ? ", over " : ", through ", p.via) : ", local", "\n");
      if (p.remote) {
        out += StrCat("  ", ShellJoin(p.argv), "\n");
      } else {
        std::vector<std::string> run = {"env"};
        run.insert(run.end(), p.local_env.begin(), p.local_env.end());
        run.insert(run.end(), p.argv.begin(), p.argv.end());
        out += StrCat("  cd ", ShellQuote(p.local_cwd), " && ", ShellJoin(run), "\n");
      }
    }
  }
  return out;
}

absl::StatusOr<JobPlan> PlanJob(const LaunchOptions& o) {
  std::error_code ec;
  const std::string cwd = fs::current_path(ec).string();
  if (ec) return absl::InternalError(StrCat("cannot read the working folder: ", ec.message()));
  PlanInputs in;
  in.workspace = o.workspace.empty() ? cwd : Absolute(cwd, o.workspace);
  if (o.slurm) {
    const char* job = std::getenv("SLURM_JOB_ID");
    in.ip_config_path = Absolute(in.workspace, o.ip_config.empty()
                                                   ? StrCat("ip_config.slurm-", job != nullptr ? job : "job", ".txt")
                                                   : o.ip_config);
    RETURN_IF_ERROR(WriteSlurmIpConfig(o, in.ip_config_path));
  } else {
    in.ip_config_path = Absolute(in.workspace, o.ip_config);
  }
  in.part_config_path = Absolute(in.workspace, o.part_config);
  LaunchOptions with_paths = o;  // security files as every process will see them
  for (std::string* f : {&with_paths.security.tls_cert, &with_paths.security.tls_key, &with_paths.security.tls_ca,
                         &with_paths.security.auth_token_file}) {
    if (!f->empty()) *f = Absolute(in.workspace, *f);
  }

  ASSIGN_OR_RETURN(in.machines, LoadIpConfig(in.ip_config_path));
  absl::StatusOr<core::PartitionConfig> config = core::LoadPartitionConfig(in.part_config_path);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        StrCat("--part-config: ", config.status().message()));
  }
  in.num_parts = config->num_parts;  // BuildJobPlan checks it against the machines

  ASSIGN_OR_RETURN(std::vector<std::string> interfaces, InterfaceAddresses());
  bool any_local = false;
  if (o.machine_id >= static_cast<int>(in.machines.size())) {
    return absl::InvalidArgumentError(StrCat("--machine-id ", o.machine_id, " is not a machine of ", in.ip_config_path,
                                             ", which lists ", in.machines.size(), " (0..",
                                             in.machines.size() - 1, ")"));
  }
  for (size_t k = 0; o.machine_id >= 0 && k < in.machines.size(); ++k) {
    // This launcher starts its own machine's processes, here, and nobody else's; the other
    // machines' names need not resolve yet (Kubernetes pods that have not started).
    in.remote.push_back(static_cast<int>(k) != o.machine_id);
    any_local |= static_cast<int>(k) == o.machine_id;
  }
  for (const MachineEntry& m : in.machines) {
    if (o.machine_id >= 0) break;
    // A host name is this host when any address it resolves to is (the trainers and servers
    // resolve it again where they run).
    absl::StatusOr<std::vector<std::string>> addresses = ResolveHost(m.ip);
    if (!addresses.ok()) {
      return absl::Status(addresses.status().code(),
                          StrCat(in.ip_config_path, ":", m.line, ": ", addresses.status().message()));
    }
    bool local = false;
    for (const std::string& a : *addresses) local |= IsLocalAddress(a, interfaces);
    const bool remote = o.always_ssh || !o.agent.empty() || !local;
    in.remote.push_back(remote);
    any_local |= !remote;
  }

  in.server_bin = o.server_bin.empty() ? DefaultServerBin() : o.server_bin;
  if (in.server_bin.find('/') != std::string::npos) in.server_bin = Absolute(cwd, in.server_bin);
  if (any_local) {
    // Programs of remote machines can only be checked there; local ones are checked now, so
    // that a typo fails before any server starts.
    if (!fs::is_directory(in.workspace, ec)) {
      return absl::NotFoundError(StrCat("--workspace: ", in.workspace, " is not a folder"));
    }
    if (FindProgram(in.server_bin, in.workspace).empty()) {
      return absl::NotFoundError(StrCat("--server-bin: ", in.server_bin,
                                        " is not an executable file (nor found in PATH)"));
    }
    if (FindProgram(o.command[0], in.workspace).empty()) {
      return absl::NotFoundError(
          StrCat("the trainer command '", o.command[0], "' is not an executable file",
                 o.command[0].find('/') == std::string::npos ? " in PATH" : "",
                 " (relative paths are relative to the workspace ", in.workspace, ")"));
    }
  }
  in.job_id = o.job_id.empty() ? DefaultJobId() : o.job_id;
  in.host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (any_local) {
    for (const std::string* f : {&with_paths.security.tls_cert, &with_paths.security.tls_key,
                                 &with_paths.security.tls_ca, &with_paths.security.auth_token_file}) {
      if (!f->empty() && !fs::is_regular_file(*f, ec)) {
        return absl::NotFoundError(StrCat(*f, ": no such file (a --tls-* or --auth-token-file flag)"));
      }
    }
  }
  return BuildJobPlan(with_paths, in);
}

}  // namespace fanout::launcher
