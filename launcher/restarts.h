// fanout-launch --max-restarts N (torchrun's name): after a failure the job is stopped as always,
// then planned and started again, up to N times, after a back-off that doubles each time. Each
// run's processes see FANOUT_RESTART_COUNT (0 for the first), so that trainers with checkpoints
// resume from the newest one every rank has (fanout-train; docs/launcher.md, "Restarts").
//
// A failure that would only repeat is not retried: a usage error (exit status 2, every fanout
// tool's status for bad flags), the launcher itself stopped by a signal, and a failure that reads
// exactly like the one before it (same process, same exit status, same last error line: a corrupt
// file, a missing program) end the job with it. A process killed by a signal or gone silent (a
// preempted machine, the OOM killer, a hang) is retried up to N times however often it repeats.
#pragma once

#include <functional>
#include <string>

#include "launcher/job_plan.h"
#include "launcher/launch_options.h"
#include "launcher/supervisor.h"

namespace fanout::launcher {

struct RestartPolicy {
  int max_restarts = 0;
  double backoff_s = 5;        // before the first restart
  double max_backoff_s = 300;  // the doubling stops here
};

// "" when a run that failed with `failure` is to be restarted, `restarts_done` restarts into the
// job (`previous`: how the run before it failed, nullptr for the first run); else why not.
std::string WhyNoRestart(const RestartPolicy& policy, int restarts_done, const JobSupervisor::FailureKind& failure,
                         const JobSupervisor::FailureKind* previous);

// Seconds to wait before restart number `n` (1 for the first): backoff_s * 2^(n-1), at most
// max_backoff_s.
double RestartDelay(const RestartPolicy& policy, int n);

// Runs the job (`first`: its plan for run 0, PlanJob(o)'s), restarting it after failures as
// `o.max_restarts` and `o.restart_backoff_s` say; a restart plans it again (FANOUT_RESTART_COUNT).
// Run k > 0 writes its logs to `<log_dir>/restart-k`. Returns the launcher's exit code: 0 once a
// run succeeds, else the last run's (JobSupervisor::Run). `sleep` waits between runs (tests pass
// their own).
int RunWithRestarts(LaunchOptions o, JobPlan first, const SupervisorOptions& supervisor,
                    const std::function<void(double seconds)>& sleep = nullptr);

}  // namespace fanout::launcher
