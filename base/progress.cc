#include "base/progress.h"

#include <unistd.h>

#include <atomic>
#include <cmath>

#include "base/cli.h"
#include "base/strings.h"

namespace fanout::base {

namespace {
std::atomic<ProgressMode> g_mode{ProgressMode::kAuto};
}  // namespace

void SetProgressMode(ProgressMode mode) { g_mode.store(mode); }
ProgressMode GetProgressMode() { return g_mode.load(); }

bool ProgressEnabled(ProgressMode mode) {
  return mode == ProgressMode::kOn || (mode == ProgressMode::kAuto && isatty(STDERR_FILENO) == 1);
}

void AddProgressFlag(ArgParser& args, std::string* text) {
  if (text->empty()) *text = "auto";
  args.AddChoice("progress", text, {"auto", "on", "off"},
                 "progress lines with rate and ETA: auto = when stderr is a terminal (a job's log is not), "
                 "on = also into a log (a line every 10 s)");
}

ProgressMode ApplyProgressFlag(const std::string& text, bool quiet) {
  ProgressMode mode = ProgressMode::kAuto;
  ParseProgressMode(text, &mode);
  if (quiet) mode = ProgressMode::kOff;
  SetProgressMode(mode);
  return mode;
}

bool ParseProgressMode(const std::string& text, ProgressMode* mode) {
  if (text == "auto") *mode = ProgressMode::kAuto;
  else if (text == "on") *mode = ProgressMode::kOn;
  else if (text == "off") *mode = ProgressMode::kOff;
  else return false;
  return true;
}

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return text;
}

ProgressMeter::ProgressMeter(std::string tool, std::string what, int64_t total, std::string unit, ProgressMode mode,
                             double quiet_seconds)
    : tool_(std::move(tool)), what_(std::move(what)), unit_(std::move(unit)), total_(total), quiet_(quiet_seconds),
      start_(Clock::now()), last_(start_) {
  tty_ = isatty(STDERR_FILENO) == 1;
  on_ = ProgressEnabled(mode);
}

namespace {
// A count as progress shows it: "4000", or "12.3M" from ten million on.
std::string Count(double n) {
  char text[32];
  std::snprintf(text, sizeof(text), n >= 1e7 ? "%.1fM" : n >= 100 ? "%.0f" : "%.1f", n >= 1e7 ? n / 1e6 : n);
  return text;
}
}  // namespace

std::string ProgressMeter::Text(int64_t done, double seconds) const {
  const double rate = seconds > 0 ? done / seconds : 0;
  const std::string unit = unit_.empty() ? "" : " " + unit_;
  std::string text = StrCat(tool_, ": ", what_, " ", done >= 10000000 ? Count(static_cast<double>(done)) : StrCat(done));
  if (total_ > 0) {
    text += StrCat("/", total_ >= 10000000 ? Count(static_cast<double>(total_)) : StrCat(total_), unit, " (",
                   static_cast<int>(100.0 * done / total_), "%)");
  } else {
    text += unit;
  }
  text += StrCat(", ", Count(rate), unit.empty() ? "" : unit, "/s");
  if (total_ > 0 && done > 0 && done < total_) text += StrCat(", ETA ", FormatDuration((total_ - done) / rate));
  return text;
}

void ProgressMeter::Set(int64_t done) {
  if (!on_) return;
  const auto now = Clock::now();
  const double since_start = std::chrono::duration<double>(now - start_).count();
  if (since_start < quiet_) return;
  if (std::chrono::duration<double>(now - last_).count() < (tty_ ? 0.5 : 10.0) && drawn_) return;
  last_ = now;
  const std::string text = Text(done, since_start);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressMeter::Clear() {
  if (tty_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

void ProgressMeter::Finish() {
  Clear();
  on_ = false;
}

ElapsedTicker::ElapsedTicker(std::string tool, std::string what, double every_seconds) {
  thread_ = std::thread([this, tool = std::move(tool), what = std::move(what), every_seconds] {
    const auto start = std::chrono::steady_clock::now();
    absl::MutexLock lock(&mu_);
    while (true) {
      const absl::Duration period = absl::Seconds(every_seconds);
      if (mu_.AwaitWithTimeout(absl::Condition(&done_), period)) return;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "%s: %s: %s so far\n", tool.c_str(), what.c_str(), FormatDuration(s).c_str());
      ++ticks_;
    }
  });
}

int ElapsedTicker::ticks() const {
  absl::MutexLock lock(&mu_);
  return ticks_;
}

ElapsedTicker::~ElapsedTicker() { Stop(); }

void ElapsedTicker::Stop() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace fanout::base
