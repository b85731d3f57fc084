#include "base/spawn.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/strings.h"
#include "base/unique_fd.h"

extern char** environ;

namespace fanout::base {
namespace {

enum ChildStage { kStageSetup = 1, kStageCwd = 2, kStageExec = 3 };

// Async-signal-safe: between fork and exec the child may only call such functions.
[[noreturn]] void ChildFail(int report_fd, int stage) {
  int msg[2] = {stage, errno};
  ssize_t ignored = write(report_fd, msg, sizeof(msg));
  (void)ignored;
  _exit(127);
}

absl::Status CheckSpec(const ChildSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return absl::InvalidArgumentError("empty command");
  std::vector<int> targets;
  for (const ChildFd& f : spec.fds) {
    if (f.target < 0 || (f.from >= 0) == !f.path.empty()) {
      return absl::InvalidArgumentError(StrCat("child descriptor ", f.target, " of ", spec.argv[0],
                                               ": give a descriptor or a path, not both or neither"));
    }
    targets.push_back(f.target);
  }
  std::sort(targets.begin(), targets.end());
  if (std::adjacent_find(targets.begin(), targets.end()) != targets.end()) {
    return absl::InvalidArgumentError(StrCat("a child descriptor of ", spec.argv[0], " is set twice"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<pid_t> SpawnChild(const ChildSpec& spec) {
  if (absl::Status s = CheckSpec(spec); !s.ok()) return s;
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<UniqueFd> opened;
  std::vector<int> sources, targets;
  int top = 3;  // the lowest descriptor above every target and the standard three
  for (const ChildFd& f : spec.fds) {
    int from = f.from;
    if (!f.path.empty()) {
      opened.emplace_back(open(f.path.c_str(), f.flags | O_CLOEXEC, 0644));
      if (!opened.back().valid()) {
        return absl::FailedPreconditionError(StrCat("cannot open ", f.path, " for ", spec.argv[0],
                                                    ": ", std::strerror(errno)));
      }
      from = opened.back().get();
    }
    sources.push_back(from);
    targets.push_back(f.target);
    top = std::max(top, f.target + 1);
  }
  std::vector<char> is_target(static_cast<size_t>(top), 0);
  for (int t : targets) is_target[static_cast<size_t>(t)] = 1;
  std::vector<int> moved(sources.size(), -1);

  std::vector<std::string> argv_copy = spec.argv, env_copy = spec.env.value_or(std::vector<std::string>{});
  std::vector<char*> argv, envp;
  for (auto& a : argv_copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(StrCat("cannot start ", spec.argv[0], ": pipe: ", std::strerror(errno)));
  }
  UniqueFd report_read(report[0]), report_write(report[1]);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    return absl::ResourceExhaustedError(StrCat("cannot start ", spec.argv[0], ": fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    int rfd = report[1];
    if (spec.new_process_group && setpgid(0, 0) != 0) ChildFail(rfd, kStageSetup);
    if (spec.die_with_parent) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(rfd, kStageSetup);
      // The parent may have died before prctl: then no signal will ever come.
      if (getppid() != parent) _exit(127);
    }
    if (spec.reset_signals) {
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
      }
    }
    // Every source and the report pipe move above the targets first, so that no dup2 below can
    // overwrite a source another target still needs (e.g. sources 3 and 4 going to 4 and 3).
    rfd = fcntl(rfd, F_DUPFD_CLOEXEC, top);
    if (rfd < 0) ChildFail(report[1], kStageSetup);
    for (size_t i = 0; i < sources.size(); ++i) {
      moved[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, top);
      if (moved[i] < 0) ChildFail(rfd, kStageSetup);
    }
    for (size_t i = 0; i < moved.size(); ++i) {
      if (dup2(moved[i], targets[i]) < 0) ChildFail(rfd, kStageSetup);  // dup2 clears FD_CLOEXEC
    }
    for (int fd = 3; fd < top; ++fd) {
      if (is_target[static_cast<size_t>(fd)] == 0) close(fd);
    }
    if (rfd > top) close_range(static_cast<unsigned>(top), static_cast<unsigned>(rfd - 1), 0);
    close_range(static_cast<unsigned>(rfd + 1), ~0U, 0);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) ChildFail(rfd, kStageCwd);
    if (spec.env.has_value()) {
      execvpe(argv[0], argv.data(), envp.data());
    } else {
      execvp(argv[0], argv.data());
    }
    ChildFail(rfd, kStageExec);
  }

  // Set the group from this side too, so that it exists before anyone signals it (after the
  // exec this fails harmlessly: the child has done it itself).
  if (spec.new_process_group) setpgid(pid, pid);
  report_write.reset();
  opened.clear();
  // The report pipe closes on exec (success, 0 bytes) or carries {stage, errno}.
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(report_read.get(), msg, sizeof(msg));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(msg))) return pid;
  int ignored;
  while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
  }
  const char* err = std::strerror(msg[1]);
  switch (msg[0]) {
    case kStageCwd: return absl::FailedPreconditionError(StrCat("cannot enter working folder ", spec.cwd, ": ", err));
    case kStageExec: return absl::FailedPreconditionError(StrCat("cannot run ", spec.argv[0], ": ", err));
    default:
      return absl::FailedPreconditionError(StrCat("cannot set up the child process for ", spec.argv[0], ": ", err));
  }
}

int WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  // glibc 2.36's <sys/pidfd.h> lacks extern "C", so the system call is made directly.
  const UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!fd.valid()) return errno == ESRCH ? 1 : -1;
  pollfd p = {fd.get(), POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  return rc > 0 ? 1 : 0;
}

}  // namespace fanout::base
