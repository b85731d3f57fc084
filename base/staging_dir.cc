#include "base/staging_dir.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2 (glibc >= 2.28)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "base/check.h"
#include "base/fsync.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"

namespace fanout::base {
namespace fs = std::filesystem;
namespace {

fs::path Normal(const std::string& p) {
  fs::path d = fs::absolute(fs::path(p)).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();  // "out/" -> "out"
  return d;
}

// Resolves symbolic links in the part that exists, so "data" and "./link-to-data" compare equal.
fs::path Canonical(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p : c;
}

// True when `inner` is `outer` or lies below it (both canonical).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  std::string h(buf);
  for (char& c : h) {
    if (c == '/' || c == '@') c = '_';
  }
  return h.empty() ? "unknown" : h;
}

// The kernel start time (clock ticks since boot, /proc/PID/stat field 22) of `pid`; nullopt when
// no such process exists. Together with the pid it identifies a process across pid reuse.
std::optional<uint64_t> ProcessStartTime(int64_t pid) {
  std::ifstream f(StrCat("/proc/", pid, "/stat"));
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  size_t paren = s.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(s.substr(paren + 1));
  std::string tok;
  for (int field = 3; field <= 22 && (fields >> tok); ++field) {
    if (field == 22) {
      int64_t v;
      if (!ParseInt64(tok, &v) || v < 0) return std::nullopt;
      return static_cast<uint64_t>(v);
    }
  }
  return std::nullopt;
}

struct StagingOwner {
  int64_t pid = 0;
  int64_t start = 0;
  std::string host;
};

// "<kind>-<pid>-<start>-<rand>@<host>" after ".<name>." where kind is tmp (the folder being
// written) or old (a replaced output on its way out).
std::string StagingName(const std::string& dest_name, const char* kind, const StagingOwner& me,
                        uint32_t rnd) {
  return StrCat(".", dest_name, ".", kind, "-", me.pid, "-", me.start, "-", rnd, "@", me.host);
}

// Parses a name made by StagingName; nullopt for anything else.
std::optional<StagingOwner> ParseStagingName(const std::string& name) {
  if (name.empty() || name[0] != '.') return std::nullopt;
  size_t at = name.rfind('@');
  if (at == std::string::npos || at + 1 >= name.size()) return std::nullopt;
  StagingOwner o;
  o.host = name.substr(at + 1);
  if (o.host.find('/') != std::string::npos) return std::nullopt;
  // Three numbers separated by '-' just before the '@'.
  size_t end = at;
  int64_t nums[3];
  for (int k = 2; k >= 0; --k) {
    size_t dash = name.rfind('-', end - 1);
    if (dash == std::string::npos || dash + 1 >= end) return std::nullopt;
    if (!ParseInt64(std::string_view(name).substr(dash + 1, end - dash - 1), &nums[k]) ||
        nums[k] < 0) {
      return std::nullopt;
    }
    end = dash;
  }
  // `end` is at the '-' after the kind.
  if (end < 5) return std::nullopt;
  std::string_view kind = std::string_view(name).substr(end - 4, 4);
  if (kind != ".tmp" && kind != ".old") return std::nullopt;
  o.pid = nums[0];
  o.start = nums[1];
  return o;
}

std::optional<StagingOwner> Me() {
  StagingOwner me;
  me.pid = ::getpid();
  std::optional<uint64_t> start = ProcessStartTime(me.pid);
  if (!start) return std::nullopt;
  me.start = static_cast<int64_t>(*start);
  me.host = HostName();
  return me;
}

// Refuses a destination that is, contains, or (when replacing it) lies inside an input.
absl::Status CheckInputs(const fs::path& dest, const StagingOptions& o, bool replacing) {
  const fs::path d = Canonical(dest);
  for (const std::string& input : o.inputs) {
    if (input.empty()) continue;
    const fs::path in = Canonical(Normal(input));
    if (d == in) {
      return absl::InvalidArgumentError(
          StrCat("--out ", dest.string(), " is the input ", input, "; ", o.tool,
                 " never writes over its input (choose another --out)"));
    }
    if (IsWithin(in, d)) {
      return absl::InvalidArgumentError(StrCat("--out ", dest.string(), " contains the input ",
                                               input, "; ", o.tool,
                                               " never replaces a folder holding its input"));
    }
    if (replacing && IsWithin(d, in)) {
      return absl::InvalidArgumentError(
          StrCat("--out ", dest.string(), " is inside the input ", input,
                 "; --overwrite never replaces "
                 "a folder of the input (remove it yourself or choose another --out)"));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteMarker(const fs::path& dir, const std::string& tool) {
  nlohmann::json j;
  j["tool"] = tool;
  j["format_version"] = 1;
  std::vector<std::string> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    entries.push_back(e.path().filename().string());
  if (ec) return absl::InternalError(StrCat("cannot list ", dir.string(), ": ", ec.message()));
  std::sort(entries.begin(), entries.end());
  j["entries"] = entries;
  j["about"] = StrCat("written by ", tool,
                      "; its --overwrite replaces this folder only while it holds "
                      "just these entries");
  const std::string p = (dir / kOutputMarker).string();
  std::ofstream out(p);
  out << j.dump(1) << "\n";
  out.close();
  if (!out) return absl::InternalError(StrCat("cannot write ", p));
  return absl::OkStatus();
}

bool RenameUnsupported(int err) { return err == EINVAL || err == ENOSYS || err == ENOTSUP; }

}  // namespace

absl::Status CheckReplaceable(const std::string& dest, const StagingOptions& o) {
  const fs::path d = Normal(dest);
  RETURN_IF_ERROR(CheckInputs(d, o, /*replacing=*/true));
  const std::string keep = StrCat("; --overwrite only replaces a folder that ", o.tool,
                                  " wrote (remove it yourself or choose another --out)");
  std::error_code ec;
  fs::file_status st = fs::symlink_status(d, ec);
  if (fs::is_symlink(st)) {
    return absl::FailedPreconditionError(StrCat("--out ", d.string(), " is a symbolic link", keep));
  }
  if (!fs::is_directory(st)) {
    return absl::FailedPreconditionError(
        StrCat("--out ", d.string(), " exists and is not a folder", keep));
  }
  const fs::path marker = d / kOutputMarker;
  std::ifstream f(marker);
  if (!f) {
    return absl::FailedPreconditionError(StrCat("--out ", d.string(), " was not written by ",
                                                o.tool, " (it has no ", kOutputMarker, ")", keep));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tool") || !j["tool"].is_string() ||
      !j.contains("entries") || !j["entries"].is_array()) {
    return absl::FailedPreconditionError(
        StrCat("--out ", d.string(), ": ", marker.string(), " is not a valid marker", keep));
  }
  if (j["tool"].get<std::string>() != o.tool) {
    return absl::FailedPreconditionError(StrCat("--out ", d.string(), " was written by ",
                                                j["tool"].get<std::string>(), ", not by ", o.tool,
                                                keep));
  }
  std::set<std::string> ours;
  for (const auto& e : j["entries"]) {
    if (e.is_string()) ours.insert(e.get<std::string>());
  }
  for (const auto& e : fs::directory_iterator(d, ec)) {
    std::string name = e.path().filename().string();
    if (name != kOutputMarker && ours.count(name) == 0) {
      return absl::FailedPreconditionError(
          StrCat("--out ", d.string(), " holds ", name, ", which ", o.tool,
                 " did not write, so --overwrite will not delete it "
                 "(move it out, or choose another --out)"));
    }
  }
  if (ec) return absl::InternalError(StrCat("cannot list ", d.string(), ": ", ec.message()));
  return absl::OkStatus();
}

int RemoveStaleStagingDirs(const std::string& parent) {
  std::optional<StagingOwner> me = Me();
  if (!me) return 0;  // no /proc: liveness cannot be proven, so nothing is removed
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    std::optional<StagingOwner> owner = ParseStagingName(name);
    if (!owner || owner->host != me->host) continue;
    std::error_code sec;
    if (!fs::is_directory(fs::symlink_status(e.path(), sec))) continue;
    std::optional<uint64_t> start = ProcessStartTime(owner->pid);
    // Its writer still runs. (A reused pid has another start time, so a dead run's folder is
    // not kept forever by an unrelated process.)
    if (start && static_cast<int64_t>(*start) == owner->start) continue;
    fs::remove_all(e.path(), sec);
    if (!sec) ++removed;
  }
  return removed;
}

absl::StatusOr<StagingDir> StagingDir::Create(const std::string& dest,
                                              const StagingOptions& options) {
  FANOUT_CHECK(!options.tool.empty()) << "StagingOptions::tool is required";
  if (dest.empty()) return absl::InvalidArgumentError("output folder is empty");
  const fs::path d = Normal(dest);
  RETURN_IF_ERROR(CheckInputs(d, options, /*replacing=*/false));
  std::error_code ec;
  if (fs::exists(fs::symlink_status(d, ec))) {
    if (!options.overwrite) {
      return absl::AlreadyExistsError(
          StrCat(d.string(), " already exists; choose another folder or pass --overwrite"));
    }
    RETURN_IF_ERROR(CheckReplaceable(d.string(), options));
  }
  fs::create_directories(d.parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        StrCat("cannot create ", d.parent_path().string(), ": ", ec.message()));
  }
  RemoveStaleStagingDirs(d.parent_path().string());
  std::optional<StagingOwner> me = Me();
  if (!me) me = StagingOwner{::getpid(), 0, HostName()};
  std::random_device rd;
  fs::path tmp = d.parent_path() / StagingName(d.filename().string(), "tmp", *me, rd() % 1000000);
  fs::create_directory(tmp, ec);
  if (ec) return absl::PermissionDeniedError(StrCat("cannot create ", tmp.string(), ": ", ec.message()));
  return StagingDir(d.string(), tmp.string(), options);
}

StagingDir::StagingDir(StagingDir&& o) noexcept
    : dest_(std::move(o.dest_)),
      tmp_(std::move(o.tmp_)),
      options_(std::move(o.options_)),
      done_(o.done_) {
  o.done_ = true;
}

StagingDir::~StagingDir() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

absl::Status StagingDir::Commit() {
  if (done_) return absl::FailedPreconditionError(StrCat(dest_, ": already committed"));
  RETURN_IF_ERROR(WriteMarker(tmp_, options_.tool));
  // Every byte on disk before the name appears (issue 11): otherwise a crash soon after the
  // rename can publish a folder of empty files.
  RETURN_IF_ERROR(FsyncTree(tmp_));
  std::error_code ec;
  const bool replacing = fs::exists(fs::symlink_status(dest_, ec));
  if (replacing) {
    if (!options_.overwrite)
      return absl::AlreadyExistsError(StrCat(dest_, " appeared while writing"));
    // Checked again: the folder may have changed while this run was writing.
    RETURN_IF_ERROR(CheckReplaceable(dest_, options_));
    std::string old;
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, dest_.c_str(), RENAME_EXCHANGE) == 0) {
      old = tmp_;  // the exchange left the previous output under the temporary name
    } else if (RenameUnsupported(errno)) {
      // A file system without RENAME_EXCHANGE: two renames, with a short window without dest.
      std::optional<StagingOwner> me = Me();
      if (!me) me = StagingOwner{::getpid(), 0, HostName()};
      std::random_device rd;
      old = (fs::path(dest_).parent_path() /
             StagingName(fs::path(dest_).filename().string(), "old", *me, rd() % 1000000))
                .string();
      fs::rename(dest_, old, ec);
      if (ec)
        return absl::InternalError(StrCat("cannot move old ", dest_, " aside: ", ec.message()));
      fs::rename(tmp_, dest_, ec);
      if (ec)
        return absl::InternalError(
            StrCat("cannot rename ", tmp_, " to ", dest_, ": ", ec.message()));
    } else {
      return absl::InternalError(
          StrCat("cannot exchange ", tmp_, " with ", dest_, ": ", std::strerror(errno)));
    }
    done_ = true;
    absl::Status synced = FsyncParent(dest_);
    fs::remove_all(old, ec);
    return synced;
  }
  if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, dest_.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) {
      return absl::AlreadyExistsError(StrCat(dest_, " appeared while writing"));
    }
    if (!RenameUnsupported(errno)) {
      return absl::InternalError(
          StrCat("cannot rename ", tmp_, " to ", dest_, ": ", std::strerror(errno)));
    }
    fs::rename(tmp_, dest_, ec);
    if (ec)
      return absl::InternalError(StrCat("cannot rename ", tmp_, " to ", dest_, ": ", ec.message()));
  }
  done_ = true;
  return FsyncParent(dest_);
}

}  // namespace fanout::base
