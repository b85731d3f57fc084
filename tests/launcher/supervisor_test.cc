// The supervisor with stand-in processes (sh scripts), no sockets: start order, failure
// detection, exit codes, teardown. The real binaries are exercised in launch_cli_test.
#include "launcher/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launcher/launcher_test_util.h"
#include "tests/testing/testing.h"

namespace fanout::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::seconds;

// A stand-in server: says it is ready (as fanout-server does, on stderr) and serves forever.
const std::vector<std::string> kServer = {
    "sh", "-c", "echo 'fanout-server: ready: stand-in' >&2; exec sleep 1000"};

ProcessSpec Spec(Role role, int machine, int rank, std::vector<std::string> command) {
  ProcessSpec p;
  p.role = role;
  p.machine = machine;
  p.rank = rank;
  p.global_rank = role == Role::kTrainer ? machine * 2 + rank : -1;
  p.ip = "127.0.0." + std::to_string(machine + 1);
  p.address = role == Role::kServer ? p.ip + ":30050" : "";
  p.command = p.argv = std::move(command);
  return p;
}

// Two machines, one server each (`server`) and two trainers each running `trainer`.
JobPlan Plan(const std::vector<std::string>& trainer, const std::vector<std::string>& server = kServer) {
  JobPlan plan;
  plan.job_id = "test";
  plan.machines = {{"127.0.0.1", 30050, 1}, {"127.0.0.2", 30050, 2}};
  for (int m = 0; m < 2; ++m) plan.servers.push_back(Spec(Role::kServer, m, 0, server));
  for (int m = 0; m < 2; ++m) {
    for (int r = 0; r < 2; ++r) {
      ProcessSpec t = Spec(Role::kTrainer, m, r, trainer);
      t.local_env = {"FANOUT_RANK=" + std::to_string(t.global_rank)};
      plan.trainers.push_back(std::move(t));
    }
  }
  return plan;
}

struct Result {
  int code = -1;
  std::string failure, out, err;
  JobSupervisor::FailureKind kind;
  double seconds = 0;
};

