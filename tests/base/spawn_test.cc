#include "base/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::base {
namespace {

using testing::TempDir;

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `spec` with its stdout in a file; returns the wait status and sets *out.
int RunToEnd(ChildSpec spec, const TempDir& dir, std::string* out) {
  const std::string path = dir.Sub("stdout");
  spec.fds.push_back(ChildFd::Open(1, path, O_WRONLY | O_CREAT | O_TRUNC));
  absl::StatusOr<pid_t> pid = SpawnChild(spec);
  EXPECT_TRUE(pid.ok()) << pid.status();
  if (!pid.ok()) return -1;
  int status = 0;
  EXPECT_EQ(waitpid(*pid, &status, 0), *pid);
  *out = Slurp(path);
  return status;
}

// Sources that are each other's targets: 40 goes to 41 and 41 to 40. A naive dup2 in order would
// overwrite the second source before reading it.
TEST(SpawnChildTest, ArrangesDescriptorsEvenWhenSourcesAndTargetsCross) {
  if (IsOpen(40) || IsOpen(41)) GTEST_SKIP() << "descriptors 40 and 41 are in use in this process";
  TempDir dir;
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  ASSERT_EQ(write(a[1], "from-a\n", 7), 7);
  ASSERT_EQ(write(b[1], "from-b\n", 7), 7);
  close(a[1]);
  close(b[1]);
  ASSERT_EQ(dup2(a[0], 40), 40);
  ASSERT_EQ(dup2(b[0], 41), 41);
  close(a[0]);
  close(b[0]);
  std::string out;
  int status = RunToEnd({.argv = {"/bin/sh", "-c", "cat /proc/self/fd/40; cat /proc/self/fd/41"},
                         .fds = {ChildFd::Dup(41, 40), ChildFd::Dup(40, 41)}},
                        dir, &out);
  close(40);
  close(41);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(out, "from-b\nfrom-a\n");
}

TEST(SpawnChildTest, ClosesEveryOtherDescriptorAndReplacesTheEnvironment) {
  TempDir dir;
  int p[2];
  ASSERT_EQ(pipe(p), 0);  // not close-on-exec: only SpawnChild keeps it from the child
  const std::string script =
      StrCat("test -e /proc/$$/fd/", p[0], " && echo leaked; echo \"$FANOUT_SPAWN_TEST|$HOME\"");
  std::string out;
  int status = RunToEnd({.argv = {"sh", "-c", script}, .env = std::vector<std::string>{"FANOUT_SPAWN_TEST=yes", "PATH=/usr/bin:/bin"}},
                        dir, &out);
  close(p[0]);
  close(p[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(out, "yes|\n");  // argv[0] found in PATH; HOME not passed on
}

TEST(SpawnChildTest, ReportsWhatFailedBeforeTheExec) {
  absl::StatusOr<pid_t> r = SpawnChild({.argv = {"/nonexistent/fanout-tool"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cannot run /nonexistent/fanout-tool: No such file or directory");
  r = SpawnChild({.argv = {"true"}, .cwd = "/nonexistent-folder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cannot enter working folder /nonexistent-folder: No such file or directory");
  r = SpawnChild({.argv = {"true"}, .fds = {ChildFd::Open(1, "/nonexistent-folder/out", O_WRONLY | O_CREAT)}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot open /nonexistent-folder/out for true"), std::string::npos) << r.status();
  EXPECT_FALSE(SpawnChild({.argv = {"true"}, .fds = {ChildFd::DevNull(1), ChildFd::DevNull(1)}}).ok());
  EXPECT_FALSE(SpawnChild({.argv = {}}).ok());
}

TEST(SpawnChildTest, ResetsSignalsAndLeadsItsOwnGroupWhenAsked) {
  TempDir dir;
  // Ignored here; an ignored disposition would otherwise survive the exec.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &old), 0);
  std::string out;
  int status = RunToEnd({.argv = {"sh", "-c", "kill -TERM $$; echo survived"}}, dir, &out);
  int kept = RunToEnd({.argv = {"sh", "-c", "kill -TERM $$; echo survived"}, .reset_signals = false}, dir, &out);
  sigaction(SIGTERM, &old, nullptr);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_TRUE(WIFEXITED(kept) && WEXITSTATUS(kept) == 0) << kept;
  EXPECT_EQ(out, "survived\n");

  absl::StatusOr<pid_t> pid = SpawnChild({.argv = {"sleep", "30"}, .new_process_group = true});
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(getpgid(*pid), *pid);
  kill(-*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
}

}  // namespace
}  // namespace fanout::base
