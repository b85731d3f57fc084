// Signals as readable events: the listed signals are blocked in the calling thread and read
// from a signalfd, so the supervisor's poll() loop sees them next to the processes' output.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <optional>

#include "absl/status/statusor.h"

namespace fanout::launcher {

class SignalWatch {
 public:
  // Blocks `signals` in the calling thread and opens a signalfd for them.
  static absl::StatusOr<SignalWatch> Start(std::initializer_list<int> signals);
  SignalWatch(SignalWatch&& other) noexcept;
  SignalWatch& operator=(SignalWatch&&) = delete;
  SignalWatch(const SignalWatch&) = delete;
  // Discards what is still pending of the watched signals, restores the old mask, closes the fd.
  ~SignalWatch();

  int fd() const { return fd_; }
  // The next pending signal number, without blocking; nullopt when none.
  std::optional<int> Next();

 private:
  SignalWatch() = default;
  int fd_ = -1;
  sigset_t watched_{};
  sigset_t old_mask_{};
};

}  // namespace fanout::launcher
