#include "launcher/job_plan.h"

#include <cstring>

#include <sys/stat.h>

#include <filesystem>

#include "base/job_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process.h"
#include "tests/launcher/launcher_test_util.h"
#include "tests/testing/testing.h"

namespace fanout::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using std::chrono::seconds;

LaunchOptions Options() {
  LaunchOptions o;
  o.ip_config = "ip_config.txt";
  o.part_config = "parts/graph.json";
  o.num_servers = 2;
  o.num_trainers = 2;
  o.num_samplers = 3;
  o.command = {"fanout-train", "--model", "sage"};
  return o;
}

PlanInputs Inputs() {
  PlanInputs in;
  in.machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.2", 31000, 2}};
  in.remote = {false, true};
  in.num_parts = 2;
  in.ip_config_path = "/ws/ip_config.txt";
  in.part_config_path = "/ws/parts/graph.json";
  in.workspace = "/ws";
  in.job_id = "job7";
  in.server_bin = "/opt/fanout/bin/fanout-server";
  in.host_cores = 16;
  return in;
}

TEST(JobPlan, ServersListenOnBasePortPlusServerId) {
  auto plan = BuildJobPlan(Options(), Inputs());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->servers.size(), 4u);
  const ProcessSpec& s = plan->servers[3];
  EXPECT_EQ(s.Label(), "m1 server 1");
  EXPECT_EQ(s.address, "10.0.0.2:31001");
  EXPECT_EQ(s.Describe(), "machine 1 at 10.0.0.2, server 1 on 10.0.0.2:31001");
  // fanout-server adds --server-id to --port itself, so the base port is passed.
  EXPECT_THAT(s.command, ElementsAre("/opt/fanout/bin/fanout-server", "--part-config", "/ws/parts/graph.json",
                                     "--part-id", "1", "--host", "10.0.0.2", "--port", "31000",
                                     "--server-id", "1", "--shutdown-grace", "1"));
  EXPECT_THAT(s.env, ElementsAre("FANOUT_JOB_ID=job7", "FANOUT_MACHINE_ID=1", "FANOUT_RESTART_COUNT=0",
                                 "FANOUT_HEARTBEAT_S=1"));
  EXPECT_EQ(plan->servers[0].address, "10.0.0.1:30050");
  EXPECT_EQ(plan->servers[1].address, "10.0.0.1:30051");
}

// --replicas 1: each machine's next server serves the previous machine's partition, the
// trainers hear of it in FANOUT_SERVERS, and the rendezvous port moves past it.
TEST(JobPlan, ReplicasServeThePreviousMachinesPartitionOnTheNextPort) {
  LaunchOptions o = Options();
  o.replicas = 1;
  auto plan = BuildJobPlan(o, Inputs());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->servers.size(), 6u);
  const ProcessSpec& r = plan->servers[2];
  EXPECT_EQ(r.Label(), "m0 server 2");
  EXPECT_EQ(r.ServedPart(), 1);
  EXPECT_EQ(r.address, "10.0.0.1:30052");
  EXPECT_EQ(r.Describe(), "machine 0 at 10.0.0.1, server 2 on 10.0.0.1:30052, replica of partition 1");
  EXPECT_THAT(r.command, ElementsAre("/opt/fanout/bin/fanout-server", "--part-config", "/ws/parts/graph.json",
                                     "--part-id", "1", "--host", "10.0.0.1", "--port", "30050",
                                     "--server-id", "2", "--shutdown-grace", "1"));
  EXPECT_EQ(plan->servers[5].ServedPart(), 0);
  EXPECT_EQ(plan->servers[5].address, "10.0.0.2:31002");
  EXPECT_EQ(plan->servers[4].ServedPart(), 1);  // machine 1's own servers
  EXPECT_EQ(plan->servers[4].part, -1);
  EXPECT_EQ(plan->coordinator, "10.0.0.1:31003");
  EXPECT_THAT(plan->trainers[0].env,
              ::testing::Contains("FANOUT_SERVERS=0=10.0.0.1:30050,0=10.0.0.1:30051,1=10.0.0.2:31000,"
                                  "1=10.0.0.2:31001,0r=10.0.0.2:31002,1r=10.0.0.1:30052"));
  // A partition's replicas need other machines: 2 machines hold at most 1.
  o.replicas = 2;
  auto too_many = BuildJobPlan(o, Inputs());
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("--replicas 2: a job of 2 machine(s) has at most 1 other machine(s)"));
  // Their ports count when machines share a host.
  o.replicas = 1;
  PlanInputs in = Inputs();
  in.machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.1", 30052, 2}};
  auto overlap = BuildJobPlan(o, in);
  ASSERT_FALSE(overlap.ok());
  EXPECT_THAT(std::string(overlap.status().message()), HasSubstr("with --num-servers 2 and --replicas 1"));
}

