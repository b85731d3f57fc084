#include "base/job_env.h"

#include <cstdlib>
#include <utility>

#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"

namespace fanout::base {
namespace {

// The one table of names, in the order the launcher writes them: ToEnv writes, FromEnvironment
// reads. Each entry is a text field or a count.
struct Var {
  const char* name;
  std::string JobEnv::*text;
  int JobEnv::*count;
};
constexpr Var kVars[] = {
    {"FANOUT_JOB_ID", &JobEnv::job_id, nullptr},
    {"FANOUT_PART_CONFIG", &JobEnv::part_config, nullptr},
    {"FANOUT_IP_CONFIG", &JobEnv::ip_config, nullptr},
    {"FANOUT_NUM_MACHINES", nullptr, &JobEnv::num_machines},
    {"FANOUT_MACHINE_ID", nullptr, &JobEnv::machine_id},
    {"FANOUT_NUM_SERVERS", nullptr, &JobEnv::num_servers},
    {"FANOUT_NUM_TRAINERS", nullptr, &JobEnv::num_trainers},
    {"FANOUT_NUM_SAMPLERS", nullptr, &JobEnv::num_samplers},
    {"FANOUT_SAMPLER_NICE", nullptr, &JobEnv::sampler_nice},
    {"FANOUT_LOCAL_RANK", nullptr, &JobEnv::local_rank},
    {"FANOUT_RANK", nullptr, &JobEnv::rank},
    {"FANOUT_WORLD_SIZE", nullptr, &JobEnv::world_size},
    {"FANOUT_COORDINATOR", &JobEnv::coordinator, nullptr},
    {"FANOUT_SERVERS", &JobEnv::servers, nullptr},
    {"FANOUT_RESTART_COUNT", nullptr, &JobEnv::restart_count},
    {"FANOUT_FEATURES_FROM_DISK_MB", nullptr, &JobEnv::features_from_disk_mb},
    {"FANOUT_FEATURES_CACHE_POLICY", &JobEnv::features_cache_policy, nullptr},
};

}  // namespace

std::vector<std::string> JobEnv::ToEnv() const {
  std::vector<std::string> out;
  for (const Var& v : kVars) {
    if (v.text != nullptr && !(this->*v.text).empty()) out.push_back(StrCat(v.name, "=", this->*v.text));
    if (v.count != nullptr && this->*v.count >= 0) out.push_back(StrCat(v.name, "=", this->*v.count));
  }
  for (std::string& v : SecurityEnv(security)) out.push_back(std::move(v));
  return out;
}

absl::Status ParseEnvCount(const char* name, const std::string& text, int* out) {
  if (text.empty()) return absl::OkStatus();
  int64_t x = 0;
  if (!ParseInt64(text, &x) || x < 0 || x > (1 << 30)) {
    return absl::InvalidArgumentError(StrCat("environment variable ", name, "='", text, "' is not a count"));
  }
  *out = static_cast<int>(x);
  return absl::OkStatus();
}

absl::StatusOr<JobEnv> JobEnv::FromEnvironment(const std::function<const char*(const char*)>& getenv) {
  JobEnv env;
  for (const Var& v : kVars) {
    const char* value = getenv ? getenv(v.name) : std::getenv(v.name);
    const std::string text = value == nullptr ? std::string() : std::string(value);
    if (text.empty()) continue;
    if (v.text != nullptr) {
      env.*v.text = text;
      continue;
    }
    RETURN_IF_ERROR(ParseEnvCount(v.name, text, &(env.*v.count)));
  }
  const std::function<const char*(const char*)> get = getenv ? getenv : std::function<const char*(const char*)>(&std::getenv);
  FillSecurityFrom(get, &env.security);
  for (const auto& [name, field] : {std::pair{"RANK", &ForeignEnv::rank},
                                    {"WORLD_SIZE", &ForeignEnv::world_size},
                                    {"LOCAL_WORLD_SIZE", &ForeignEnv::local_world_size},
                                    {"GROUP_RANK", &ForeignEnv::group_rank},
                                    {"LOCAL_RANK", &ForeignEnv::local_rank},
                                    {"MASTER_ADDR", &ForeignEnv::master_addr},
                                    {"MASTER_PORT", &ForeignEnv::master_port},
                                    {"OMP_NUM_THREADS", &ForeignEnv::omp_num_threads}}) {
    const char* value = get(name);
    if (value != nullptr) env.foreign.*field = value;
  }
  return env;
}

}  // namespace fanout::base
