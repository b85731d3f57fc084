#include "tests/launcher/launcher_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <regex>

#include "base/spawn.h"
#include "gtest/gtest.h"

extern char** environ;

namespace fanout::launcher::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool IsRunning(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  if (stat.empty()) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

bool WaitGone(pid_t pid, milliseconds timeout) {
  return base::WaitForExit(pid, timeout) == 1 || !IsRunning(pid);
}

ssize_t ReadMore(int fd, Clock::time_point deadline, std::string* text) {
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return -1;
    pollfd p = {fd, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return -1;
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return 0;
    text->append(buf, static_cast<size_t>(n));
    return n;
  }
}

bool ReadUntil(int fd, const std::string& needle, milliseconds timeout, std::string* text) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (text->find(needle) == std::string::npos) {
    if (ReadMore(fd, deadline, text) <= 0) return text->find(needle) != std::string::npos;
  }
  return true;
}

bool ReadToEnd(int fd, milliseconds timeout, std::string* text) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    ssize_t n = ReadMore(fd, deadline, text);
    if (n == 0) return true;
    if (n < 0) return false;
  }
}

std::vector<pid_t> NumbersAfter(const std::string& text, const std::string& word) {
  std::vector<pid_t> out;
  std::regex re("\\b" + word + " ([0-9]+)");
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    out.push_back(static_cast<pid_t>(std::stol((*it)[1].str())));
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

std::string ReadLog(const std::string& path) {
  const std::string text = ReadFile(path);
  static const std::regex stamp("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z [IWE] ");
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string line = text.substr(at, end - at);
    std::smatch m;
    if (std::regex_search(line, m, stamp)) {
      out += line.substr(m.length(0));
    } else {
      ADD_FAILURE() << path << ": a line without a timestamp and level: " << line;
      out += line;
    }
    at = end;
  }
  return out;
}

ChildRun::ChildRun(const std::vector<std::string>& args, const std::string& cwd,
                   const std::vector<std::string>& extra_env) {
  int p[2];
  EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  absl::StatusOr<pid_t> pid = base::SpawnChild({.argv = args,
                                                .env = env,
                                                .cwd = cwd,
                                                .fds = {base::ChildFd::Open(0, "/dev/null", O_RDONLY),
                                                        base::ChildFd::Dup(1, p[1]), base::ChildFd::Dup(2, p[1])}});
  EXPECT_TRUE(pid.ok()) << pid.status();
  pid_ = pid.value_or(-1);
  close(p[1]);
  fd_ = p[0];
}

ChildRun::~ChildRun() {
  if (pid_ > 0 && !exit_code_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  close(fd_);
}

bool ChildRun::WaitFor(const std::string& needle, int count, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Count(needle) < count) {
    if (ReadMore(fd_, deadline, &out_) <= 0) return false;  // timeout or end of output
  }
  return true;
}

std::optional<int> ChildRun::Finish(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  if (!ReadToEnd(fd_, timeout, &out_)) return std::nullopt;
  if (!WaitGone(pid_, timeout)) return std::nullopt;
  int st = 0;
  waitpid(pid_, &st, 0);
  exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return exit_code_;
}

int ChildRun::Count(const std::string& needle) const {
  int n = 0;
  for (size_t at = out_.find(needle); at != std::string::npos; at = out_.find(needle, at + 1)) ++n;
  return n;
}

void ExpectSameMatches(const std::string& uninterrupted, const std::string& resumed,
                       const std::vector<std::regex>& patterns) {
  for (const std::regex& re : patterns) {
    std::smatch a, b;
    ASSERT_TRUE(std::regex_search(uninterrupted, a, re)) << uninterrupted;
    ASSERT_TRUE(std::regex_search(resumed, b, re)) << resumed;
    EXPECT_EQ(a.str(), b.str());
  }
}

}  // namespace fanout::launcher::testing
