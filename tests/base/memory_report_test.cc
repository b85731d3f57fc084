// base/memory_report.h: a process's memory by what holds it, sampled while it runs, and the
// line that carries a process's peak to fanout-launch.
#include "base/memory_report.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <vector>

namespace fanout::base {
namespace {

// A file mapped and touched under a partition's graph/ folder counts as topology, one under
// node_data/ as features, and heap memory as heap; PSS and RSS hold them all.
TEST(MemoryReportTest, MappedPartitionFilesCountByWhatTheyHold) {
  const std::string root = ::testing::TempDir() + "/memory_report_test_" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/part0/graph");
  std::filesystem::create_directories(root + "/part0/node_data");
  constexpr size_t kBytes = 8 << 20;
  auto map_file = [&](const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::ftruncate(fd, kBytes), 0);
    void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    EXPECT_NE(p, MAP_FAILED);
    std::memset(p, 1, kBytes);  // resident
    return p;
  };
  void* topo = map_file(root + "/part0/graph/indices.npy");
  void* feat = map_file(root + "/part0/node_data/feat.npy");
  std::vector<char> heap(16 << 20, 1);
  std::optional<MemoryUse> u = ReadMemoryUse();
  ASSERT_TRUE(u.has_value());
  EXPECT_GE(u->topology, static_cast<int64_t>(kBytes) * 9 / 10) << u->ToString();
  EXPECT_GE(u->features, static_cast<int64_t>(kBytes) * 9 / 10) << u->ToString();
  EXPECT_GE(u->heap, static_cast<int64_t>(heap.size()) * 9 / 10) << u->ToString();
  EXPECT_GT(u->code, 0);
  EXPECT_EQ(u->pss, u->topology + u->features + u->shm + u->heap + u->code + u->other);
  EXPECT_GE(u->rss, u->pss);
  MemoryWatch watch(std::chrono::milliseconds(10));
  ::munmap(topo, kBytes);
  ::munmap(feat, kBytes);
  // The peak remembers what is gone.
  EXPECT_GE(watch.Peak().topology, static_cast<int64_t>(kBytes) * 9 / 10);
  EXPECT_LT(ReadMemoryUse()->topology, static_cast<int64_t>(kBytes) / 2);
  std::filesystem::remove_all(root);
  EXPECT_FALSE(ReadMemoryUse(-5).has_value()) << "no such process";
}

// A child process is found among this one's descendants, and processes' memory adds up.
TEST(MemoryReportTest, DescendantsAreFoundAndTheirMemoryAddsUp) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  const std::vector<int> all = WithDescendants({{::getpid()}}).at(0);
  EXPECT_EQ(all.front(), ::getpid());
  EXPECT_NE(std::find(all.begin(), all.end(), child), all.end());
  const MemoryUse both = ReadMemoryUse(std::vector<int>{::getpid(), child});
  const std::optional<MemoryUse> mine = ReadMemoryUse(::getpid());
  ASSERT_TRUE(mine.has_value());
  EXPECT_GT(both.pss, 0);
  EXPECT_GE(both.rss, mine->rss);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(ReadMemoryUse(std::vector<int>{child}).pss, 0) << "a process that has gone counts nothing";
}

// The cheap reading follows what a process touches, as the full one does.
TEST(MemoryReportTest, ResidentBytesFollowWhatIsTouched) {
  const std::optional<int64_t> before = ReadResidentBytes();
  ASSERT_TRUE(before.has_value());
  std::vector<char> touched(64 << 20, 1);
  const std::optional<int64_t> after = ReadResidentBytes(::getpid());
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after - *before, static_cast<int64_t>(touched.size()) * 9 / 10);
  const std::optional<MemoryUse> full = ReadMemoryUse();
  ASSERT_TRUE(full.has_value());
  EXPECT_NEAR(static_cast<double>(*after), static_cast<double>(full->rss), 8 << 20) << "statm and smaps agree";
  EXPECT_FALSE(ReadResidentBytes(-5).has_value()) << "no such process";
}

// A full reading when the RSS passes the highest a full reading saw, when the refresh is up, and
// never above its share of a core.
TEST(MemoryReportTest, FullReadingsWhenMemoryMayHaveGrownAndWithinTheirShare) {
  using Clock = FullReadingPolicy::Clock;
  using std::chrono::milliseconds;
  FullReadingPolicy::Options o;
  o.margin = 0.01;
  o.min_margin_bytes = 1 << 20;
  o.refresh = milliseconds(30'000);
  o.max_share = 0.05;
  FullReadingPolicy p(o);
  const Clock::time_point t0 = Clock::now();
  constexpr int64_t kGb = 1 << 30;
  EXPECT_TRUE(p.Due(kGb, t0)) << "the first reading";
  p.Took(kGb, milliseconds(100), t0);  // next no sooner than 2 s later (100 ms at 5 %)
  EXPECT_FALSE(p.Due(2 * kGb, t0 + milliseconds(1'000))) << "within its share of a core";
  EXPECT_FALSE(p.Due(kGb + kGb / 200, t0 + milliseconds(3'000))) << "0.5 % more is within the margin";
  EXPECT_TRUE(p.Due(kGb + kGb / 50, t0 + milliseconds(3'000))) << "2 % more";
  p.Took(kGb + kGb / 50, milliseconds(100), t0 + milliseconds(3'000));
  // Down and up again to below the highest: nothing new to see.
  EXPECT_FALSE(p.Due(kGb / 2, t0 + milliseconds(6'000)));
  EXPECT_FALSE(p.Due(kGb + kGb / 50, t0 + milliseconds(9'000)));
  EXPECT_FALSE(p.Due(kGb, t0 + milliseconds(32'999)));
  EXPECT_TRUE(p.Due(kGb, t0 + milliseconds(33'000))) << "the refresh";
  // An expensive reading pushes the next one out: 2 s at 5 % is the next 40 s.
  p.Took(kGb, milliseconds(2'000), t0 + milliseconds(33'000));
  EXPECT_FALSE(p.Due(4 * kGb, t0 + milliseconds(72'999)));
  EXPECT_TRUE(p.Due(4 * kGb, t0 + milliseconds(73'000)));
}

TEST(MemoryReportTest, TheLineRoundTripsAndOthersAreNotReadAsOne) {
  MemoryUse u;
  u.pss = 1000;
  u.rss = 2000;
  u.topology = 100;
  u.features = 200;
  u.shm = 50;
  u.heap = 600;
  u.code = 40;
  u.other = 10;
  const std::string line = "[m1 trainer 0] " + MemoryLine("sampler", u);
  std::optional<MemoryRecord> r = ParseMemoryLine(line);
  ASSERT_TRUE(r.has_value()) << line;
  EXPECT_EQ(r->role, "sampler");
  EXPECT_EQ(MemoryLine(r->role, r->peak), MemoryLine("sampler", u));
  for (const char* bad : {"fanout-train: epoch 3", "fanout-memory: role=server peak_pss=12",
                          "fanout-memory: role=server peak_pss=x peak_rss=1 topology=1 features=1 shm=1 heap=1 code=1 other=1",
                          "fanout-memory: role=server peak_pss=-4 peak_rss=1 topology=1 features=1 shm=1 heap=1 code=1 other=1",
                          "fanout-memory: role=server peak_rss=1 peak_pss=1 topology=1 features=1 shm=1 heap=1 code=1 other=1"}) {
    EXPECT_FALSE(ParseMemoryLine(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace fanout::base
