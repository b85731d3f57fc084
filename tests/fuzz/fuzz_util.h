// Helpers for the libFuzzer harnesses of tests/fuzz/ (header-only: each harness is one binary).
// Harnesses of readers that take a path write the input into a private folder that lives as
// long as the process (on /dev/shm when it exists, so a run costs no disk writes).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"

namespace fanout::fuzz {

// A folder private to this process, removed at exit.
inline const std::string& TempDir() {
  static const std::string* dir = [] {
    std::error_code ec;
    std::string base = std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : "/tmp";
    if (const char* t = std::getenv("TMPDIR")) base = t;
    std::string tmpl = base + "/fanout-fuzz-XXXXXX";
    FANOUT_CHECK(mkdtemp(tmpl.data()) != nullptr) << "mkdtemp " << tmpl;
    auto* d = new std::string(tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(TempDir(), ec);
    });
    return d;
  }();
  return *dir;
}

// Writes `data` to `path` (replacing it).
inline void WriteFile(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FANOUT_CHECK(fd >= 0) << "open " << path;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    FANOUT_CHECK(n > 0) << "write " << path;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

// Splits `data` into parts separated by the line "%%\n" (so seeds stay readable text files):
// "a\n%%\nb" -> {"a\n", "b"}.
inline std::vector<std::string_view> SplitParts(std::string_view data) {
  std::vector<std::string_view> parts;
  constexpr std::string_view kSep = "%%\n";
  size_t start = 0;
  while (true) {
    size_t at = data.find(kSep, start);
    // Only a separator at the start of a line counts.
    while (at != std::string_view::npos && at != 0 && data[at - 1] != '\n') {
      at = data.find(kSep, at + 1);
    }
    if (at == std::string_view::npos) {
      parts.push_back(data.substr(start));
      return parts;
    }
    parts.push_back(data.substr(start, at - start));
    start = at + kSep.size();
  }
}

}  // namespace fanout::fuzz
