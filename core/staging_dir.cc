#include "core/staging_dir.h"

#include <unistd.h>

#include <filesystem>
#include <random>

#include "core/strings.h"

namespace fanout::core {
namespace fs = std::filesystem;

absl::StatusOr<StagingDir> StagingDir::Create(const std::string& dest, bool overwrite) {
  if (dest.empty()) return absl::InvalidArgumentError("output folder is empty");
  fs::path d = fs::absolute(fs::path(dest)).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();  // "out/" -> "out"
  std::error_code ec;
  if (fs::exists(d, ec) && !overwrite) {
    return absl::AlreadyExistsError(
        StrCat(d.string(), " already exists; choose another folder or pass --overwrite"));
  }
  fs::create_directories(d.parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        StrCat("cannot create ", d.parent_path().string(), ": ", ec.message()));
  }
  std::random_device rd;
  fs::path tmp = d.parent_path() /
                 StrCat(".", d.filename().string(), ".tmp-", ::getpid(), "-", rd() % 100000);
  fs::create_directory(tmp, ec);
  if (ec) return absl::PermissionDeniedError(StrCat("cannot create ", tmp.string(), ": ", ec.message()));
  return StagingDir(d.string(), tmp.string(), overwrite);
}

StagingDir::StagingDir(StagingDir&& o) noexcept
    : dest_(std::move(o.dest_)), tmp_(std::move(o.tmp_)), overwrite_(o.overwrite_), done_(o.done_) {
  o.done_ = true;
}

StagingDir::~StagingDir() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

absl::Status StagingDir::Commit() {
  std::error_code ec;
  fs::path old;
  if (fs::exists(dest_, ec)) {
    if (!overwrite_) return absl::AlreadyExistsError(StrCat(dest_, " appeared while writing"));
    old = fs::path(tmp_ + ".old");
    fs::rename(dest_, old, ec);
    if (ec) return absl::InternalError(StrCat("cannot move old ", dest_, " aside: ", ec.message()));
  }
  fs::rename(tmp_, dest_, ec);
  if (ec) return absl::InternalError(StrCat("cannot rename ", tmp_, " to ", dest_, ": ", ec.message()));
  done_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
  return absl::OkStatus();
}

}  // namespace fanout::core