TEST(JobPlan, TrainerEnvironmentIsTheContract) {
  LaunchOptions o = Options();
  o.extra_env = {"GLOO_SOCKET_IFNAME=eth0"};
  auto plan = BuildJobPlan(o, Inputs());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->trainers.size(), 4u);
  EXPECT_EQ(plan->coordinator, "10.0.0.1:31002");  // past every server port of the file
  const ProcessSpec& t = plan->trainers[3];
  EXPECT_EQ(t.Label(), "m1 trainer 1");
  EXPECT_EQ(t.global_rank, 3);
  EXPECT_EQ(t.Describe(), "machine 1 at 10.0.0.2, trainer local rank 1, rank 3");
  EXPECT_EQ(t.command, o.command);
  EXPECT_THAT(t.env, ElementsAre("FANOUT_JOB_ID=job7", "FANOUT_PART_CONFIG=/ws/parts/graph.json",
                                 "FANOUT_IP_CONFIG=/ws/ip_config.txt", "FANOUT_NUM_MACHINES=2",
                                 "FANOUT_MACHINE_ID=1", "FANOUT_NUM_SERVERS=2", "FANOUT_NUM_TRAINERS=2",
                                 "FANOUT_NUM_SAMPLERS=3", "FANOUT_LOCAL_RANK=1", "FANOUT_RANK=3",
                                 "FANOUT_WORLD_SIZE=4", "FANOUT_COORDINATOR=10.0.0.1:31002",
                                 // every server of the job, resolved: trainers need no port rule
                                 "FANOUT_SERVERS=0=10.0.0.1:30050,0=10.0.0.1:30051,1=10.0.0.2:31000,1=10.0.0.2:31001",
                                 "FANOUT_RESTART_COUNT=0",  // the attempt (--max-restarts)
                                 "RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1",
                                 "MASTER_ADDR=10.0.0.1", "MASTER_PORT=31003",  // torch.distributed's store
                                 "OMP_NUM_THREADS=4",  // 16 cores / 2 / 2 trainers
                                 "FANOUT_HEARTBEAT_S=1", "GLOO_SOCKET_IFNAME=eth0"));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(plan->trainers[r].global_rank, r);
    EXPECT_EQ(plan->trainers[r].machine, r / 2);
    EXPECT_EQ(plan->trainers[r].rank, r % 2);
  }
}

TEST(JobPlan, OmpThreadsAndServerThreadsFlags) {
  LaunchOptions o = Options();
  o.num_omp_threads = 7;
  o.num_server_threads = 3;
  PlanInputs in = Inputs();
  auto plan = BuildJobPlan(o, in);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->trainers[0].env, ::testing::Contains("OMP_NUM_THREADS=7"));
  EXPECT_THAT(plan->servers[0].command, ::testing::IsSupersetOf({"--num-threads", "3"}));
  EXPECT_THAT(plan->servers[0].command, ::testing::Not(::testing::Contains("--allow-push")));  // off by default
  o.allow_push = true;
  plan = BuildJobPlan(o, in);
  for (const ProcessSpec& s : plan->servers) EXPECT_THAT(s.command, ::testing::Contains("--allow-push"));
  o.num_omp_threads = 0;
  in.host_cores = 2;  // never below 1
  plan = BuildJobPlan(o, in);
  EXPECT_THAT(plan->trainers[0].env, ::testing::Contains("OMP_NUM_THREADS=1"));
}

