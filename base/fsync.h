// Durability before publishing: a file or folder that is made visible by a rename must have its
// bytes on disk first, or a power cut after the rename can leave a published name pointing at
// empty or torn files. The pattern is: write into a temporary name, FsyncTree (or FsyncPath) it,
// rename, then FsyncPath the parent folder so the rename itself is durable.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fanout::base {

// fsync()s one file or folder. Errors name the path.
absl::Status FsyncPath(const std::string& path);

// fsync()s every regular file under `root`, then every folder from the deepest up to `root`
// itself, so each folder is synced after its entries. Symbolic links are not followed.
absl::Status FsyncTree(const std::string& root);

// fsync()s the folder holding `path` (after a rename or create of `path`).
absl::Status FsyncParent(const std::string& path);

// The whole pattern for one file: writes `bytes` to `path`.tmp, fsyncs it, renames it over
// `path` and fsyncs the folder. A reader sees the old file or the new one, never a torn one.
// Errors name the path; the temporary file is removed on failure.
absl::Status WriteFileDurably(const std::string& path, std::string_view bytes);

}  // namespace fanout::base
