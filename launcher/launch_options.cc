#include "launcher/launch_options.h"

#include <algorithm>

#include "base/strings.h"

namespace fanout::launcher {
namespace {
using base::StrCat;

absl::Status Bad(const std::string& msg) { return absl::InvalidArgumentError(msg); }

// --agent's words name no placeholder but {index} and {host}.
absl::Status CheckAgent(const std::string& agent) {
  if (agent.find_first_not_of(" \t") == std::string::npos) return Bad("--agent must name a command");
  for (size_t open = agent.find('{'); open != std::string::npos; open = agent.find('{', open + 1)) {
    const size_t close = agent.find('}', open);
    const std::string name = agent.substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
    if (name != "{index}" && name != "{host}") {
      return Bad(StrCat("--agent '", agent, "': unknown placeholder ", name, " (it may use {index} and {host})"));
    }
  }
  return absl::OkStatus();
}

// Length of the NAME= prefix at the start of `s`, or 0 when there is none.
size_t EnvNamePrefix(std::string_view s) {
  s = base::StripSpaces(s);
  size_t eq = s.find('=');
  if (eq == std::string_view::npos || eq == 0) return 0;
  return IsEnvName(std::string(s.substr(0, eq))) ? eq + 1 : 0;
}
}  // namespace

bool IsEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> SplitExtraEnv(const std::string& value) {
  std::vector<std::string> items;
  size_t start = 0;
  for (size_t i = 0; i <= value.size(); ++i) {
    std::string_view rest = std::string_view(value).substr(std::min(i + 1, value.size()));
    if (i == value.size() ||
        (value[i] == ',' && (EnvNamePrefix(rest) > 0 || base::StripSpaces(rest).empty()))) {
      std::string item(base::StripSpaces(std::string_view(value).substr(start, i - start)));
      if (!item.empty()) items.push_back(std::move(item));
      start = i + 1;
    }
  }
  return items;
}

absl::Status ValidateLaunchOptions(const LaunchOptions& o) {
  if (o.ip_config.empty() && !o.slurm) return Bad("--ip-config is required (or --slurm inside a Slurm allocation)");
  if (o.machine_id < -1) return Bad(StrCat("--machine-id must be 0 or more, not ", o.machine_id));
  if (o.machine_id >= 0 && o.slurm) {
    return Bad("--machine-id and --slurm do not go together: --slurm starts every node from one launcher");
  }
  if (o.slurm_port < 1 || o.slurm_port > 65535) {
    return Bad(StrCat("--slurm-port must be in 1..65535, not ", o.slurm_port));
  }
  if (o.slurm && (o.srun_command.empty() || o.scontrol_command.empty())) {
    return Bad("--srun-command and --scontrol-command must not be empty");
  }
  if (o.part_config.empty()) return Bad("--part-config is required");
  if (o.num_servers < 1) return Bad(StrCat("--num-servers must be at least 1, not ", o.num_servers));
  if (o.replicas < 0) return Bad(StrCat("--replicas must be 0 or more, not ", o.replicas));
  if (o.num_trainers < 1) return Bad(StrCat("--num-trainers must be at least 1, not ", o.num_trainers));
  if (o.num_samplers < 0) return Bad(StrCat("--num-samplers must be 0 or more, not ", o.num_samplers));
  if (o.sampler_nice < -1 || o.sampler_nice > 19) {
    return Bad(StrCat("--sampler-nice must be in 0..19 (-1: the trainer's default), not ", o.sampler_nice));
  }
  if (o.ssh_port < 1 || o.ssh_port > 65535) {
    return Bad(StrCat("--ssh-port must be in 1..65535, not ", o.ssh_port));
  }
  if (o.ssh_command.empty()) return Bad("--ssh-command must not be empty");
  if (!o.agent.empty()) {
    if (o.slurm) return Bad("--agent and --slurm do not go together: --slurm reaches other nodes with srun");
    if (o.machine_id >= 0) {
      return Bad("--agent and --machine-id do not go together: a launcher per machine starts its own processes");
    }
    if (absl::Status s = CheckAgent(o.agent); !s.ok()) return s;
  }
  if (o.coordinator_port < 0 || o.coordinator_port > 65535) {
    return Bad(StrCat("--coordinator-port must be in 1..65535 (or 0 for the default), not ",
                      o.coordinator_port));
  }
  if (o.num_server_threads < 0) return Bad("--num-server-threads must be 0 or more");
  if (o.num_omp_threads < 0) return Bad("--num-trainer-threads must be 0 or more");
  if (!(o.server_timeout_s > 0)) return Bad("--server-timeout must be a positive number of seconds");
  if (!(o.heartbeat_timeout_s >= 0) || o.heartbeat_timeout_s > 86400) {
    return Bad("--heartbeat-timeout must be in [0, 86400] seconds (0: do not watch heartbeats)");
  }
  if (!(o.heartbeat_s > 0) || (o.heartbeat_timeout_s > 0 && o.heartbeat_s * 2 > o.heartbeat_timeout_s)) {
    return Bad("--heartbeat-interval must be positive and at most half of --heartbeat-timeout");
  }
  if (!(o.stop_grace_s >= 0) || o.stop_grace_s > 3600) {
    return Bad("--stop-grace must be a number of seconds in 0..3600");
  }
  if (!(o.restart_backoff_s >= 0) || o.restart_backoff_s > 3600) {
    return Bad("--restart-backoff must be a number of seconds in 0..3600");
  }
  for (char c : o.job_id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok || o.job_id == "." || o.job_id == "..") {
      return Bad(StrCat("--job-id '", o.job_id, "' may only use letters, digits, '-', '_' and '.'"));
    }
  }
  for (const std::string& kv : o.extra_env) {
    size_t eq = kv.find('=');
    std::string name = kv.substr(0, eq);
    if (eq == std::string::npos || !IsEnvName(name)) {
      return Bad(StrCat("--extra-env '", kv, "' is not NAME=VALUE"));
    }
    if (name.rfind("FANOUT_", 0) == 0) {
      return Bad(StrCat("--extra-env ", name, ": FANOUT_* variables are set by the launcher"));
    }
  }
  if (o.command.empty() || o.command[0].empty()) {
    return Bad("no trainer command: give it after '--', e.g. -- fanout-train --model sage");
  }
  return absl::OkStatus();
}

}  // namespace fanout::launcher
