#include "launcher/launch_options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fanout::launcher {
namespace {

using ::testing::HasSubstr;

LaunchOptions Valid() {
  LaunchOptions o;
  o.ip_config = "ip_config.txt";
  o.part_config = "parts/graph.json";
  o.command = {"fanout-train", "--model", "sage"};
  return o;
}

std::string Error(const LaunchOptions& o) { return std::string(ValidateLaunchOptions(o).message()); }

TEST(LaunchOptions, ValidationNamesTheFlag) {
  EXPECT_TRUE(ValidateLaunchOptions(Valid()).ok());
  LaunchOptions o = Valid();
  o.ip_config.clear();
  EXPECT_EQ(Error(o), "--ip-config is required (or --slurm inside a Slurm allocation)");
  o.slurm = true;  // the launcher writes it
  EXPECT_TRUE(ValidateLaunchOptions(o).ok());
  o = Valid();
  o.part_config.clear();
  EXPECT_EQ(Error(o), "--part-config is required");
  o = Valid();
  o.num_servers = 0;
  EXPECT_EQ(Error(o), "--num-servers must be at least 1, not 0");
  o = Valid();
  o.num_trainers = -2;
  EXPECT_EQ(Error(o), "--num-trainers must be at least 1, not -2");
  o = Valid();
  o.num_samplers = -1;
  EXPECT_THAT(Error(o), HasSubstr("--num-samplers"));
  o = Valid();
  o.ssh_port = 70000;
  EXPECT_THAT(Error(o), HasSubstr("--ssh-port must be in 1..65535"));
  o = Valid();
  o.server_timeout_s = 0;
  EXPECT_THAT(Error(o), HasSubstr("--server-timeout"));
  o = Valid();
  o.job_id = "a/b";
  EXPECT_THAT(Error(o), HasSubstr("--job-id 'a/b'"));
  o = Valid();
  o.restart_backoff_s = -1;
  EXPECT_EQ(Error(o), "--restart-backoff must be a number of seconds in 0..3600");
  o = Valid();
  o.command.clear();
  EXPECT_THAT(Error(o), HasSubstr("after '--'"));
}

TEST(LaunchOptions, ExtraEnvMustBeNameValueAndNotFanoutOwn) {
  LaunchOptions o = Valid();
  o.extra_env = {"GLOO_SOCKET_IFNAME=eth0", "EMPTY="};
  EXPECT_TRUE(ValidateLaunchOptions(o).ok());
  o.extra_env = {"NOVALUE"};
  EXPECT_EQ(Error(o), "--extra-env 'NOVALUE' is not NAME=VALUE");
  o.extra_env = {"1X=2"};
  EXPECT_EQ(Error(o), "--extra-env '1X=2' is not NAME=VALUE");
  o.extra_env = {"FANOUT_RANK=3"};
  EXPECT_EQ(Error(o), "--extra-env FANOUT_RANK: FANOUT_* variables are set by the launcher");
}

TEST(LaunchOptions, SplitExtraEnvKeepsCommasInsideValues) {
  EXPECT_EQ(SplitExtraEnv("A=1,B=2"), (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(SplitExtraEnv("CUDA_VISIBLE_DEVICES=0,1"),
            (std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0,1"}));
  EXPECT_EQ(SplitExtraEnv("A=x,y, B=2,"), (std::vector<std::string>{"A=x,y", "B=2"}));
  EXPECT_EQ(SplitExtraEnv("A=1"), (std::vector<std::string>{"A=1"}));
}

}  // namespace
}  // namespace fanout::launcher
