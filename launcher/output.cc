#include "launcher/output.h"

#include <unistd.h>

#include <cerrno>

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
                           LineSplitter::LineFn on_line)
    : prefix_(std::move(prefix)), console_fd_(console_fd), log_fd_(log_fd),
      on_line_(std::move(on_line)) {}

void StreamRouter::Feed(std::string_view data) {
  splitter_.Feed(data, [this](std::string_view line) { Line(line); });
}

void StreamRouter::Finish() {
  splitter_.Finish([this](std::string_view line) { Line(line); });
}

void StreamRouter::Line(std::string_view line) {
  // One write per line, so lines of different processes never interleave mid-line.
  if (console_fd_ >= 0) {
    std::string text;
    text.reserve(prefix_.size() + line.size() + 1);
    text.append(prefix_).append(line).push_back('\n');
    WriteAll(console_fd_, text);
  }
  if (log_fd_ >= 0) {
    std::string text(line);
    text.push_back('\n');
    WriteAll(log_fd_, text);
  }
  if (on_line_) on_line_(line);
}

}  // namespace fanout::launcher