// One form per setting: servers and trainers get the same security variables in their
// environment (base::JobEnv), and no process gets them on its command line, which every user of
// the machine can read.
TEST(JobPlan, SecurityReachesServersAndTrainersInTheirEnvironment) {
  LaunchOptions o = Options();
  o.security = {.tls_cert = "/k/node.pem", .tls_key = "/k/node.key", .tls_ca = "/k/ca.pem",
                .auth_token_file = "/k/token"};
  auto plan = BuildJobPlan(o, Inputs());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<std::string> want = {"FANOUT_TLS_CERT=/k/node.pem", "FANOUT_TLS_KEY=/k/node.key",
                                         "FANOUT_TLS_CA=/k/ca.pem", "FANOUT_AUTH_TOKEN_FILE=/k/token"};
  ASSERT_FALSE(plan->servers.empty());
  for (const std::vector<ProcessSpec>* group : {&plan->servers, &plan->trainers}) {
    for (const ProcessSpec& p : *group) {
      EXPECT_THAT(p.env, ::testing::IsSupersetOf(want));
      for (const std::string& arg : p.command) EXPECT_EQ(arg.find("/k/"), std::string::npos) << arg;
    }
  }
  for (const ProcessSpec& t : plan->trainers) EXPECT_EQ(t.command, o.command);  // the user's, left alone
  // What a process reads back is what the launcher meant.
  const std::vector<std::string>& env = plan->servers[0].env;
  auto job = base::JobEnv::FromEnvironment([&](const char* name) -> const char* {
    for (const std::string& v : env) {
      if (v.rfind(std::string(name) + "=", 0) == 0) return v.c_str() + std::strlen(name) + 1;
    }
    return nullptr;
  });
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->security.tls_cert, "/k/node.pem");
  EXPECT_EQ(job->security.auth_token_file, "/k/token");
}

TEST(JobPlan, AJobBeyondLoopbackWithoutTlsAndTokenIsWarnedOf) {
  LaunchOptions o = Options();
  const std::vector<MachineEntry> remote = {{"10.0.0.1", 30050, 1}, {"10.0.0.2", 30050, 2}};
  const std::vector<MachineEntry> loopback = {{"127.0.0.1", 30050, 1}, {"127.0.0.2", 30050, 2}};
  EXPECT_THAT(UnprotectedJobWarning(o, remote), HasSubstr("10.0.0.1, 10.0.0.2 without TLS or an auth token"));
  EXPECT_EQ(UnprotectedJobWarning(o, loopback), "");
  o.security.auth_token_file = "/k/token";
  EXPECT_THAT(UnprotectedJobWarning(o, remote), HasSubstr("without TLS (the token travels in the clear)"));
  o.security.tls_ca = "/k/ca.pem";
  EXPECT_EQ(UnprotectedJobWarning(o, remote), "");
}

TEST(JobPlan, LocalMachinesRunTheCommandInTheWorkspace) {
  auto plan = BuildJobPlan(Options(), Inputs());
  ASSERT_TRUE(plan.ok());
  const ProcessSpec& t = plan->trainers[0];
  EXPECT_FALSE(t.remote);
  EXPECT_EQ(t.argv, t.command);
  EXPECT_EQ(t.local_env, t.env);
  EXPECT_EQ(t.local_cwd, "/ws");
}

TEST(JobPlan, RemoteMachinesRunOverSsh) {
  LaunchOptions o = Options();
  o.ssh_user = "alice";
  o.ssh_port = 2222;
  auto plan = BuildJobPlan(o, Inputs());
  ASSERT_TRUE(plan.ok());
  const ProcessSpec& t = plan->trainers[2];
  EXPECT_TRUE(t.remote);
  EXPECT_TRUE(t.local_env.empty());
  ASSERT_EQ(t.argv.size(), 14u);
  EXPECT_THAT(std::vector<std::string>(t.argv.begin(), t.argv.end() - 1),
              ElementsAre("ssh", "-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                          "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-p", "2222",
                          "alice@10.0.0.2"));
  const std::string script = RemoteScript("/ws", t.env, t.command, o.stop_grace_s);
  EXPECT_EQ(t.argv.back(), "sh -c " + ShellQuote(script));
  EXPECT_THAT(script, HasSubstr("cd /ws || exit 126\n"));
  EXPECT_THAT(script, HasSubstr("setsid env FANOUT_JOB_ID=job7 FANOUT_PART_CONFIG=/ws/parts/graph.json"));
  EXPECT_THAT(script, HasSubstr("FANOUT_RANK=2 "));
  EXPECT_THAT(script, HasSubstr(" fanout-train --model sage 3<&- &\n"));
  EXPECT_THAT(script, HasSubstr("sleep 5;"));  // the remote SIGTERM-to-SIGKILL grace

  o.ssh_user.clear();
  plan = BuildJobPlan(o, Inputs());
  EXPECT_EQ(plan->servers[2].argv[12], "10.0.0.2");
}

