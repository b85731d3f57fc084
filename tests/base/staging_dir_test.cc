#include "base/staging_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "base/fsync.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::base {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool HasMessage(const absl::Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

// Publishes a folder with one file `name` holding `text`, as `tool`.
absl::Status Publish(const std::string& dest, const StagingOptions& o, const std::string& name,
                     const std::string& text) {
  auto st = StagingDir::Create(dest, o);
  if (!st.ok()) return st.status();
  std::ofstream(st->path() + "/" + name) << text;
  return st->Commit();
}

TEST(StagingDirTest, PublishesWithAMarkerAndLeavesNothingElse) {
  TempDir dir;
  ASSERT_TRUE(Publish(dir.Sub("out"), {.tool = "t"}, "a.txt", "1").ok());
  EXPECT_EQ(Slurp(dir.Sub("out/a.txt")), "1");
  EXPECT_NE(Slurp(dir.Sub(std::string("out/") + kOutputMarker)).find("\"t\""), std::string::npos);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(StagingDirTest, AbandonedStagingIsRemoved) {
  TempDir dir;
  {
    auto st = StagingDir::Create(dir.Sub("out"), {.tool = "t"});
    ASSERT_TRUE(st.ok()) << st.status();
    std::ofstream(st->path() + "/half.txt") << "x";
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// Issue 11: --overwrite used to delete whatever folder --out named.
TEST(StagingDirTest, OverwriteReplacesOnlyTheToolsOwnOutput) {
  TempDir dir;
  const StagingOptions o{.tool = "t", .overwrite = true};
  // A user's folder: refused, untouched.
  fs::create_directories(dir.Sub("user"));
  std::ofstream(dir.Sub("user/precious.txt")) << "keep me";
  absl::Status s = Publish(dir.Sub("user"), o, "a.txt", "1");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(HasMessage(s, dir.Sub("user")) && HasMessage(s, "--overwrite")) << s;
  EXPECT_EQ(Slurp(dir.Sub("user/precious.txt")), "keep me");
  // A plain file at --out: refused too.
  std::ofstream(dir.Sub("file")) << "keep";
  EXPECT_EQ(Publish(dir.Sub("file"), o, "a.txt", "1").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Slurp(dir.Sub("file")), "keep");

  // Its own output: replaced.
  ASSERT_TRUE(Publish(dir.Sub("out"), o, "a.txt", "1").ok());
  ASSERT_TRUE(Publish(dir.Sub("out"), o, "b.txt", "2").ok());
  EXPECT_FALSE(fs::exists(dir.Sub("out/a.txt")));
  EXPECT_EQ(Slurp(dir.Sub("out/b.txt")), "2");
  // Another tool's output: refused.
  s = Publish(dir.Sub("out"), {.tool = "other", .overwrite = true}, "c.txt", "3");
  EXPECT_TRUE(HasMessage(s, "was written by t, not by other")) << s;
  // Its own output with a file the user added: refused, naming the file.
  std::ofstream(dir.Sub("out/notes.txt")) << "mine";
  s = Publish(dir.Sub("out"), o, "c.txt", "3");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(HasMessage(s, "notes.txt")) << s;
  EXPECT_EQ(Slurp(dir.Sub("out/b.txt")), "2");
  EXPECT_EQ(Slurp(dir.Sub("out/notes.txt")), "mine");
  // No temporary folders left by any of the refusals.
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
}

TEST(StagingDirTest, NeverWritesOverOrAroundTheInput) {
  TempDir dir;
  fs::create_directories(dir.Sub("data/sub"));
  std::ofstream(dir.Sub("data/edges.csv")) << "0,1\n";
  const StagingOptions o{.tool = "t", .overwrite = true, .inputs = {dir.Sub("data")}};
  struct Case {
    std::string dest, expect;
  } cases[] = {{dir.Sub("data"), "is the input"},
               {dir.Sub("data/"), "is the input"},
               {dir.Sub("data/sub/.."), "is the input"},
               {dir.path(), "contains the input"},
               {dir.Sub("data/sub"), "is inside the input"}};
  for (const auto& c : cases) {
    absl::Status s = Publish(c.dest, o, "a.txt", "1");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.dest << ": " << s;
    EXPECT_TRUE(HasMessage(s, c.expect) && HasMessage(s, "--out")) << s;
  }
  EXPECT_EQ(Slurp(dir.Sub("data/edges.csv")), "0,1\n");
  EXPECT_TRUE(fs::is_directory(dir.Sub("data/sub")));
  // Through a symbolic link as well.
  fs::create_directory_symlink(dir.Sub("data"), dir.Sub("link"));
  EXPECT_TRUE(HasMessage(Publish(dir.Sub("link"), o, "a.txt", "1"), "is the input"));
  EXPECT_EQ(Slurp(dir.Sub("data/edges.csv")), "0,1\n");
  // A new folder inside the input replaces nothing, so it is allowed.
  EXPECT_TRUE(Publish(dir.Sub("data/parts"), o, "a.txt", "1").ok());
}

// The pid, start time and host in a live StagingDir's name.
struct Owner {
  std::string pid, start, host;
};
Owner OwnerOf(const std::string& staging_path) {
  std::smatch m;
  std::string name = fs::path(staging_path).filename().string();
  EXPECT_TRUE(std::regex_match(name, m, std::regex(R"(\..*\.tmp-(\d+)-(\d+)-\d+@(.+))"))) << name;
  return m.size() == 4 ? Owner{m[1], m[2], m[3]} : Owner{};
}

TEST(StagingDirTest, RemovesStaleStagingOfDeadRunsOnly) {
  TempDir dir;
  auto live = StagingDir::Create(dir.Sub("out"), {.tool = "t"});
  ASSERT_TRUE(live.ok()) << live.status();
  Owner me = OwnerOf(live->path());
  ASSERT_FALSE(me.pid.empty());
  // This pid with another start time is a dead process whose pid was reused (by this one).
  const std::string dead_start = std::to_string(std::stoll(me.start) + 1);
  const std::string dead = dir.Sub(".out.tmp-" + me.pid + "-" + dead_start + "-1@" + me.host);
  const std::string dead_old = dir.Sub(".other.old-" + me.pid + "-" + dead_start + "-2@" + me.host);
  const std::string alive = dir.Sub(".out.tmp-" + me.pid + "-" + me.start + "-3@" + me.host);
  const std::string other_host =
      dir.Sub(".out.tmp-" + me.pid + "-" + dead_start + "-4@not-" + me.host);
  const std::string legacy =
      dir.Sub(".out.tmp-" + me.pid + "-5");  // no owner recorded: not provably ours
  const std::string user = dir.Sub(".out.tmp-1-2-3");
  for (const auto& p : {dead, dead_old, alive, other_host, legacy, user}) {
    fs::create_directories(p + "/part0");
    std::ofstream(p + "/part0/x.npy") << "x";
  }
  std::ofstream(dir.Sub(".file.tmp-" + me.pid + "-" + dead_start + "-6@" + me.host))
      << "a file, not a folder";

  EXPECT_EQ(RemoveStaleStagingDirs(dir.path()), 2);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_old));
  for (const auto& p : {alive, other_host, legacy, user, live->path()})
    EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_TRUE(fs::exists(dir.Sub(".file.tmp-" + me.pid + "-" + dead_start + "-6@" + me.host)));

  // Create() does the same on its own.
  fs::create_directories(dead);
  auto next = StagingDir::Create(dir.Sub("out2"), {.tool = "t"});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live->path()));
}

TEST(FsyncTest, SyncsATreeAndNamesWhatFails) {
  TempDir dir;
  fs::create_directories(dir.Sub("a/b"));
  std::ofstream(dir.Sub("a/b/f")) << "x";
  fs::create_symlink(dir.Sub("missing"), dir.Sub("a/dangling"));
  EXPECT_TRUE(FsyncTree(dir.Sub("a")).ok());
  EXPECT_TRUE(FsyncParent(dir.Sub("a/b/")).ok());
  absl::Status s = FsyncPath(dir.Sub("missing"));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(HasMessage(s, dir.Sub("missing"))) << s;
}

}  // namespace
}  // namespace fanout::base
