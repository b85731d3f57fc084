#include "launcher/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "core/status.h"
#include "core/strings.h"

extern char** environ;

namespace fanout::launcher {
namespace {

using core::StrCat;

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// Async-signal-safe: the child between fork and exec may only call such functions.
[[noreturn]] void ChildFail(int report_fd, int stage) {
  int msg[2] = {stage, errno};
  ssize_t ignored = write(report_fd, msg, sizeof(msg));
  (void)ignored;
  _exit(127);
}

enum ChildStage { kStageSetup = 1, kStageCwd = 2, kStageExec = 3 };

}  // namespace

std::string ExitStatus::Describe() const {
  if (!signaled) return StrCat("exited with status ", value);
  const char* abbrev = sigabbrev_np(value);
  return abbrev != nullptr ? StrCat("killed by signal ", value, " (SIG", abbrev, ")")
                           : StrCat("killed by signal ", value);
}

ExitStatus ExitStatus::FromWaitStatus(int ws) {
  if (WIFSIGNALED(ws)) return {true, WTERMSIG(ws)};
  return {false, WIFEXITED(ws) ? WEXITSTATUS(ws) : 1};
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& additions) {
  std::map<std::string, std::string> vars;  // sorted, so children see a stable order
  auto put = [&](const std::string& kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) return;
    vars[kv.substr(0, eq)] = kv;
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) put(*e);
  for (const std::string& kv : additions) put(kv);
  std::vector<std::string> out;
  for (auto& [name, kv] : vars) out.push_back(kv);
  return out;
}

absl::StatusOr<Process> Process::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return absl::InvalidArgumentError("empty command");
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> argv_copy = o.argv, env_copy = o.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int* p : {in_pipe, out_pipe, err_pipe, report}) {
      CloseFd(&p[0]);
      CloseFd(&p[1]);
    }
  };
  bool ok = pipe2(report, O_CLOEXEC) == 0 && (!o.stdin_pipe || pipe2(in_pipe, O_CLOEXEC) == 0) &&
            (!o.capture_output ||
             (pipe2(out_pipe, O_CLOEXEC) == 0 && pipe2(err_pipe, O_CLOEXEC) == 0));
  if (!ok) {
    int e = errno;
    close_pipes();
    return absl::ResourceExhaustedError(StrCat("cannot create pipes: ", std::strerror(e)));
  }
  const int devnull = o.stdin_pipe ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close_pipes();
    if (devnull >= 0) close(devnull);
    return absl::ResourceExhaustedError(StrCat("fork: ", std::strerror(e)));
  }
  if (pid == 0) {
    const int rfd = report[1];
    if (setpgid(0, 0) != 0) ChildFail(rfd, kStageSetup);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(rfd, kStageSetup);
    // The parent may have died before prctl: then no signal will ever come.
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) signal(sig, SIG_DFL);
    int in = o.stdin_pipe ? in_pipe[0] : devnull;
    if (in < 0 || dup2(in, 0) < 0) ChildFail(rfd, kStageSetup);
    if (o.capture_output && (dup2(out_pipe[1], 1) < 0 || dup2(err_pipe[1], 2) < 0)) {
      ChildFail(rfd, kStageSetup);
    }
    // Nothing else leaks into the job (a caller's pipes would otherwise stay open in it).
    if (rfd > 3) close_range(3, rfd - 1, 0);
    close_range(rfd + 1, ~0U, 0);
    if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) ChildFail(rfd, kStageCwd);
    execvpe(argv[0], argv.data(), envp.data());
    ChildFail(rfd, kStageExec);
  }

  Process p;
  p.pid_ = pid;
  // Set the group from this side too, so that it exists before anyone signals it.
  setpgid(pid, pid);
  if (devnull >= 0) close(devnull);
  CloseFd(&report[1]);
  CloseFd(&in_pipe[0]);
  CloseFd(&out_pipe[1]);
  CloseFd(&err_pipe[1]);
  p.stdin_fd_.reset(in_pipe[1]);
  p.stdout_fd_.reset(out_pipe[0]);
  p.stderr_fd_.reset(err_pipe[0]);
  for (int fd : {p.stdout_fd(), p.stderr_fd()}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  // The report pipe closes on exec (success, 0 bytes) or carries {stage, errno}.
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(report[0], msg, sizeof(msg));
  } while (n < 0 && errno == EINTR);
  CloseFd(&report[0]);
  if (n == static_cast<ssize_t>(sizeof(msg))) {
    p.KillGroupAndReap();
    const char* what = msg[0] == kStageCwd ? "cannot enter working folder " : "cannot run ";
    std::string target = msg[0] == kStageCwd ? o.cwd : o.argv[0];
    if (msg[0] == kStageSetup) what = "cannot set up the child process for ";
    return absl::FailedPreconditionError(StrCat(what, target, ": ", std::strerror(msg[1])));
  }
  return p;
}