TEST(JobPlan, MachinePartitionMismatchNamesBothFilesAndNumbers) {
  absl::Status s = CheckMachinesMatchPartitions(3, "/ws/ip_config.txt", 2, "/ws/parts/graph.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "/ws/ip_config.txt lists 3 machines but /ws/parts/graph.json has 2 partitions (num_parts); "
            "machine k serves partition k, so list exactly 2 machines or partition the graph into 3");
  EXPECT_TRUE(CheckMachinesMatchPartitions(2, "a", 2, "b").ok());
  PlanInputs in = Inputs();
  in.num_parts = 1;
  auto plan = BuildJobPlan(Options(), in);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("lists 2 machines but"));
}

TEST(JobPlan, PortErrors) {
  PlanInputs in = Inputs();
  in.machines[1].port = 65535;
  auto plan = BuildJobPlan(Options(), in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "/ws/ip_config.txt:2: machine 1's 2 servers would listen on ports 65535..65536, past 65535");

  // Several machines on one address (one host simulating a cluster) need disjoint port ranges.
  in = Inputs();
  in.machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.1", 30051, 2}};
  plan = BuildJobPlan(Options(), in);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("/ws/ip_config.txt:2: machines 0 and 1 are both 10.0.0.1 and their server ports overlap"));
  in.machines[1].port = 30052;
  plan = BuildJobPlan(Options(), in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->coordinator, "10.0.0.1:30054");  // past both machines' servers

  LaunchOptions o = Options();
  o.coordinator_port = 30053;
  plan = BuildJobPlan(o, in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "--coordinator-port 30053 is a server port of machine 1 (10.0.0.1 ports 30052..30053), on "
            "the same host as machine 0 where the trainers' rendezvous listens");
  // The port after the coordinator is torch.distributed's MASTER_PORT, and may not be a server's
  // either.
  o.coordinator_port = 30049;
  plan = BuildJobPlan(o, in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "--coordinator-port 30049 + 1 (MASTER_PORT) is a server port of machine 0 (10.0.0.1 ports 30050..30051), "
            "on the same host as machine 0 where the trainers' rendezvous listens");
  o.coordinator_port = 65535;
  plan = BuildJobPlan(o, in);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("MASTER_PORT, for torch.distributed"));
  // Two local machines are one host even on different addresses (trainer rank 0 listens on all
  // interfaces).
  in.machines = {{"127.0.0.1", 30050, 1}, {"127.0.0.2", 30060, 2}};
  in.remote = {false, false};
  o.coordinator_port = 30061;
  EXPECT_FALSE(BuildJobPlan(o, in).ok());
  o.coordinator_port = 0;
  plan = BuildJobPlan(o, in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->coordinator, "127.0.0.1:30062");
  // Another host may use the port.
  in.machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.2", 30060, 2}};
  in.remote = {false, true};
  EXPECT_TRUE(BuildJobPlan(o, in).ok());
  in = Inputs();
  in.machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.1", 30052, 2}};
  o.coordinator_port = 29000;
  plan = BuildJobPlan(o, in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->coordinator, "10.0.0.1:29000");
}

TEST(ShellQuote, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(ShellQuote("fanout-train"), "fanout-train");
  EXPECT_EQ(ShellQuote("/a/b.json"), "/a/b.json");
  EXPECT_EQ(ShellQuote("A=1,2"), "A=1,2");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
}

// Runs argv with a pipe as stdin; returns its stdout and exit status.
struct Ran {
  std::string out;
  ExitStatus status;
};
Ran RunWithStdinPipe(const std::vector<std::string>& argv, const std::string& cwd = "") {
  auto p = Process::Spawn({.argv = argv, .env = MergeEnvironment({}), .cwd = cwd, .stdin_pipe = true});
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {};
  Ran r;
  EXPECT_TRUE(testing::ReadToEnd(p->stdout_fd(), seconds(20), &r.out));
  auto st = p->WaitFor(seconds(20));
  EXPECT_TRUE(st.has_value());
  if (st) r.status = *st;
  return r;
}

