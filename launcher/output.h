// Output of the job's processes: each line goes to the console with a "[m1 server 0] " prefix
// and to the process's own log file stamped with the time it reached the launcher and a level:
// "2026-11-23T23:55:01.123Z I fanout-train: epoch 3 ...". One clock (the launch host's) stamps
// every process of every machine, so the logs of a job sort into one timeline.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace fanout::launcher {

// Splits a byte stream into lines. A line longer than `max_line` bytes is cut into pieces of
// that size, so a process that never prints a newline cannot grow the buffer without bound.
class LineSplitter {
 public:
  using LineFn = std::function<void(std::string_view line)>;  // without the '\n'

  explicit LineSplitter(size_t max_line = 64 * 1024) : max_line_(max_line) {}
  void Feed(std::string_view data, const LineFn& on_line);
  // Hands over a last line that had no '\n' (at end of file).
  void Finish(const LineFn& on_line);

 private:
  size_t max_line_;
  std::string pending_;
};

// "2026-11-23T23:55:01.123Z" for now (UTC, milliseconds).
std::string TimestampNow();
// The level of a log line from its words: 'E' when it mentions an error, 'W' a warning, else 'I'.
char LineLevel(std::string_view line);
// `line` as a log file holds it: "<timestamp> <level> <line>\n".
std::string StampedLine(std::string_view line);

// Writes all of `data` to `fd`, retrying short writes; false on error (e.g. a closed console,
// which must not stop the job).
bool WriteAll(int fd, std::string_view data);

// One output stream (stdout or stderr) of one process. Not thread-safe.
class StreamRouter {
 public:
  // `prefix` is written before every console line; `console_fd` and `log_fd` are borrowed
  // (-1 to skip); `on_line` (may be empty) sees every line, e.g. to spot a ready message.
  // Heartbeat markers (base/heartbeat.h) are cut out of the stream wherever they fall, also
  // across reads, and reported to `on_heartbeat` (may be empty) instead of written anywhere.
  StreamRouter(std::string prefix, int console_fd, int log_fd, LineSplitter::LineFn on_line = {},
               std::function<void()> on_heartbeat = {});
  void Feed(std::string_view data);
  void Finish();

 private:
  void Line(std::string_view line);

  std::string prefix_;
  int console_fd_, log_fd_;
  LineSplitter::LineFn on_line_;
  std::function<void()> on_heartbeat_;
  LineSplitter splitter_;
  std::string carry_;  // the end of the last read, when it may begin a heartbeat marker
};

}  // namespace fanout::launcher
