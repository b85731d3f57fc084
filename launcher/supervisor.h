// Runs a planned job: starts every server, waits until each reports ready, starts the trainers,
// streams all output (prefixed on the console, unprefixed in per-process log files) and stops
// the whole job on the first failure, on SIGINT/SIGTERM/SIGHUP, or when every trainer is done.
//
// Stopping: local process groups get SIGTERM and remote processes a hang-up (their ssh stdin
// closes, see RemoteScript); whatever has not exited after the grace period gets SIGKILL (the
// whole process group), then everything is reaped. Should the launcher itself be killed, its
// children die with it (PR_SET_PDEATHSIG) and a GroupGuard kills what they started. Not thread-safe; Run() blocks the watched
// signals in the calling thread while it runs and is meant for the launcher's main thread.
#pragma once

#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/memory_report.h"
#include "base/wire_counters.h"
#include "launcher/group_guard.h"
#include "launcher/job_plan.h"
#include "launcher/memory_summary.h"
#include "launcher/output.h"
#include "launcher/process.h"

namespace fanout::launcher {

class SignalWatch;

struct SupervisorOptions {
  double server_timeout_s = 60;  // servers that have not printed kServerReadyMarker by then fail
  double stop_grace_s = 5;       // SIGTERM / hang-up to SIGKILL
  // A process that has sent heartbeats (base/heartbeat.h) and then sends none for this long is
  // taken as hung: it is killed at once and the job stopped. 0: not watched.
  double heartbeat_timeout_s = 8;
  std::string log_dir;           // required; created (with parents) when missing
  int console_out = STDOUT_FILENO;  // processes' stdout lines go here, prefixed
  int console_err = STDERR_FILENO;  // their stderr lines and the launcher's own messages
};

class JobSupervisor {
 public:
  JobSupervisor(JobPlan plan, SupervisorOptions options);
  ~JobSupervisor();
  JobSupervisor(const JobSupervisor&) = delete;
  JobSupervisor& operator=(const JobSupervisor&) = delete;

  // Runs the job to its end and returns the launcher's exit code: 0 when every trainer exited
  // with 0; else the exit status of the first process that failed (1 when it was killed by a
  // signal, or was a server that exited 0 while the job ran); 1 when a process could not be
  // started or a server was not ready in time; 128 + N when the launcher got signal N.
  // Every process is gone when it returns.
  int Run();

  // Why the job failed ("" on success), e.g. "m0 trainer 1 (machine 0 at 127.0.0.1, trainer
  // local rank 1, rank 1; pid 4242) exited with status 3".
  const std::string& failure() const { return failure_; }

  // The failure as restarts judge it (launcher/restarts.h); empty `signature` on success.
  struct FailureKind {
    // What failed, without pids: the same failure in another run of the job reads the same
    // ("m0 trainer 1 exited with status 3: trainer.sh: error: ..."). A failure of the launcher
    // itself (a process it could not start, servers not ready) is its message.
    std::string signature;
    bool killed = false;       // a process killed by a signal, or stopped for silence (a hang)
    int exit_status = -1;      // a process that exited by itself: its status (2: a usage error)
    int launcher_signal = 0;   // the launcher itself got this signal (Ctrl-C, SIGTERM, hang-up)
  };
  const FailureKind& failure_kind() const { return failure_kind_; }

  // The memory the job's processes reported as they exited, per machine (printed at the end).
  const MemorySummary& memory() const { return memory_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kStartingServers, kWaitingForServers, kWaitingForPeers, kRunning };

  struct Child {
    const ProcessSpec* spec = nullptr;
    Process process;
    base::UniqueFd log_fd;
    std::unique_ptr<StreamRouter> out, err;
    bool ready = false;  // servers: printed the ready marker
    bool exited = false;
    bool heartbeating = false;           // has sent a heartbeat: watched from then on
    bool hung = false;                   // went silent, and is being stopped
    std::string last_error;              // its last stderr line mentioning an error
    std::optional<int64_t> oom_kills;    // the machine's out-of-memory kills when it started (local)
    Clock::time_point last_heartbeat;
  };

  bool StartProcess(const ProcessSpec& spec);
  void StartTrainers();
  // --machine-id: probes the other machines' servers not yet seen; true once all accept.
  bool PeersReady();
  // Waits up to `timeout` for output, signals or exits, and handles what came.
  void PollOnce(std::chrono::milliseconds timeout);
  void ReadOutput(Child& c, int fd);
  void CheckExits();
  void CheckHeartbeats();
  // Every 2 s: the memory of each machine's processes that run on this host, together.
  void SampleMemory();
  void OnExit(Child& c);
  // Servers of `c`'s machine (its partition) other than `c` that have not exited.
  int OtherLiveServers(const Child& c) const;
  void OnSignal(int sig);
  void Fail(const std::string& reason, int exit_code);  // a failure of the launcher's own
  void Fail(const std::string& reason, int exit_code, FailureKind kind);
  // SIGTERM (remote: hang-up) to every process; with `trainers_first`, to the trainers now and
  // to the servers once the trainers have exited (or the grace has passed).
  void BeginStop(bool trainers_first = false);
  void AskToStop(Child& c);
  void StopServersOnceTrainersAreGone();
  void Teardown();
  void Say(const std::string& message);
  std::string Who(const Child& c) const;
  int ReadyServers() const;
  std::vector<bool> peer_seen_;  // per plan_.peer_servers
  size_t next_peer_ = 0;         // where PeersReady() resumes

  JobPlan plan_;
  SupervisorOptions options_;
  SignalWatch* signals_ = nullptr;  // owned by Run()
  std::optional<GroupGuard> guard_;  // kills the job's groups if the launcher dies
  base::UniqueFd launcher_log_fd_;
  std::vector<std::unique_ptr<Child>> children_;
  Phase phase_ = Phase::kStartingServers;
  Clock::time_point start_time_;
  Clock::time_point ready_deadline_;
  Clock::time_point stop_deadline_;
  bool stopping_ = false;
  bool force_kill_ = false;  // a second signal while stopping: skip the grace period
  bool servers_wait_for_trainers_ = false;  // BeginStop(trainers_first): servers not yet asked
  size_t trainers_done_ = 0;
  int exit_code_ = 0;
  std::string failure_;
  MemorySummary memory_;
  // The trainers' bytes to and from other machines (their WireLines at exit), by machine: (ip, sum).
  std::map<int, std::pair<std::string, base::WireTotals>> wire_;
  Clock::time_point next_memory_sample_{};
  std::map<int, base::FullReadingPolicy> memory_policy_;  // by machine
  FailureKind failure_kind_;
};

}  // namespace fanout::launcher