TEST(ShellQuote, RoundTripsThroughSh) {
  const std::vector<std::string> words = {"plain", "a b", "it's", "$HOME", "\"q\"", "back\\slash", "",
                                          "new\nline", "*"};
  std::vector<std::string> argv = {"sh", "-c", "for w in " + ShellJoin(words) + "; do printf '[%s]' \"$w\"; done"};
  Ran r = RunWithStdinPipe(argv);
  EXPECT_EQ(r.out, "[plain][a b][it's][$HOME][\"q\"][back\\slash][][new\nline][*]");
}

TEST(JobPlan, MachineIdKeepsThatMachinesProcessesAndWaitsForTheOthersServers) {
  LaunchOptions o = Options();
  o.machine_id = 1;
  PlanInputs in = Inputs();
  in.remote = {true, false};
  auto plan = BuildJobPlan(o, in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->only_machine, 1);
  ASSERT_EQ(plan->servers.size(), 2u);
  ASSERT_EQ(plan->trainers.size(), 2u);
  for (const auto* group : {&plan->servers, &plan->trainers}) {
    for (const ProcessSpec& p : *group) {
      EXPECT_EQ(p.machine, 1);
      EXPECT_FALSE(p.remote);
    }
  }
  // Global ranks and the job's shape are the whole job's.
  EXPECT_EQ(plan->trainers[1].global_rank, 3);
  EXPECT_THAT(plan->trainers[1].env, ::testing::Contains("FANOUT_WORLD_SIZE=4"));
  ASSERT_EQ(plan->peer_servers.size(), 2u);
  EXPECT_EQ(plan->peer_servers[1].label, "m0 server 1");
  EXPECT_EQ(plan->peer_servers[1].host, "10.0.0.1");
  EXPECT_EQ(plan->peer_servers[1].port, 30051);
}

// ssh runs the remote command with the user's shell, `$SHELL -c "<command>"`; this stand-in does
// the same here, so the whole remote path (quoting, workspace, environment, exit status, stop on
// hang-up) is exercised without an ssh server.
std::string WriteFakeSsh(const fanout::testing::TempDir& dir) {
  const std::string path = dir.Sub("fake-ssh");
  fanout::testing::WriteText(path, "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n");
  chmod(path.c_str(), 0755);
  return path;
}

TEST(RemoteScript, RunsInWorkspaceWithEnvironmentAndExitStatus) {
  fanout::testing::TempDir dir;
  LaunchOptions o = Options();
  o.ssh_command = WriteFakeSsh(dir);
  const std::string script = RemoteScript(
      dir.path(), {"FANOUT_RANK=5", "ODD=it's $x"},
      {"sh", "-c", "echo \"$PWD|$FANOUT_RANK|$ODD|$1\"; exit 7", "arg0", "two words"}, 1);
  Ran r = RunWithStdinPipe(SshArgv(o, "10.9.9.9", script));
  EXPECT_EQ(r.out, dir.path() + "|5|it's $x|two words\n");
  EXPECT_EQ(r.status.Describe(), "exited with status 7");

  // A workspace that does not exist fails the remote side before anything runs.
  r = RunWithStdinPipe(SshArgv(o, "10.9.9.9", RemoteScript(dir.Sub("nope"), {}, {"echo", "ran"}, 1)));
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.status.Describe(), "exited with status 126");
}

TEST(RemoteScript, HangUpStopsTheCommandAndWhatItStarted) {
  fanout::testing::TempDir dir;
  LaunchOptions o = Options();
  o.ssh_command = WriteFakeSsh(dir);
  const std::string script = RemoteScript(
      dir.path(), {}, {"sh", "-c", "sleep 1000 & echo sampler $!; echo trainer $$ end; wait"}, 1);
  auto p = Process::Spawn({.argv = SshArgv(o, "10.9.9.9", script), .env = MergeEnvironment({}),
                           .stdin_pipe = true});
  ASSERT_TRUE(p.ok()) << p.status();
  std::string out;
  ASSERT_TRUE(testing::ReadUntil(p->stdout_fd(), " end", seconds(20), &out));
  std::vector<pid_t> pids = testing::NumbersAfter(out, "sampler");
  std::vector<pid_t> trainer = testing::NumbersAfter(out, "trainer");
  pids.insert(pids.end(), trainer.begin(), trainer.end());
  ASSERT_EQ(pids.size(), 2u) << out;
  EXPECT_FALSE(p->WaitFor(std::chrono::milliseconds(100)).has_value());  // runs until hang-up

  p->CloseStdin();  // what the launcher does to stop a remote process (or what its death does)
  auto st = p->WaitFor(seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->Describe(), "exited with status 143");  // the trainer got SIGTERM
  for (pid_t pid : pids) EXPECT_TRUE(testing::WaitGone(pid, seconds(10))) << pid;
}


