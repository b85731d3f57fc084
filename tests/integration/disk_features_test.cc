// Issue 40: a graph server whose partition's features are larger than the memory it may hold
// (a cgroup memory limit) serves them from disk (--feature-cache-mb) correctly and is not
// OOM-killed. Skipped where no cgroup memory controller is writable (cgroup v1's
// /sys/fs/cgroup/memory, v2's memory.max).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <regex>
#include <thread>

#include "base/spawn.h"
#include "core/partition_store.h"
#include "gtest/gtest.h"
#include "rpc/graph_client.h"
#include "tests/testing/testing.h"

namespace fanout {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(DiskFeaturesTest, AServerLimitedBelowItsFeaturesServesThemFromDisk) {
  constexpr int64_t kLimit = 96 << 20;
  testing::MemoryCgroup cgroup;
  std::string why;
  if (!cgroup.Create(kLimit, &why)) GTEST_SKIP() << why;
  testing::TempDir dir;
  // 40,000 nodes x 1024 float32 features: 164 MB, against a 96 MiB limit.
  const std::string config_path =
      testing::PartitionRandom(dir, {.num_nodes = 40000, .num_edges = 120000, .feat_dim = 1024}, 1);
  ASSERT_FALSE(config_path.empty());
  auto config = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(config.ok());
  const std::string feat = config->PartPath(0, core::PartFiles::NodeData("feat"));
  ASSERT_GT(fs::file_size(feat), static_cast<uintmax_t>(kLimit) * 3 / 2);
  {  // The partitioner's writes leave the file in the page cache, charged to this process: drop them.
    const int fd = ::open(feat.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  const std::string log = dir.Sub("server.log");
  const std::string cmd = "echo $$ > '" + cgroup.path() + "/cgroup.procs' && exec " FANOUT_SERVER_BIN +
                          std::string(" --part-config '") + config_path +
                          "' --part-id 0 --port 0 --num-threads 2 --feature-cache-mb 16";
  absl::StatusOr<pid_t> spawned = base::SpawnChild(
      {.argv = {"/bin/sh", "-c", cmd}, .fds = {base::ChildFd::Open(2, log, O_WRONLY | O_CREAT | O_TRUNC)}});
  ASSERT_TRUE(spawned.ok()) << spawned.status();
  const pid_t pid = *spawned;
  std::smatch m;
  std::string text;
  const std::regex ready("ready: .* on 127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 400 && !std::regex_search(text, m, ready); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    text = ReadText(log);
  }
  ASSERT_TRUE(std::regex_search(text, m, ready)) << text;
  auto client = rpc::GraphClient::Connect("127.0.0.1:" + m[1].str(), {.deadline_seconds = 30});
  // Every row twice, in shuffled chunks, then compared with the files' own rows.
  std::vector<int64_t> order(40000);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(3);
  auto mapped = core::PartitionStore::Open(*config, 0);
  ASSERT_TRUE(mapped.ok());
  for (int pass = 0; pass < 2; ++pass) {
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::pair<std::vector<int64_t>, std::string>> got;
    for (size_t b = 0; b < order.size(); b += 2000) {
      std::vector<int64_t> ids(order.begin() + b, order.begin() + std::min(order.size(), b + 2000));
      auto rows = client->PullNodeData("feat", ids);
      ASSERT_TRUE(rows.ok()) << rows.status() << "\n" << ReadText(log);
      got.push_back({std::move(ids), std::move(rows->data)});
    }
    for (const auto& [ids, data] : got) {
      std::string want;
      ASSERT_TRUE((*mapped)->GatherNodeRows("feat", ids, &want).ok());
      ASSERT_TRUE(data == want) << "pass " << pass;
    }
  }
  EXPECT_EQ(::kill(pid, 0), 0) << "the server is gone:\n" << ReadText(log);
  EXPECT_EQ(cgroup.OomKills(), 0);
  EXPECT_LE(cgroup.PeakBytes(), kLimit);
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadText(log);
  text = ReadText(log);
  std::smatch stats;
  ASSERT_TRUE(std::regex_search(text, stats, std::regex("row cache \\(s3fifo, 16 MiB\\): hit rate ([0-9.]+) \\(([0-9]+) hits, "
                                                        "([0-9]+) misses\\); ([0-9.]+) GB read from disk")))
      << text;
  EXPECT_EQ(std::stoll(stats[2]) + std::stoll(stats[3]), 80000) << "every row requested, twice";
  EXPECT_GE(std::stod(stats[4]), 0.16) << "the features were read from disk";
  std::printf("server under a %lld MiB limit (group peak %lld MiB): %s", static_cast<long long>(kLimit >> 20),
              static_cast<long long>(cgroup.PeakBytes() >> 20),
              std::regex_search(text, stats, std::regex("fanout-server: row cache[^\n]*\n")) ? stats[0].str().c_str() : "");
}

}  // namespace
}  // namespace fanout
