#include "launcher/restarts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "base/strings.h"
#include "launcher/job_plan.h"

namespace fanout::launcher {

using base::StrCat;

std::string WhyNoRestart(const RestartPolicy& policy, int restarts_done, const JobSupervisor::FailureKind& failure,
                         const JobSupervisor::FailureKind* previous) {
  if (failure.launcher_signal != 0) return "the launcher itself was stopped";
  if (failure.signature.empty()) return "the launcher could not run the job";
  if (restarts_done >= policy.max_restarts) {
    return policy.max_restarts == 0 ? "no --max-restarts"
                                    : StrCat("all ", policy.max_restarts, " restarts (--max-restarts) used");
  }
  if (failure.exit_status == 2) return "a usage error (exit status 2) fails the same way every time";
  if (previous != nullptr && !failure.killed && previous->signature == failure.signature) {
    return "it failed exactly as the run before it (same process, exit status and error), so it would again";
  }
  return "";
}

double RestartDelay(const RestartPolicy& policy, int n) {
  const double d = policy.backoff_s * std::pow(2.0, std::max(0, n - 1));
  return std::min(d, std::max(policy.backoff_s, policy.max_backoff_s));
}

namespace {

void Say(const std::string& message) { std::fprintf(stderr, "fanout-launch: %s\n", message.c_str()); }

}  // namespace

int RunWithRestarts(LaunchOptions o, JobPlan first, const SupervisorOptions& supervisor,
                    const std::function<void(double seconds)>& sleep) {
  const RestartPolicy policy{.max_restarts = o.max_restarts, .backoff_s = o.restart_backoff_s};
  std::optional<JobSupervisor::FailureKind> previous;
  o.job_id = first.job_id;  // every run is the same job
  for (int run = 0;; ++run) {
    o.restart_count = run;
    absl::StatusOr<JobPlan> plan = run == 0 ? absl::StatusOr<JobPlan>(std::move(first)) : PlanJob(o);
    if (!plan.ok()) {
      // The first plan was checked by the caller; a later one fails on what changed since (a
      // partition config deleted, a machine's address gone).
      Say(StrCat("error: cannot plan restart ", run, ": ", plan.status().message()));
      return 1;
    }
    SupervisorOptions so = supervisor;
    if (run > 0) so.log_dir = StrCat(supervisor.log_dir, "/restart-", run);
    JobSupervisor job(std::move(*plan), so);
    const int code = job.Run();
    if (code == 0) {
      if (run > 0) Say(StrCat("job ", o.job_id, " finished after ", run, " restart", run == 1 ? "" : "s"));
      return 0;
    }
    const JobSupervisor::FailureKind failure = job.failure_kind();
    const std::string why_not = WhyNoRestart(policy, run, failure, previous ? &*previous : nullptr);
    if (!why_not.empty()) {
      if (policy.max_restarts > 0) Say(StrCat("not restarting job ", o.job_id, ": ", why_not));
      return code;
    }
    const double delay = RestartDelay(policy, run + 1);
    Say(StrCat("restart ", run + 1, " of ", policy.max_restarts, " in ", delay, " s (FANOUT_RESTART_COUNT=", run + 1,
               ") after ", job.failure()));
    previous = failure;
    if (sleep) {
      sleep(delay);
    } else {
      absl::SleepFor(absl::Seconds(delay));
    }
  }
}

}  // namespace fanout::launcher
