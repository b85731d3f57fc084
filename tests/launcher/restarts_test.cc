// fanout-launch --max-restarts: which failures are run again, and the back-off. The loop itself,
// with real servers and trainers, is in launch_cli_test.
#include "launcher/restarts.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace fanout::launcher {
namespace {

using Kind = JobSupervisor::FailureKind;

TEST(Restarts, AFailureIsRestartedUntilTheRestartsAreUsed) {
  const RestartPolicy policy{.max_restarts = 2};
  const Kind failed{.signature = "m0 trainer 1 exited with status 1: error: peer gone", .exit_status = 1};
  EXPECT_EQ(WhyNoRestart(policy, 0, failed, nullptr), "");
  const Kind other{.signature = "m1 server 0 exited with status 1: out of memory", .exit_status = 1};
  EXPECT_EQ(WhyNoRestart(policy, 1, failed, &other), "");
  EXPECT_EQ(WhyNoRestart(policy, 2, failed, &other), "all 2 restarts (--max-restarts) used");
  EXPECT_EQ(WhyNoRestart(RestartPolicy{}, 0, failed, nullptr), "no --max-restarts");
}

TEST(Restarts, WhatWouldOnlyRepeatIsNotRetried) {
  const RestartPolicy policy{.max_restarts = 10};
  // Bad flags: every fanout tool exits 2 on a usage error.
  const Kind usage{.signature = "m0 trainer 0 exited with status 2: fanout-train: error: --hidden", .exit_status = 2};
  EXPECT_EQ(WhyNoRestart(policy, 0, usage, nullptr), "a usage error (exit status 2) fails the same way every time");
  // The same process failing the same way twice in a row: a corrupt file, a missing program.
  const Kind corrupt{.signature = "m1 trainer 0 exited with status 1: cannot read part1/feat.npy", .exit_status = 1};
  EXPECT_EQ(WhyNoRestart(policy, 0, corrupt, nullptr), "");
  EXPECT_NE(WhyNoRestart(policy, 1, corrupt, &corrupt), "");
  // Ctrl-C or SIGTERM to the launcher: the user (or the cluster) stops the job.
  const Kind stopped{.signature = "stopped by SIGTERM", .launcher_signal = SIGTERM};
  EXPECT_EQ(WhyNoRestart(policy, 0, stopped, nullptr), "the launcher itself was stopped");
  // The launcher could not run the job at all (no log folder, no guard process).
  EXPECT_EQ(WhyNoRestart(policy, 0, Kind{}, nullptr), "the launcher could not run the job");
}

TEST(Restarts, KilledProcessesAreRetriedHoweverOftenTheyRepeat) {
  // Preemption, the OOM killer, a hang: the same signature each time, and worth another run.
  const RestartPolicy policy{.max_restarts = 5};
  const Kind killed{.signature = "m1 trainer 0 killed by signal 9 (SIGKILL)", .killed = true};
  for (int done = 1; done < 5; ++done) EXPECT_EQ(WhyNoRestart(policy, done, killed, &killed), "") << done;
  EXPECT_NE(WhyNoRestart(policy, 5, killed, &killed), "");
}

TEST(Restarts, TheBackOffDoublesUpToItsCap) {
  const RestartPolicy policy{.max_restarts = 10, .backoff_s = 5, .max_backoff_s = 300};
  EXPECT_EQ(RestartDelay(policy, 1), 5);
  EXPECT_EQ(RestartDelay(policy, 2), 10);
  EXPECT_EQ(RestartDelay(policy, 4), 40);
  EXPECT_EQ(RestartDelay(policy, 7), 300);
  EXPECT_EQ(RestartDelay(policy, 60), 300);
  EXPECT_EQ(RestartDelay(RestartPolicy{.backoff_s = 0}, 3), 0);
}

}  // namespace
}  // namespace fanout::launcher
