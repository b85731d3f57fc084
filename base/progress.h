// Progress on stderr for every tool: one meter with rate and ETA (ProgressMeter), its per-item
// form for loops over millions of rows (Progress), and a ticker for a phase that cannot report
// (ElapsedTicker). Each prints only once a phase has run a little while, so quick runs stay
// silent, and only where the progress mode (--progress) allows.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace fanout::base {

// Whether progress meters print: kAuto when stderr is a terminal (a job's log is not one),
// kOn always (periodic whole lines in a log), kOff never. --progress auto|on|off.
enum class ProgressMode { kAuto, kOn, kOff };
bool ParseProgressMode(const std::string& text, ProgressMode* mode);  // false for other text
// The process-wide mode of the meters that do not name one (base::Progress, ElapsedTicker users);
// a tool sets it from --progress (and --quiet). Default kAuto.
void SetProgressMode(ProgressMode mode);
ProgressMode GetProgressMode();
// Whether `mode` prints here: kAuto resolves to "stderr is a terminal".
bool ProgressEnabled(ProgressMode mode);

class ArgParser;
// Every tool's --progress auto|on|off, bound to *text (default "auto").
void AddProgressFlag(ArgParser& args, std::string* text);
// After parsing: sets and returns the process-wide mode from *text; `quiet` (a tool's --quiet)
// turns it off.
ProgressMode ApplyProgressFlag(const std::string& text, bool quiet = false);

// Progress of one counted phase, with rate and ETA: "fanout-train: epoch 3 1200/4000 steps
// (30%), 45.2 steps/s, ETA 1m02s". Silent for the first `quiet_seconds` (quick phases print
// nothing). On a terminal the line is redrawn in place at most every 0.5 s and erased by
// Finish(); otherwise (kOn into a log) a whole line every 10 s. Not thread-safe.
class ProgressMeter {
 public:
  ProgressMeter(std::string tool, std::string what, int64_t total, std::string unit, ProgressMode mode,
                double quiet_seconds = 2.0);
  ~ProgressMeter() { Finish(); }
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void Set(int64_t done);
  // Erases the terminal line so that another line can be printed; the next Set redraws it.
  void Clear();
  void Finish();  // Clear(), and prints no more; idempotent
  // The text for `done` after `seconds` (exposed for tests).
  std::string Text(int64_t done, double seconds) const;

 private:
  using Clock = std::chrono::steady_clock;
  std::string tool_, what_, unit_;
  int64_t total_;
  bool on_ = false, tty_ = false, drawn_ = false;
  double quiet_;
  Clock::time_point start_, last_;
};

// "1m02s", "45s", "2h05m".
std::string FormatDuration(double seconds);

// A ProgressMeter for loops over millions of items ("fanout-partition: reading edges.csv.gz
// 12.0M/61.9M (19%), 1.2M/s, ETA 42s"), in the process's progress mode (SetProgressMode).
class Progress {
 public:
  Progress(std::string tool, std::string what, int64_t total, double quiet_seconds = 3.0)
      : meter_(std::move(tool), std::move(what), total, "", GetProgressMode(), quiet_seconds) {}

  // Cheap enough to call per item: looks at the clock every 64K calls.
  void Update(int64_t done) {
    if ((++calls_ & 0xffff) == 0) meter_.Set(done);
  }
  void Report(int64_t done) { meter_.Set(done); }

 private:
  ProgressMeter meter_;
  uint64_t calls_ = 0;
};

// For a phase that reports nothing while it runs (METIS): a thread that prints "<tool>: <what>:
// 20 s so far" every `every_seconds` until destroyed, from the first period on.
class ElapsedTicker {
 public:
  ElapsedTicker(std::string tool, std::string what, double every_seconds = 15.0);
  ~ElapsedTicker();
  ElapsedTicker(const ElapsedTicker&) = delete;
  ElapsedTicker& operator=(const ElapsedTicker&) = delete;

  // Stops the ticker (it prints nothing after); the destructor does it too. Idempotent.
  void Stop();
  // Lines printed so far.
  int ticks() const;

 private:
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  int ticks_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace fanout::base
