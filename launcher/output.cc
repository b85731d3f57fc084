#include "launcher/output.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>

#include <algorithm>
#include <cerrno>

#include "base/heartbeat.h"

namespace fanout::launcher {

void LineSplitter::Feed(std::string_view data, const LineFn& on_line) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    std::string_view head = data.substr(0, nl == std::string_view::npos ? data.size() : nl);
    if (pending_.size() + head.size() > max_line_) {
      // Cut: take just enough to fill one piece (take < head.size(), so no '\n' is lost).
      size_t take = max_line_ - pending_.size();
      pending_.append(head.substr(0, take));
      on_line(pending_);
      pending_.clear();
      data.remove_prefix(take);
      continue;
    }
    if (nl == std::string_view::npos) {
      pending_.append(head);
      return;
    }
    if (pending_.empty()) {
      on_line(head);
    } else {
      pending_.append(head);
      on_line(pending_);
      pending_.clear();
    }
    data.remove_prefix(nl + 1);
  }
}

void LineSplitter::Finish(const LineFn& on_line) {
  if (!pending_.empty()) on_line(pending_);
  pending_.clear();
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

StreamRouter::StreamRouter(std::string prefix, int console_fd, int log_fd,
                           LineSplitter::LineFn on_line, std::function<void()> on_heartbeat)
    : prefix_(std::move(prefix)), console_fd_(console_fd), log_fd_(log_fd),
      on_line_(std::move(on_line)), on_heartbeat_(std::move(on_heartbeat)) {}

void StreamRouter::Feed(std::string_view data) {
  constexpr std::string_view kMarker = base::kHeartbeatMarker;
  std::string text = std::move(carry_);
  carry_.clear();
  text.append(data);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(kMarker, pos);
    if (hit == std::string::npos) break;
    out.append(text, pos, hit - pos);
    if (on_heartbeat_) on_heartbeat_();
    pos = hit + kMarker.size();
  }
  // Keep back a tail that may be the start of a marker split across reads.
  size_t keep = 0;
  for (size_t k = std::min(kMarker.size() - 1, text.size() - pos); k > 0; --k) {
    if (std::string_view(text).substr(text.size() - k) == kMarker.substr(0, k)) {
      keep = k;
      break;
    }
  }
  out.append(text, pos, text.size() - pos - keep);
  carry_ = text.substr(text.size() - keep);
  splitter_.Feed(out, [this](std::string_view line) { Line(line); });
}

void StreamRouter::Finish() {
  if (!carry_.empty()) {
    std::string rest = std::move(carry_);
    carry_.clear();
    splitter_.Feed(rest, [this](std::string_view line) { Line(line); });
  }
  splitter_.Finish([this](std::string_view line) { Line(line); });
}

std::string TimestampNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char text[40];
  const size_t n = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(text + n, sizeof(text) - n, ".%03ldZ", ts.tv_nsec / 1000000);
  return text;
}

char LineLevel(std::string_view line) {
  auto mentions = [line](std::string_view word) {
    auto it = std::search(line.begin(), line.end(), word.begin(), word.end(),
                          [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
    return it != line.end();
  };
  if (mentions("error") || mentions("fatal") || mentions("terminate called")) return 'E';
  if (mentions("warning")) return 'W';
  return 'I';
}

std::string StampedLine(std::string_view line) {
  std::string text = TimestampNow();
  text.reserve(text.size() + line.size() + 4);
  text.push_back(' ');
  text.push_back(LineLevel(line));
  text.push_back(' ');
  text.append(line).push_back('\n');
  return text;
}

void StreamRouter::Line(std::string_view line) {
  // One write per line, so lines of different processes never interleave mid-line.
  if (console_fd_ >= 0) {
    std::string text;
    text.reserve(prefix_.size() + line.size() + 1);
    text.append(prefix_).append(line).push_back('\n');
    WriteAll(console_fd_, text);
  }
  if (log_fd_ >= 0) WriteAll(log_fd_, StampedLine(line));
  if (on_line_) on_line_(line);
}

}  // namespace fanout::launcher
