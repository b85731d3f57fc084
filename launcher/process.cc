#include "launcher/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "base/process_stats.h"
#include "base/spawn.h"
#include "base/status.h"
#include "base/strings.h"

extern char** environ;

namespace fanout::launcher {
using base::StrCat;

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

std::optional<int64_t> ReadOomKillCount() {
  // This process's memory cgroup: v1's oom_control, else v2's memory.events.local (each counts
  // kills in that group only).
  const base::MemoryCgroupDirs cgroup = base::OwnMemoryCgroup();
  for (const std::string& file : {cgroup.v1.empty() ? "" : cgroup.v1 + "/memory.oom_control",
                                  cgroup.v2.empty() ? "" : cgroup.v2 + "/memory.events.local"}) {
    if (file.empty()) continue;
    if (std::optional<int64_t> n = base::OomKillCountIn(file)) return n;
  }
  return base::OomKillCountIn("/proc/vmstat");
}

std::string OomKillHint(const ExitStatus& status, std::optional<int64_t> before) {
  if (!status.signaled || status.value != SIGKILL || !before.has_value()) return "";
  const std::optional<int64_t> after = ReadOomKillCount();
  if (!after.has_value() || *after <= *before) return "";
  return StrCat("killed by the kernel's out-of-memory killer (the oom_kill count of its memory cgroup rose while it ran): ",
                kOutOfMemoryRemedy);
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
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  bool ok = (!o.stdin_pipe || pipe2(in_pipe, O_CLOEXEC) == 0) &&
            (!o.capture_output || (pipe2(out_pipe, O_CLOEXEC) == 0 && pipe2(err_pipe, O_CLOEXEC) == 0));
  const int pipe_errno = errno;
  // Ours, whatever happens below: the child's ends close when the spawn has returned.
  base::UniqueFd in_r(in_pipe[0]), in_w(in_pipe[1]), out_r(out_pipe[0]), out_w(out_pipe[1]),
      err_r(err_pipe[0]), err_w(err_pipe[1]);
  if (!ok) return absl::ResourceExhaustedError(StrCat("cannot create pipes: ", std::strerror(pipe_errno)));
  base::ChildSpec spec{.argv = o.argv, .env = o.env, .cwd = o.cwd, .new_process_group = true};
  spec.fds.push_back(o.stdin_pipe ? base::ChildFd::Dup(0, in_r.get()) : base::ChildFd::Open(0, "/dev/null", O_RDONLY));
  if (o.capture_output) {
    spec.fds.push_back(base::ChildFd::Dup(1, out_w.get()));
    spec.fds.push_back(base::ChildFd::Dup(2, err_w.get()));
  }
  ASSIGN_OR_RETURN(const pid_t pid, base::SpawnChild(spec));
  Process p;
  p.pid_ = pid;
  p.stdin_fd_ = std::move(in_w);
  p.stdout_fd_ = std::move(out_r);
  p.stderr_fd_ = std::move(err_r);
  for (int fd : {p.stdout_fd(), p.stderr_fd()}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
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
  if (base::WaitForExit(pid_, timeout) >= 0) return Poll();
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
      return absl::DeadlineExceededError(StrCat("'", base::StrJoin(argv, " "), "' did not finish within ",
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
    return absl::FailedPreconditionError(StrCat("'", base::StrJoin(argv, " "), "' ",
                                                status ? status->Describe() : "did not exit",
                                                err.empty() ? "" : ": ", err));
  }
  return out;
}

}  // namespace fanout::launcher
