#include "launcher/group_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "base/strings.h"
#include "launcher/output.h"

namespace fanout::launcher {
namespace {

constexpr int32_t kDisarm = 0;

[[noreturn]] void GuardMain(int fd) {
  // Own group, so that a Ctrl-C meant for the launcher does not reach it; deaf to the usual
  // stop signals, so that it is still there when it is needed.
  setpgid(0, 0);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Hold none of the launcher's descriptors: a reader of the launcher's output must see end of
  // file when the launcher exits, not when the guard does.
  int devnull = open("/dev/null", O_RDWR);
  for (int i = 0; i < 3; ++i) dup2(devnull, i);
  if (fd > 3) close_range(3, fd - 1, 0);
  close_range(fd + 1, ~0U, 0);
  // Forked from a possibly multi-threaded launcher without exec: no allocation from here on
  // (another thread may have held malloc's lock at the fork), so the groups go in static storage.
  static pid_t groups[1 << 16];
  size_t count = 0;
  int32_t msg;
  for (;;) {
    ssize_t n = read(fd, &msg, sizeof(msg));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(msg))) break;  // end of file: the launcher is gone
    if (msg == kDisarm) _exit(0);
    if (count < std::size(groups)) groups[count++] = static_cast<pid_t>(msg);
  }
  for (size_t i = 0; i < count; ++i) kill(-groups[i], SIGKILL);
  _exit(0);
}

}  // namespace

absl::StatusOr<GroupGuard> GroupGuard::Start() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(base::StrCat("pipe: ", std::strerror(errno)));
  }
  base::UniqueFd read_end(p[0]), write_end(p[1]);
  pid_t pid = fork();
  if (pid < 0) return absl::ResourceExhaustedError(base::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    write_end.reset();
    GuardMain(read_end.get());
  }
  read_end.reset();
  GroupGuard g;
  g.pid_ = pid;
  g.fd_ = std::move(write_end);
  return g;
}

GroupGuard::GroupGuard(GroupGuard&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::move(other.fd_)) {}

GroupGuard::~GroupGuard() {
  fd_.reset();  // first: the guard exits when it sees the pipe close, and only then can it be reaped
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

void GroupGuard::Add(pid_t pgid) {
  int32_t msg = static_cast<int32_t>(pgid);
  if (fd_.valid() && pgid > 0) WriteAll(fd_.get(), std::string_view(reinterpret_cast<char*>(&msg), sizeof(msg)));
}

void GroupGuard::Disarm() {
  int32_t msg = kDisarm;
  if (fd_.valid()) WriteAll(fd_.get(), std::string_view(reinterpret_cast<char*>(&msg), sizeof(msg)));
}

}  // namespace fanout::launcher
