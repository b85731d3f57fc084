// Writes an output folder atomically and safely: everything goes into a hidden temporary
// sibling of the destination, made durable (every file and folder fsync'd) and renamed into place
// by Commit(). If Commit() is never reached (error, exception, early return) the destructor
// deletes the temporary folder, so no half-written output remains that looks valid.
//
// Safety rules (issue 11):
// - A published folder carries a marker file, kOutputMarker, naming the tool that wrote it and
//   every top-level entry it wrote. `overwrite` replaces only such a folder, written by the same
//   tool and holding nothing else; any other folder (a dataset, a home directory, an output a
//   user has added files to) is refused with an error naming it.
// - The destination may never be, contain, or (when replacing it) be inside any of
//   StagingOptions::inputs, so `--out` pointing at the input cannot delete it.
// - The temporary folder is named `.<name>.tmp-<pid>-<start>-<rand>@<host>`, with the pid and
//   kernel start time of the process writing it. A SIGKILL leaves it behind; the next Create()
//   in the same parent folder removes every such folder whose process is provably gone (same
//   host, and no process with that pid and start time). Folders of live runs, of other hosts,
//   or with any other name are never touched.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fanout::base {

// The marker file at the top of every folder a StagingDir publishes.
inline constexpr char kOutputMarker[] = ".fanout-output.json";

struct StagingOptions {
  std::string tool;        // required: the program writing; recorded in the marker
  bool overwrite = false;  // replace an existing destination that `tool` wrote
  std::vector<std::string>
      inputs;  // files/folders the destination must not be, contain or replace inside
};

// Not thread-safe. Move-only.
class StagingDir {
 public:
  // Fails if `dest` exists and may not be replaced (see above), or if its parent cannot be
  // written. Removes stale temporary folders of dead runs in dest's parent first.
  static absl::StatusOr<StagingDir> Create(const std::string& dest, const StagingOptions& options);
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&&) = delete;
  StagingDir(const StagingDir&) = delete;
  ~StagingDir();

  // The temporary folder to write into.
  const std::string& path() const { return tmp_; }
  const std::string& dest() const { return dest_; }
  // Writes the marker, fsyncs the temporary folder's files and folders, renames it to `dest`
  // (atomically exchanging it with an old `dest` when overwriting, so `dest` always exists in
  // one complete version), fsyncs the parent, then deletes the old version.
  absl::Status Commit();

 private:
  StagingDir(std::string dest, std::string tmp, StagingOptions options)
      : dest_(std::move(dest)), tmp_(std::move(tmp)), options_(std::move(options)) {}
  std::string dest_;
  std::string tmp_;
  StagingOptions options_;
  bool done_ = false;
};

// Checks that `dest` may be replaced by an output of `tool` under `options` (exposed for tests).
absl::Status CheckReplaceable(const std::string& dest, const StagingOptions& options);

// Removes the temporary folders in `parent` left by StagingDirs of dead processes on this host;
// returns how many were removed (exposed for tests).
int RemoveStaleStagingDirs(const std::string& parent);

}  // namespace fanout::base