// A stand-in for srun: takes its options (logged to $FAKE_SRUN_LOG), then runs the task's
// command here, as srun runs it on the chosen node.
std::string WriteFakeSrun(const fanout::testing::TempDir& dir) {
  const std::string path = dir.Sub("fake-srun");
  fanout::testing::WriteText(path, R"SH(#!/bin/sh
opts=""
while [ $# -gt 0 ]; do case "$1" in --*) opts="$opts $1"; shift ;; *) break ;; esac; done
[ -n "$FAKE_SRUN_LOG" ] && echo "$opts" >> "$FAKE_SRUN_LOG"
exec "$@"
)SH");
  chmod(path.c_str(), 0755);
  return path;
}

TEST(Srun, OneTaskOnTheNamedNodeRunsTheRemoteScript) {
  fanout::testing::TempDir dir;
  LaunchOptions o = Options();
  o.slurm = true;
  o.srun_command = WriteFakeSrun(dir);
  const std::vector<std::string> argv =
      SrunArgv(o, "node7", "fanout-m1-trainer-0",
               RemoteScript(dir.path(), {"FANOUT_RANK=5"}, {"sh", "-c", "echo \"$PWD|$FANOUT_RANK\"; exit 3"}, 1));
  EXPECT_THAT(argv, ::testing::IsSupersetOf({std::string("--nodelist=node7"), std::string("--nodes=1"),
                                             std::string("--ntasks=1"), std::string("--overlap"),
                                             std::string("--job-name=fanout-m1-trainer-0")}));
  setenv("FAKE_SRUN_LOG", dir.Sub("srun.log").c_str(), 1);
  Ran r = RunWithStdinPipe(argv);
  unsetenv("FAKE_SRUN_LOG");
  EXPECT_EQ(r.out, dir.path() + "|5\n");
  EXPECT_EQ(r.status.Describe(), "exited with status 3");
  EXPECT_THAT(testing::ReadFile(dir.Sub("srun.log")), HasSubstr("--nodelist=node7"));

  // In a plan, --slurm sends remote machines through srun, with the same script as over ssh.
  PlanInputs in = Inputs();
  in.remote = {false, true};
  auto plan = BuildJobPlan(o, in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->trainers[2].via, "srun");
  EXPECT_EQ(plan->trainers[2].argv[0], o.srun_command);
  EXPECT_EQ(plan->trainers[0].via, "");
  EXPECT_THAT(DescribePlan(*plan), HasSubstr("through srun"));
}

// --agent (Open MPI's plm_rsh_agent): a command of the user's choice reaches each machine, its
// {index} and {host} filled in; the script is the one ssh runs, with its stop on hang-up.
TEST(Agent, ReachesEachMachineThroughTheCommandWithItsIndexAndHost) {
  fanout::testing::TempDir dir;
  // A stand-in for `ip netns exec NS` / `docker exec -i C`: logs where it was sent, runs the rest.
  const std::string agent = dir.Sub("fake-agent");
  fanout::testing::WriteText(agent, R"SH(#!/bin/sh
echo "$1 $2" >> "$FAKE_AGENT_LOG"
shift 2
exec "$@"
)SH");
  chmod(agent.c_str(), 0755);
  EXPECT_EQ(AgentArgv(agent + " ns-{index}  at-{host}:{index}", 3, "10.1.0.4", "echo hi"),
            (std::vector<std::string>{agent, "ns-3", "at-10.1.0.4:3", "sh", "-c", "echo hi"}));
  setenv("FAKE_AGENT_LOG", dir.Sub("agent.log").c_str(), 1);
  Ran r = RunWithStdinPipe(AgentArgv(agent + " ns-{index} {host}", 1, "10.1.0.2",
                                     RemoteScript(dir.path(), {"FANOUT_RANK=5"},
                                                  {"sh", "-c", "echo \"$PWD|$FANOUT_RANK\"; exit 4"}, 1)));
  unsetenv("FAKE_AGENT_LOG");
  EXPECT_EQ(r.out, dir.path() + "|5\n");
  EXPECT_EQ(r.status.Describe(), "exited with status 4");
  EXPECT_EQ(testing::ReadFile(dir.Sub("agent.log")), "ns-1 10.1.0.2\n");

  // In a plan, every machine goes through the agent, local addresses too: a machine in a
  // namespace or a container is not this host's.
  LaunchOptions o = Options();
  o.agent = agent + " ns-{index}";
  PlanInputs in = Inputs();
  in.remote = {true, true};
  auto plan = BuildJobPlan(o, in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const auto& p : plan->trainers) {
    EXPECT_EQ(p.via, "agent");
    EXPECT_EQ(p.argv[0], agent);
    EXPECT_EQ(p.argv[1], "ns-" + std::to_string(p.machine));
  }
  EXPECT_THAT(DescribePlan(*plan), HasSubstr("through agent"));
}

TEST(Agent, BadAgentsAreRefusedByFlag) {
  LaunchOptions o = Options();
  o.agent = "ip netns exec m{rank}";
  EXPECT_THAT(std::string(ValidateLaunchOptions(o).message()), HasSubstr("unknown placeholder {rank}"));
  o.agent = "  ";
  EXPECT_THAT(std::string(ValidateLaunchOptions(o).message()), HasSubstr("--agent must name a command"));
  o.agent = "ip netns exec m{index}";
  o.machine_id = 0;
  EXPECT_THAT(std::string(ValidateLaunchOptions(o).message()), HasSubstr("--agent and --machine-id"));
}

class SlurmIpConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    fanout::testing::WriteText(dir_.Sub("fake-scontrol"),
                               "#!/bin/sh\n[ \"$1 $2\" = 'show hostnames' ] || exit 2\n"
                               "[ \"$3\" = 'gpu[1-2],cpu9' ] || { echo \"bad node list $3\" >&2; exit 1; }\n"
                               "printf 'gpu1\\ngpu2\\n  cpu9 \\n'\n");
    chmod(dir_.Sub("fake-scontrol").c_str(), 0755);
    o_.slurm = true;
    o_.slurm_port = 31000;
    o_.scontrol_command = dir_.Sub("fake-scontrol");
    setenv("SLURM_JOB_NODELIST", "gpu[1-2],cpu9", 1);
    setenv("SLURM_JOB_ID", "777", 1);
  }
  void TearDown() override {
    unsetenv("SLURM_JOB_NODELIST");
    unsetenv("SLURM_JOB_ID");
  }
  fanout::testing::TempDir dir_;
  LaunchOptions o_ = Options();
};

