#include "base/job_env.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace fanout::base {
namespace {

// An environment of its own, so the test does not depend on (or change) the process's.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> Get() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
  static FakeEnv From(const std::vector<std::string>& assignments) {
    FakeEnv e;
    for (const std::string& kv : assignments) {
      const size_t eq = kv.find('=');
      e.vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return e;
  }
};

// What the launcher writes is what the trainer reads, field for field.
TEST(JobEnvTest, WhatTheLauncherWritesTheTrainerReadsBack) {
  JobEnv job{.job_id = "job7",
             .part_config = "/ws/parts/g.json",
             .ip_config = "/ws/ip_config.txt",
             .servers = "0=10.0.0.1:30050,1=[::1]:31000",
             .coordinator = "10.0.0.1:30052",
             .num_machines = 2,
             .machine_id = 1,
             .num_servers = 1,
             .num_trainers = 2,
             .num_samplers = 0,
             .sampler_nice = 7,
             .local_rank = 1,
             .rank = 3,
             .world_size = 4,
             .restart_count = 2};
  const std::vector<std::string> env = job.ToEnv();
  EXPECT_EQ(env.size(), 15u);
  EXPECT_EQ(env.front(), "FANOUT_JOB_ID=job7");
  EXPECT_EQ(env.back(), "FANOUT_RESTART_COUNT=2");
  const FakeEnv fake = FakeEnv::From(env);
  absl::StatusOr<JobEnv> back = JobEnv::FromEnvironment(fake.Get());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToEnv(), env);
  EXPECT_EQ(back->num_samplers, 0);  // zero is a value, not "unset"
  EXPECT_EQ(back->servers, job.servers);
  EXPECT_EQ(back->restart_count, 2);
  EXPECT_EQ(back->sampler_nice, 7);
}

TEST(JobEnvTest, UnsetAndEmptyVariablesStayUnsetAndBadCountsNameTheVariable) {
  FakeEnv fake = FakeEnv::From({"FANOUT_RANK=", "FANOUT_PART_CONFIG=/p.json"});
  absl::StatusOr<JobEnv> job = JobEnv::FromEnvironment(fake.Get());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->rank, -1);
  EXPECT_EQ(job->world_size, -1);
  EXPECT_EQ(job->coordinator, "");
  EXPECT_EQ(job->ToEnv(), std::vector<std::string>{"FANOUT_PART_CONFIG=/p.json"});
  for (const char* bad : {"two", "-1", "1073741825", "3x"}) {
    fake.vars["FANOUT_NUM_TRAINERS"] = bad;
    job = JobEnv::FromEnvironment(fake.Get());
    ASSERT_FALSE(job.ok()) << bad;
    EXPECT_EQ(job.status().message(),
              std::string("environment variable FANOUT_NUM_TRAINERS='") + bad + "' is not a count");
  }
}

// torchrun's names and OMP_NUM_THREADS are read here too (no other code reads the environment for
// them), as text: a malformed one is an error only where fanout-train falls back to it.
TEST(JobEnvTest, OtherLaunchersVariablesAreReadAsTextAndNeverWritten) {
  const FakeEnv fake = FakeEnv::From({"RANK=3", "WORLD_SIZE=4", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1", "LOCAL_RANK=1",
                                      "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "OMP_NUM_THREADS=abc"});
  absl::StatusOr<JobEnv> job = JobEnv::FromEnvironment(fake.Get());
  ASSERT_TRUE(job.ok()) << job.status();
  const ForeignEnv& f = job->foreign;
  EXPECT_EQ(f.rank, "3");
  EXPECT_EQ(f.world_size, "4");
  EXPECT_EQ(f.local_world_size, "2");
  EXPECT_EQ(f.group_rank, "1");
  EXPECT_EQ(f.local_rank, "1");
  EXPECT_EQ(f.master_addr, "10.0.0.1");
  EXPECT_EQ(f.master_port, "29500");
  EXPECT_EQ(f.omp_num_threads, "abc");
  EXPECT_EQ(job->rank, -1);  // fanout's own stay unset
  EXPECT_TRUE(job->ToEnv().empty());
}

}  // namespace
}  // namespace fanout::base