Result RunJob(JobPlan plan, const fanout::testing::TempDir& dir, double server_timeout = 20,
              double grace = 2) {
  SupervisorOptions o;
  o.server_timeout_s = server_timeout;
  o.stop_grace_s = grace;
  o.log_dir = dir.Sub("logs");
  o.console_out = open(dir.Sub("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  o.console_err = open(dir.Sub("err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  Result r;
  auto t0 = std::chrono::steady_clock::now();
  {
    JobSupervisor s(std::move(plan), o);
    r.code = s.Run();
    r.failure = s.failure();
    r.kind = s.failure_kind();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(o.console_out);
  close(o.console_err);
  r.out = testing::ReadFile(dir.Sub("out"));
  r.err = testing::ReadFile(dir.Sub("err"));
  return r;
}

void ExpectAllGone(const std::string& text) {
  std::vector<pid_t> pids = testing::NumbersAfter(text, "pid");
  std::vector<pid_t> more = testing::NumbersAfter(text, "sampler");
  pids.insert(pids.end(), more.begin(), more.end());
  EXPECT_FALSE(pids.empty());
  for (pid_t pid : pids) EXPECT_TRUE(testing::WaitGone(pid, seconds(5))) << "pid " << pid << " still runs";
}

TEST(Supervisor, JobSucceedsWhenEveryTrainerExitsZero) {
  fanout::testing::TempDir dir;
  Result r = RunJob(Plan({"sh", "-c", "echo hello from $FANOUT_RANK; echo warn >&2"}), dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.failure, "");
  for (int m = 0; m < 2; ++m) {
    for (int t = 0; t < 2; ++t) {
      std::string label = "[m" + std::to_string(m) + " trainer " + std::to_string(t) + "] ";
      EXPECT_THAT(r.out, HasSubstr(label + "hello from " + std::to_string(m * 2 + t) + "\n"));
      EXPECT_THAT(r.err, HasSubstr(label + "warn\n"));
    }
  }
  EXPECT_THAT(r.err, HasSubstr("[m1 server 0] fanout-server: ready: stand-in\n"));
  // Servers first; trainers only once every server is ready.
  size_t last_ready = r.err.rfind("ready on"), first_trainer = r.err.find("started m0 trainer");
  ASSERT_NE(first_trainer, std::string::npos);
  EXPECT_LT(last_ready, first_trainer);
  EXPECT_THAT(r.err, HasSubstr("all 4 trainers finished; stopping the servers"));
  // Plain lines in per-process logs.
  EXPECT_EQ(testing::ReadLog(dir.Sub("logs/m1-trainer-1.log")), "hello from 3\nwarn\n");
  EXPECT_EQ(testing::ReadLog(dir.Sub("logs/m0-server-0.log")), "fanout-server: ready: stand-in\n");
  EXPECT_THAT(testing::ReadLog(dir.Sub("logs/fanout-launch.log")), HasSubstr("started m1 server 0 pid"));
  ExpectAllGone(r.err);
}

TEST(Supervisor, FailingTrainerStopsTheJobWithItsStatus) {
  fanout::testing::TempDir dir;
  Result r = RunJob(Plan({"sh", "-c",
                          "if [ $FANOUT_RANK = 2 ]; then exit 3; fi; sleep 1000 & echo sampler $!; wait"}),
                    dir);
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.failure, HasSubstr("m1 trainer 0 (machine 1 at 127.0.0.2, trainer local rank 0, rank 2; pid "));
  EXPECT_THAT(r.failure, HasSubstr(") exited with status 3"));
  EXPECT_THAT(r.err, HasSubstr("; stopping the job"));
  EXPECT_THAT(r.err, HasSubstr("job test failed (exit 3): m1 trainer 0"));
  EXPECT_LT(r.seconds, 15);
  // As restarts judge it (launcher/restarts.h): the same failure of another run reads the same.
  EXPECT_EQ(r.kind.signature, "m1 trainer 0 exited with status 3");
  EXPECT_EQ(r.kind.exit_status, 3);
  EXPECT_FALSE(r.kind.killed);
  ExpectAllGone(r.err + r.out);
}

TEST(Supervisor, TrainerKilledBySignalExitsOne) {
  fanout::testing::TempDir dir;
  Result r = RunJob(Plan({"sh", "-c", "if [ $FANOUT_RANK = 1 ]; then kill -9 $$; fi; exec sleep 1000"}), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.failure, HasSubstr("m0 trainer 1 ("));
  EXPECT_THAT(r.failure, HasSubstr("killed by signal 9 (SIGKILL)"));
  EXPECT_THAT(r.failure, Not(HasSubstr("out-of-memory")));
  EXPECT_EQ(r.kind.signature, "m0 trainer 1 killed by signal 9 (SIGKILL)");
  EXPECT_TRUE(r.kind.killed);
  EXPECT_EQ(r.kind.exit_status, -1);
  ExpectAllGone(r.err);
}

// A trainer the kernel's out-of-memory killer ends (the job in a memory cgroup of 96 MiB, the
// trainer reading a line from /dev/zero that never ends) fails the job with a line that says so;
// a trainer killed by SIGKILL otherwise (the test above) gets no such hint. The count read is the
// launcher's cgroup's (this test's, entered with its children): an OOM elsewhere on the machine,
// as in a test running beside this one, blames nobody here.
TEST(Supervisor, TrainerEndedByTheOutOfMemoryKillerSaysSo) {
  fanout::testing::MemoryCgroup cgroup;
  std::string why;
  if (!cgroup.Create(96 << 20, &why)) GTEST_SKIP() << why;
  if (!cgroup.Enter()) GTEST_SKIP() << "cannot move this process into " << cgroup.path();
  if (!ReadOomKillCount().has_value()) GTEST_SKIP() << "this kernel keeps no oom_kill count";
  fanout::testing::TempDir dir;
  Result r = RunJob(Plan({"sh", "-c", "if [ $FANOUT_RANK = 3 ]; then exec tail /dev/zero; fi; exec sleep 1000"}), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.failure, HasSubstr("m1 trainer 1 ("));
  EXPECT_THAT(r.failure, HasSubstr("killed by signal 9 (SIGKILL): killed by the kernel's out-of-memory killer"));
  EXPECT_GE(cgroup.OomKills(), 1);
  // The same failure again reads the same (restarts compare them): no counts in it.
  EXPECT_EQ(r.kind.signature, "m1 trainer 1 killed by signal 9 (SIGKILL): " +
                                  OomKillHint({true, SIGKILL}, std::optional<int64_t>(-1)));
  ExpectAllGone(r.err);
}

// On a remote machine a process killed by a signal comes back as its shell's status 128 + N:
// still a killed process to the restarts, which run it again however often it repeats.
TEST(Supervisor, RemoteTrainerKilledBySignalCountsAsKilled) {
  fanout::testing::TempDir dir;
  JobPlan plan = Plan({"sh", "-c", "if [ $FANOUT_RANK = 1 ]; then sh -c 'kill -9 $$'; exit $?; fi; exec sleep 1000"});
  plan.trainers[1].remote = true;
  plan.trainers[1].via = "ssh";
  Result r = RunJob(std::move(plan), dir);
  EXPECT_EQ(r.code, 137);
  EXPECT_THAT(r.failure, HasSubstr("m0 trainer 1 ("));
  EXPECT_THAT(r.failure, HasSubstr("exited with status 137"));
  EXPECT_TRUE(r.kind.killed);
  EXPECT_EQ(r.kind.exit_status, 137);
  ExpectAllGone(r.err);
}

TEST(Supervisor, ServerExitingWhileTrainersRunIsAFailureEvenWithStatusZero) {
  fanout::testing::TempDir dir;
  JobPlan plan = Plan({"sh", "-c", "exec sleep 1000"});
  // m1's server becomes ready, then exits 0 once the trainers are up.
  plan.servers[1].argv = {"sh", "-c",
                          "echo 'fanout-server: ready: stand-in' >&2; sleep 0.5; exit 0"};
  Result r = RunJob(std::move(plan), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.failure, HasSubstr("m1 server 0 (machine 1 at 127.0.0.2, server 0 on 127.0.0.2:30050; pid "));
  EXPECT_THAT(r.failure, HasSubstr("exited with status 0"));
  ExpectAllGone(r.err);
}

TEST(Supervisor, ServerNotReadyInTime) {
  fanout::testing::TempDir dir;
  JobPlan plan = Plan({"true"});
  plan.servers[1].argv = {"sh", "-c", "echo loading; exec sleep 1000"};
  Result r = RunJob(std::move(plan), dir, /*server_timeout=*/0.5);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.failure, HasSubstr("m1 server 0 (machine 1 at 127.0.0.2, server 0 on 127.0.0.2:30050; pid "));
  EXPECT_THAT(r.failure, HasSubstr("did not report ready within 0.5 s (--server-timeout)"));
  EXPECT_THAT(r.failure, Not(HasSubstr("m0 server 0")));
  EXPECT_THAT(r.err, Not(HasSubstr("started m0 trainer")));  // never started
  ExpectAllGone(r.err);
}

TEST(Supervisor, ServerDyingBeforeReadyFailsAtOnce) {
  fanout::testing::TempDir dir;
  JobPlan plan = Plan({"true"});
  plan.servers[0].argv = {"sh", "-c", "echo 'fanout-server: error: cannot listen' >&2; exit 1"};
  Result r = RunJob(std::move(plan), dir, /*server_timeout=*/60);
  EXPECT_EQ(r.code, 1);
  EXPECT_LT(r.seconds, 30);
  EXPECT_THAT(r.failure, HasSubstr("m0 server 0 ("));
  EXPECT_THAT(r.failure, HasSubstr("exited with status 1 before all servers were ready"));
  EXPECT_THAT(r.err, HasSubstr("[m0 server 0] fanout-server: error: cannot listen"));
  ExpectAllGone(r.err);
}

TEST(Supervisor, ProcessIgnoringSigtermIsKilledAfterTheGrace) {
  fanout::testing::TempDir dir;
  JobPlan plan = Plan({"true"});
  plan.servers[0].argv = {"sh", "-c",
                          "trap '' TERM; echo 'fanout-server: ready: stubborn' >&2; sleep 1000 & wait; wait"};
  Result r = RunJob(std::move(plan), dir, 20, /*grace=*/0.5);
  EXPECT_EQ(r.code, 0) << r.err;  // the trainers succeeded; a stubborn server does not change that
  EXPECT_THAT(r.err, HasSubstr("1 process still running after 0.5 s (--stop-grace): sent SIGKILL"));
  ExpectAllGone(r.err);
}

TEST(Supervisor, SignalToTheLauncherStopsTheJob) {
  fanout::testing::TempDir dir;
  // Trainer 3 plays the user pressing Ctrl-C: SIGINT to the launcher (this test process, which
  // has SIGINT blocked and read through a signalfd while Run() runs).
  Result r = RunJob(Plan({"sh", "-c", "if [ $FANOUT_RANK = 3 ]; then kill -INT $PPID; fi; exec sleep 1000"}), dir);
  EXPECT_EQ(r.code, 130);
  EXPECT_EQ(r.failure, "stopped by SIGINT");
  EXPECT_EQ(r.kind.launcher_signal, SIGINT);
  EXPECT_THAT(r.err, HasSubstr("got SIGINT: stopping the job on every machine"));
  ExpectAllGone(r.err);
}

TEST(Supervisor, UnstartableTrainerFailsTheJob) {
  fanout::testing::TempDir dir;
  Result r = RunJob(Plan({"/nonexistent/fanout-train"}), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.failure,
            "cannot start m0 trainer 0 (machine 0 at 127.0.0.1, trainer local rank 0, rank 0): "
            "cannot run /nonexistent/fanout-train: No such file or directory");
  ExpectAllGone(r.err);
}

}  // namespace
}  // namespace fanout::launcher