Process::Process(Process&& other) noexcept { *this = std::move(other); }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    if (valid()) KillGroupAndReap();
    pid_ = other.pid_;
    reaped_ = other.reaped_;
    stdin_fd_ = std::move(other.stdin_fd_);
    stdout_fd_ = std::move(other.stdout_fd_);
    stderr_fd_ = std::move(other.stderr_fd_);
    exit_status_ = other.exit_status_;
    other.pid_ = -1;
    other.reaped_ = false;
    other.exit_status_.reset();
  }
  return *this;
}

Process::~Process() {
  if (valid()) KillGroupAndReap();
}

void Process::CloseStdin() { stdin_fd_.reset(); }
void Process::CloseStdout() { stdout_fd_.reset(); }
void Process::CloseStderr() { stderr_fd_.reset(); }

void Process::CloseAll() {
  CloseStdin();
  CloseStdout();
  CloseStderr();
}

std::optional<ExitStatus> Process::Poll() {
  if (exit_status_ || !valid()) return exit_status_;
  siginfo_t info{};
  int rc;
  do {
    rc = waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0 && info.si_pid == pid_) {
    if (info.si_code == CLD_EXITED) {
      exit_status_ = ExitStatus{false, info.si_status};
    } else {
      exit_status_ = ExitStatus{true, info.si_status};
    }
  }
  return exit_status_;
}

std::optional<ExitStatus> Process::WaitFor(std::chrono::milliseconds timeout) {
  if (Poll() || !valid() || reaped_) return exit_status_;
  // glibc 2.36's <sys/pidfd.h> lacks extern "C", so the system call is made directly.
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (fd >= 0) {
    pollfd p = {fd, POLLIN, 0};
    int rc;
    do {
      rc = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (rc < 0 && errno == EINTR);
    close(fd);
    return Poll();
  }
  // Kernels before 5.3 have no pidfd.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_status_;
}

void Process::SignalGroup(int sig) {
  if (valid() && !reaped_) kill(-pid_, sig);
}

ExitStatus Process::KillGroupAndReap() {
  if (valid() && !reaped_) {
    kill(-pid_, SIGKILL);
    int ws = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &ws, 0);
    } while (r < 0 && errno == EINTR);
    if (r == pid_ && !exit_status_) exit_status_ = ExitStatus::FromWaitStatus(ws);
    reaped_ = true;
  }
  CloseAll();
  return exit_status_.value_or(ExitStatus{true, SIGKILL});
}

absl::StatusOr<std::string> RunForOutput(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(Process p, Process::Spawn({.argv = argv, .env = MergeEnvironment({})}));
  std::string out, err;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (p.stdout_fd() >= 0 || p.stderr_fd() >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(StrCat("'", core::StrJoin(argv, " "), "' did not finish within ",
                                                timeout.count() / 1000.0, " s"));
    }
    pollfd fds[2] = {{p.stdout_fd(), POLLIN, 0}, {p.stderr_fd(), POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        i == 0 ? p.CloseStdout() : p.CloseStderr();
      }
    }
  }
  std::optional<ExitStatus> status = p.WaitFor(timeout);
  if (!status || !status->ok()) {
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    return absl::FailedPreconditionError(StrCat("'", core::StrJoin(argv, " "), "' ",
                                                status ? status->Describe() : "did not exit",
                                                err.empty() ? "" : ": ", err));
  }
  return out;
}

}  // namespace fanout::launcher
