// A safety net for a launcher that dies without stopping its job (SIGKILL, a crash, the OOM
// killer). PR_SET_PDEATHSIG kills each direct child then, but not what a child started itself
// (a trainer's samplers). The guard is a small helper process, in its own process group, that
// the launcher tells about every process group it starts. If its pipe from the launcher closes
// without a Disarm() first, the launcher died: the guard SIGKILLs every group it was told about
// and exits. On a normal end the launcher has already stopped everything and disarms it.
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace fanout::launcher {

class GroupGuard {
 public:
  static absl::StatusOr<GroupGuard> Start();
  GroupGuard(GroupGuard&& other) noexcept;
  GroupGuard& operator=(GroupGuard&&) = delete;
  GroupGuard(const GroupGuard&) = delete;
  // Closes the pipe and reaps the guard. Without Disarm() first, the guard kills the groups.
  ~GroupGuard();

  pid_t pid() const { return pid_; }
  // The guard will kill process group `pgid` if the launcher dies.
  void Add(pid_t pgid);
  // The job has been stopped: the guard exits without killing anything.
  void Disarm();

 private:
  GroupGuard() = default;
  pid_t pid_ = -1;
  base::UniqueFd fd_;  // write end of the pipe
};

}  // namespace fanout::launcher
