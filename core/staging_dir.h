// Writes an output folder atomically: everything goes into a hidden temporary sibling of the
// destination, renamed into place by Commit(). If Commit() is never reached (error, exception,
// early return) the destructor deletes the temporary folder, so no half-written output remains
// that looks valid. (A SIGKILL leaves a `.<name>.tmp-*` folder, never `<name>` itself.)
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fanout::core {

// Not thread-safe. Move-only.
class StagingDir {
 public:
  // Fails if `dest` exists and `overwrite` is false, or if its parent cannot be written.
  static absl::StatusOr<StagingDir> Create(const std::string& dest, bool overwrite);
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&&) = delete;
  StagingDir(const StagingDir&) = delete;
  ~StagingDir();

  // The temporary folder to write into.
  const std::string& path() const { return tmp_; }
  const std::string& dest() const { return dest_; }
  // Renames the temporary folder to `dest`, replacing an old `dest` when overwriting.
  absl::Status Commit();

 private:
  StagingDir(std::string dest, std::string tmp, bool overwrite)
      : dest_(std::move(dest)), tmp_(std::move(tmp)), overwrite_(overwrite) {}
  std::string dest_;
  std::string tmp_;
  bool overwrite_ = false;
  bool done_ = false;
};

}  // namespace fanout::core
