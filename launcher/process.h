// A child process the launcher owns (after Ray's util/process.h): started in its own process
// group with PR_SET_PDEATHSIG(SIGKILL), so that it dies with the launcher; move-only; the
// destructor kills the whole group and reaps the child, so no handle can leak a process.
// Not thread-safe; one thread owns a Process. PR_SET_PDEATHSIG fires when the *thread* that
// spawned the child exits, so spawn from a thread that lives as long as the job (the launcher
// is single-threaded).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace fanout::launcher {

// How a process ended.
struct ExitStatus {
  bool signaled = false;  // true: killed by signal `value`; false: exited with status `value`
  int value = 0;

  bool ok() const { return !signaled && value == 0; }
  // "exited with status 3", "killed by signal 9 (SIGKILL)".
  std::string Describe() const;
  static ExitStatus FromWaitStatus(int wait_status);
};

// How many processes the kernel's out-of-memory killer has ended in this process's memory
// cgroup (v1 memory.oom_control, v2 memory.events.local: that group's own, global and limit OOMs
// alike), which the launcher's children share unless they move; where no such file can be read
// (a network namespace's /sys), the machine's (/proc/vmstat). nullopt before kernel 4.13.
std::optional<int64_t> ReadOomKillCount();

// What an out-of-memory line asks of the user, for a local process (OomKillHint) and a remote one
// (the start script of job_plan.cc) alike. No shell metacharacter: the script echoes it quoted.
inline constexpr char kOutOfMemoryRemedy[] =
    "this machine, or the memory cgroup the job runs in, ran out of memory; give it more or lower the job's "
    "(docs/deploy.md, memory)";

// For a process that ended by SIGKILL: "killed by the kernel's out-of-memory killer (...)" when
// the count of ReadOomKillCount rose from `before` (taken when the process started), else "". The job's
// failure line ends with it, so that a user sees why; it names no count, so that the same failure
// reads the same each time (restarts compare them).
std::string OomKillHint(const ExitStatus& status, std::optional<int64_t> before);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // the complete environment, "NAME=VALUE"
  std::string cwd;                // "" = the launcher's
  bool stdin_pipe = false;        // stdin: a pipe the launcher writes (else /dev/null)
  bool capture_output = true;     // stdout, stderr: pipes the launcher reads (else inherited)
};

class Process {
 public:
  // Forks and execs (base::SpawnChild). In the child: own process group, SIGKILL when the parent dies (and exit at
  // once if the parent already died), default signal dispositions and an empty signal mask,
  // every descriptor but 0-2 closed. An exec failure (no such program, bad cwd) comes back as
  // an error here rather than as an exit status.
  static absl::StatusOr<Process> Spawn(const SpawnOptions& options);

  Process() = default;
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  // KillGroupAndReap().
  ~Process();

  pid_t pid() const { return pid_; }
  bool valid() const { return pid_ > 0; }

  // Descriptors of the pipes (-1 when absent or closed). Reads are non-blocking.
  int stdin_fd() const { return stdin_fd_.get(); }
  int stdout_fd() const { return stdout_fd_.get(); }
  int stderr_fd() const { return stderr_fd_.get(); }
  void CloseStdin();
  void CloseStdout();
  void CloseStderr();

  // Without blocking: the exit status once the child has exited. The child is left a zombie
  // until KillGroupAndReap, so that its pid, which is its process group's ID, cannot be given to
  // another process while the group is still being signalled.
  std::optional<ExitStatus> Poll();
  const std::optional<ExitStatus>& exit_status() const { return exit_status_; }
  // Poll(), after waiting up to `timeout` for the child to exit (on a pidfd, so no polling
  // loop). Leaves the child a zombie like Poll().
  std::optional<ExitStatus> WaitFor(std::chrono::milliseconds timeout);

  // Sends `sig` to the child's process group (the child and whatever it started that stayed in
  // the group). No-op after reaping.
  void SignalGroup(int sig);

  // SIGKILL to the group, then waits for the child (bounded: SIGKILL cannot be caught) and
  // closes the pipes. Returns the exit status. Idempotent.
  ExitStatus KillGroupAndReap();

 private:
  void CloseAll();

  pid_t pid_ = -1;
  bool reaped_ = false;
  base::UniqueFd stdin_fd_, stdout_fd_, stderr_fd_;
  std::optional<ExitStatus> exit_status_;
};

// Runs `argv` to the end (the launcher's environment, stdin /dev/null) and returns its stdout;
// an error, carrying its stderr, when it cannot start, exits non-zero or outlives `timeout`
// (then its process group is killed).
absl::StatusOr<std::string> RunForOutput(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// The launcher's environment (environ) with `additions` ("NAME=VALUE") replacing or adding.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& additions);

}  // namespace fanout::launcher