TEST_F(SlurmIpConfig, NodesInSlurmsOrderOnOnePortAndNeverAnotherFileOverwritten) {
  const std::string path = dir_.Sub("ip.txt");
  ASSERT_TRUE(WriteSlurmIpConfig(o_, path).ok());
  const std::string text = testing::ReadFile(path);
  EXPECT_THAT(text, HasSubstr("\ngpu1 31000\ngpu2 31000\ncpu9 31000\n"));
  auto machines = LoadIpConfig(path);
  ASSERT_TRUE(machines.ok()) << machines.status();
  ASSERT_EQ(machines->size(), 3u);
  EXPECT_EQ((*machines)[2].ip, "cpu9");
  // Again, for the same allocation: the same text, kept.
  EXPECT_TRUE(WriteSlurmIpConfig(o_, path).ok());
  // A file of the user's is not overwritten.
  fanout::testing::WriteText(path, "10.0.0.1\n");
  absl::Status s = WriteSlurmIpConfig(o_, path);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  EXPECT_EQ(testing::ReadFile(path), "10.0.0.1\n");
}

TEST_F(SlurmIpConfig, OutsideAnAllocationOrWithAFailingScontrolItSaysWhy) {
  unsetenv("SLURM_JOB_NODELIST");
  absl::Status s = WriteSlurmIpConfig(o_, dir_.Sub("ip.txt"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("SLURM_JOB_NODELIST is not set"));
  setenv("SLURM_JOB_NODELIST", "other[1-3]", 1);
  s = WriteSlurmIpConfig(o_, dir_.Sub("ip.txt"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad node list other[1-3]"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("exited with status 1"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("ip.txt")));
}

}  // namespace
}  // namespace fanout::launcher
