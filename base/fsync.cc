#include "base/fsync.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::base {
namespace fs = std::filesystem;

absl::Status FsyncPath(const std::string& path) {
  // O_RDONLY is enough for fsync on Linux, for files and folders alike.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return absl::InternalError(StrCat("cannot open ", path, " to sync it: ", std::strerror(errno)));
  }
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (rc != 0) return absl::InternalError(StrCat("fsync ", path, ": ", std::strerror(err)));
  return absl::OkStatus();
}

absl::Status FsyncTree(const std::string& root) {
  std::error_code ec;
  std::vector<fs::path> dirs{fs::path(root)};
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& e = *it;
    if (e.is_symlink(ec)) continue;
    if (e.is_directory(ec)) {
      dirs.push_back(e.path());
    } else if (e.is_regular_file(ec)) {
      RETURN_IF_ERROR(FsyncPath(e.path().string()));
    }
  }
  if (ec) return absl::InternalError(StrCat("cannot list ", root, " to sync it: ", ec.message()));
  // Deepest first: a folder's entries are durable before the folder that names them.
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  for (const fs::path& d : dirs) RETURN_IF_ERROR(FsyncPath(d.string()));
  return absl::OkStatus();
}

absl::Status FsyncParent(const std::string& path) {
  fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "dir/" names dir
  fs::path parent = p.parent_path();
  return FsyncPath(parent.empty() ? std::string("/") : parent.string());
}

absl::Status WriteFileDurably(const std::string& path, std::string_view bytes) {
  const std::string tmp = StrCat(path, ".tmp");
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return absl::PermissionDeniedError(StrCat("cannot write ", tmp));
    }
  }
  if (absl::Status s = FsyncPath(tmp); !s.ok()) {
    std::filesystem::remove(tmp, ec);
    return s;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::PermissionDeniedError(StrCat("renaming ", tmp, " to ", path, ": ", ec.message()));
  }
  // Without this a power cut after the rename can leave `path` empty, the previous one gone.
  return FsyncParent(path);
}

}  // namespace fanout::base
