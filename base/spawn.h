// The one way fanout starts another program: fork + exec with the child's descriptors, process
// group, parent-death signal and signal state set up between the two, and every failure up to the
// exec (no such program, a working folder that cannot be entered) reported back to the caller as a
// Status rather than as the child's exit status. The launcher's owned processes
// (launcher/process.h), the trainer's sampler processes (sampler/loader.cc) and the tests' helpers
// all start children here, so a fix to how a child is set up lands once.
//
// Owning the child afterwards (waiting, signalling, reaping) is the caller's: a launcher Process,
// a sampler loader and a test each do it differently on purpose.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::base {

// What the child's descriptor `target` is set to: a descriptor of the caller's (`from`), or a
// file the caller opens for it (`path` with `flags`; created 0644). Exactly one of the two.
struct ChildFd {
  int target = -1;
  int from = -1;
  std::string path;
  int flags = O_RDONLY;

  static ChildFd Dup(int target, int from) { return {target, from, "", 0}; }
  static ChildFd Open(int target, std::string path, int flags) { return {target, -1, std::move(path), flags}; }
  static ChildFd DevNull(int target) { return Open(target, "/dev/null", O_RDWR); }
};

struct ChildSpec {
  std::vector<std::string> argv;                // argv[0] is looked up in PATH when it has no '/'
  std::optional<std::vector<std::string>> env;  // the whole environment ("NAME=VALUE"); unset: ours
  std::string cwd;                              // "" = ours
  // Descriptors 0-2 not named here are inherited; every other descriptor the child would get is
  // closed (nothing of the caller's leaks into it, close-on-exec or not).
  std::vector<ChildFd> fds;
  bool new_process_group = false;  // the child leads a group of its own (pgid = pid)
  // SIGKILL when the spawning *thread* exits (PR_SET_PDEATHSIG), and exit at once if the parent
  // is already gone; spawn from a thread that lives as long as the child should.
  bool die_with_parent = true;
  // Default dispositions and an empty signal mask in the child, whatever the caller blocked or
  // ignored (an ignored SIGPIPE or a blocked SIGTERM would otherwise survive the exec).
  bool reset_signals = true;
};

// Forks and execs `spec`; returns the child's pid once the exec has succeeded. On failure nothing
// is left behind: the child, if one was forked, has been reaped, and the error names the stage and
// the program or folder ("cannot run X: No such file or directory").
absl::StatusOr<pid_t> SpawnChild(const ChildSpec& spec);

// Waits up to `timeout` for process `pid` (a child or not) to exit, on a pidfd: notified, not
// polled; it neither reaps nor signals. Returns 1 once it has exited (or is gone), 0 on time-out,
// and -1 when this kernel has no pidfd (before 5.3), errno set: the caller falls back.
int WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace fanout::base
