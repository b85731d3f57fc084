#include "launcher/signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/strings.h"

namespace fanout::launcher {

absl::StatusOr<SignalWatch> SignalWatch::Start(std::initializer_list<int> signals) {
  SignalWatch w;
  sigemptyset(&w.watched_);
  for (int s : signals) sigaddset(&w.watched_, s);
  if (pthread_sigmask(SIG_BLOCK, &w.watched_, &w.old_mask_) != 0) {
    return absl::InternalError("cannot block signals");
  }
  w.fd_ = signalfd(-1, &w.watched_, SFD_NONBLOCK | SFD_CLOEXEC);
  if (w.fd_ < 0) {
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &w.old_mask_, nullptr);
    return absl::InternalError(base::StrCat("signalfd: ", std::strerror(e)));
  }
  return w;
}

SignalWatch::SignalWatch(SignalWatch&& other) noexcept
    : fd_(other.fd_), watched_(other.watched_), old_mask_(other.old_mask_) {
  other.fd_ = -1;
}

SignalWatch::~SignalWatch() {
  if (fd_ < 0) return;
  close(fd_);
  // Consume what arrived since the last read, so that unblocking does not deliver it (a late
  // SIGCHLD is harmless, but a second Ctrl-C would kill the launcher on its way out).
  timespec zero{0, 0};
  while (sigtimedwait(&watched_, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

std::optional<int> SignalWatch::Next() {
  signalfd_siginfo info;
  ssize_t n;
  do {
    n = read(fd_, &info, sizeof(info));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(info))) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

}  // namespace fanout::launcher
