#include "launcher/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/group_guard.h"
#include "tests/launcher/launcher_test_util.h"
#include "tests/testing/testing.h"

namespace fanout::launcher {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;

Process MustSpawn(std::vector<std::string> argv, std::vector<std::string> env_additions = {},
                  std::string cwd = "") {
  auto p = Process::Spawn({.argv = std::move(argv), .env = MergeEnvironment(env_additions), .cwd = cwd});
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : Process();
}

TEST(ExitStatus, Describe) {
  EXPECT_EQ((ExitStatus{false, 3}).Describe(), "exited with status 3");
  EXPECT_EQ((ExitStatus{true, 9}).Describe(), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ((ExitStatus{true, SIGTERM}).Describe(), "killed by signal 15 (SIGTERM)");
  EXPECT_TRUE((ExitStatus{false, 0}).ok());
  EXPECT_FALSE((ExitStatus{true, 0}).ok());
}

TEST(Process, ExitStatusAndSignal) {
  Process p = MustSpawn({"sh", "-c", "exit 3"});
  auto st = p.WaitFor(seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_FALSE(st->signaled);
  EXPECT_EQ(st->value, 3);
  EXPECT_EQ(p.KillGroupAndReap().value, 3);  // reaping keeps the status seen before

  Process q = MustSpawn({"sh", "-c", "kill -9 $$"});
  st = q.WaitFor(seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->Describe(), "killed by signal 9 (SIGKILL)");
}

TEST(Process, EnvironmentWorkingFolderAndOutput) {
  fanout::testing::TempDir dir;
  Process p = MustSpawn({"sh", "-c", "echo \"$FANOUT_X $PWD\"; echo err >&2; read x || echo stdin-empty"},
                        {"FANOUT_X=42"}, dir.path());
  std::string out, err;
  ASSERT_TRUE(testing::ReadToEnd(p.stdout_fd(), seconds(20), &out));
  ASSERT_TRUE(testing::ReadToEnd(p.stderr_fd(), seconds(20), &err));
  EXPECT_EQ(out, "42 " + dir.path() + "\nstdin-empty\n");
  EXPECT_EQ(err, "err\n");
  EXPECT_TRUE(p.WaitFor(seconds(20)).has_value());
}

TEST(Process, MergeEnvironmentReplacesAndAdds) {
  setenv("FANOUT_LAUNCHER_TEST_VAR", "old", 1);
  std::vector<std::string> env = MergeEnvironment({"FANOUT_LAUNCHER_TEST_VAR=new", "FANOUT_NEW=1"});
  EXPECT_THAT(env, ::testing::Contains("FANOUT_LAUNCHER_TEST_VAR=new"));
  EXPECT_THAT(env, ::testing::Not(::testing::Contains("FANOUT_LAUNCHER_TEST_VAR=old")));
  EXPECT_THAT(env, ::testing::Contains("FANOUT_NEW=1"));
  unsetenv("FANOUT_LAUNCHER_TEST_VAR");
}

TEST(Process, StartFailuresAreErrorsNotExitStatuses) {
  auto p = Process::Spawn({.argv = {"/nonexistent/fanout-train"}, .env = MergeEnvironment({})});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "cannot run /nonexistent/fanout-train: No such file or directory");
  p = Process::Spawn({.argv = {"no-such-program-fanout"}, .env = MergeEnvironment({})});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("cannot run no-such-program-fanout"));
  p = Process::Spawn({.argv = {"true"}, .env = MergeEnvironment({}), .cwd = "/nonexistent-dir"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "cannot enter working folder /nonexistent-dir: No such file or directory");
}

TEST(Process, OwnProcessGroup) {
  Process p = MustSpawn({"sh", "-c", "exec sleep 1000"});
  EXPECT_EQ(getpgid(p.pid()), p.pid());
  EXPECT_NE(getpgid(p.pid()), getpgrp());
}

TEST(Process, DestructorKillsTheWholeGroup) {
  pid_t child, grandchild;
  {
    Process p = MustSpawn({"sh", "-c", "sleep 1000 & echo grandchild $!; wait"});
    child = p.pid();
    std::string out;
    ASSERT_TRUE(testing::ReadUntil(p.stdout_fd(), "\n", seconds(20), &out));
    ASSERT_EQ(testing::NumbersAfter(out, "grandchild").size(), 1u) << out;
    grandchild = testing::NumbersAfter(out, "grandchild")[0];
    EXPECT_TRUE(testing::IsRunning(grandchild));
  }
  EXPECT_FALSE(testing::IsRunning(child));  // reaped: not even a zombie of ours
  EXPECT_EQ(waitpid(child, nullptr, WNOHANG), -1);
  EXPECT_TRUE(testing::WaitGone(grandchild, seconds(10)));
}

TEST(Process, MovedHandleOwnsTheProcess) {
  Process a = MustSpawn({"sh", "-c", "exec sleep 1000"});
  const pid_t pid = a.pid();
  Process b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.pid(), pid);
  { Process gone = std::move(a); }  // destroying an empty handle touches nothing
  EXPECT_TRUE(testing::IsRunning(pid));
  EXPECT_FALSE(b.Poll().has_value());
  b.SignalGroup(SIGTERM);
  auto st = b.WaitFor(seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->Describe(), "killed by signal 15 (SIGTERM)");
}

// Forks a stand-in launcher that runs `body`, which writes pids to `fd` (as "pid N" lines), and
// then waits to be killed. Returns the stand-in's pid.
template <typename Body>
pid_t ForkLauncher(int* read_fd, Body body) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    body(p[1]);
    for (;;) pause();
  }
  close(p[1]);
  *read_fd = p[0];
  return pid;
}

