// Helpers shared by the launcher's tests: processes that may not be our children, read with
// deadlines rather than sleeps.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace fanout::launcher::testing {

// True while `pid` is a process that has not exited (a zombie counts as gone: it runs nothing,
// and an orphan's zombie may wait for a reaper that never comes).
bool IsRunning(pid_t pid);

// Waits up to `timeout` for `pid` to be gone (on a pidfd: notified, not polled). True if gone.
bool WaitGone(pid_t pid, std::chrono::milliseconds timeout);

// Reads `fd` until `needle` has appeared in *text (everything read is appended), end of file or
// `timeout`. True when found.
bool ReadUntil(int fd, const std::string& needle, std::chrono::milliseconds timeout,
               std::string* text);

// One read of what `fd` has, waiting until `deadline`: the bytes appended to *text, 0 at end of
// file, -1 on timeout.
ssize_t ReadMore(int fd, std::chrono::steady_clock::time_point deadline, std::string* text);

// Reads `fd` to end of file or `timeout`; true at end of file.
bool ReadToEnd(int fd, std::chrono::milliseconds timeout, std::string* text);

// The integers N in every "<word> N" of `text` (e.g. word "pid" in "started m0 server 0 pid 42").
std::vector<pid_t> NumbersAfter(const std::string& text, const std::string& word);

std::string ReadFile(const std::string& path);

}  // namespace fanout::launcher::testing