TEST(Process, ChildDiesWithItsParent) {
  int fd;
  pid_t launcher = ForkLauncher(&fd, [](int out) {
    auto p = Process::Spawn({.argv = {"sleep", "1000"}, .env = MergeEnvironment({}), .capture_output = false});
    if (!p.ok()) _exit(1);
    std::string line = "pid " + std::to_string(p->pid()) + "\n";
    ssize_t ignored = write(out, line.data(), line.size());
    (void)ignored;
    for (;;) pause();
  });
  std::string out;
  ASSERT_TRUE(testing::ReadUntil(fd, "\n", seconds(20), &out));
  close(fd);
  ASSERT_EQ(testing::NumbersAfter(out, "pid").size(), 1u) << out;
  const pid_t sleeper = testing::NumbersAfter(out, "pid")[0];
  EXPECT_TRUE(testing::IsRunning(sleeper));
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(testing::WaitGone(sleeper, seconds(10)));  // PR_SET_PDEATHSIG
}

TEST(GroupGuard, KillsWhatChildrenStartedWhenTheLauncherDies) {
  int fd;
  pid_t launcher = ForkLauncher(&fd, [](int out) {
    auto guard = GroupGuard::Start();
    if (!guard.ok()) _exit(1);
    auto p = Process::Spawn({.argv = {"sh", "-c", "sleep 1000 & echo grandchild $!; wait"},
                             .env = MergeEnvironment({})});
    if (!p.ok()) _exit(1);
    guard->Add(p->pid());
    std::string text;
    testing::ReadUntil(p->stdout_fd(), "\n", seconds(20), &text);
    text += "guard " + std::to_string(guard->pid()) + "\n";
    ssize_t ignored = write(out, text.data(), text.size());
    (void)ignored;
    for (;;) pause();
  });
  std::string out;
  ASSERT_TRUE(testing::ReadUntil(fd, "guard", seconds(20), &out));
  ASSERT_TRUE(testing::ReadUntil(fd, "\n", seconds(20), &out));
  close(fd);
  ASSERT_EQ(testing::NumbersAfter(out, "grandchild").size(), 1u) << out;
  const pid_t grandchild = testing::NumbersAfter(out, "grandchild")[0];
  EXPECT_TRUE(testing::IsRunning(grandchild));
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  // The trainer-like child dies of PR_SET_PDEATHSIG; only the guard can reach its child.
  EXPECT_TRUE(testing::WaitGone(grandchild, seconds(10)));
  EXPECT_TRUE(testing::WaitGone(testing::NumbersAfter(out, "guard")[0], seconds(10)));
}

TEST(GroupGuard, DisarmedGuardKillsNothing) {
  Process p = MustSpawn({"sh", "-c", "exec sleep 1000"});
  {
    auto guard = GroupGuard::Start();
    ASSERT_TRUE(guard.ok()) << guard.status();
    guard->Add(p.pid());
    guard->Disarm();
  }  // the destructor waits for the guard to exit
  EXPECT_FALSE(p.Poll().has_value());
  EXPECT_TRUE(testing::IsRunning(p.pid()));
}

}  // namespace
}  // namespace fanout::launcher
