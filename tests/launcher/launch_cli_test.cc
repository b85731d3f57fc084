// The real fanout-launch with real fanout-server processes on a real partitioned graph, on two
// loopback "machines" (127.0.0.1 and 127.0.0.2) with free ports, and a stand-in trainer script
// that prints its environment and queries its machine's servers with fanout-query.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>

#include "base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "partition/readers.h"
#include "tests/launcher/launcher_test_util.h"
#include "tests/testing/testing.h"

namespace fanout::launcher {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::milliseconds;
using std::chrono::seconds;
using fanout::testing::TempDir;
using fanout::testing::WriteText;

// fanout-launch running with stdout and stderr in one pipe; SIGKILLed if a test gives up on it.
class LaunchRun : public testing::ChildRun {
 public:
  LaunchRun(std::vector<std::string> args, const std::string& cwd) : ChildRun(WithBinary(std::move(args)), cwd) {}

  // The pid the launcher printed for `label` ("m1 server 0"), or -1.
  pid_t PidOf(const std::string& label) const {
    std::smatch m;
    std::regex re("started " + label + " pid ([0-9]+)");
    return std::regex_search(output(), m, re) ? std::stoi(m[1].str()) : -1;
  }

 private:
  static std::vector<std::string> WithBinary(std::vector<std::string> args) {
    args.insert(args.begin(), FANOUT_LAUNCH_BIN);
    return args;
  }
};

// Whether ports base .. base+count-1 are all free on `ip` (checked by binding them).
bool FreeBasePortFrom(const std::string& ip, int base, int count) {
  std::vector<int> socks;
  bool ok = base > 0 && base + count - 1 <= 65535;
  for (int i = 0; ok && i < count; ++i) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(base + i));
    inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
    ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    socks.push_back(s);
  }
  for (int s : socks) close(s);
  return ok;
}

// A base port P on `ip` with P .. P+count-1 all free: a port the kernel picks, if the ones after
// it are free too.
int FreeBasePort(const std::string& ip, int count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
    socklen_t len = sizeof(a);
    const bool bound = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                       getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    close(s);
    const int base = bound ? static_cast<int>(ntohs(a.sin_port)) : 0;
    if (FreeBasePortFrom(ip, base, count)) return base;
  }
  ADD_FAILURE() << "no free ports on " << ip;
  return 0;
}

// Processes whose environment holds FANOUT_JOB_ID=<job_id>: every process of that job,
// including what trainers started.
std::vector<pid_t> JobProcesses(const std::string& job_id) {
  const std::string needle = "FANOUT_JOB_ID=" + job_id;
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string env = testing::ReadFile(e.path().string() + "/environ");
    bool match = false;
    for (size_t at = 0; at < env.size();) {
      size_t end = env.find('\0', at);
      if (end == std::string::npos) end = env.size();
      if (env.compare(at, end - at, needle) == 0) match = true;
      at = end + 1;
    }
    pid_t pid = std::stoi(name);
    if (match && testing::IsRunning(pid)) out.push_back(pid);
  }
  return out;
}

// Every pid in `pids` and every process of the job is gone (waiting up to a few seconds each
// for processes already killed to finish dying).
void ExpectNothingLeft(const std::string& job_id, const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    ASSERT_GT(pid, 1);
    EXPECT_TRUE(testing::WaitGone(pid, seconds(10))) << "pid " << pid << " still runs";
  }
  for (pid_t pid : JobProcesses(job_id)) EXPECT_TRUE(testing::WaitGone(pid, seconds(10))) << "pid " << pid;
  EXPECT_THAT(JobProcesses(job_id), ::testing::IsEmpty());
}

// Stand-in trainer: prints its environment, asks each server of its machine which partition it
// serves, then (MODE) exits 0, fails on rank 1, fails on rank 1 in the first run only (flaky),
// stops rank 1 with a usage error (usage), or sleeps with a "sampler" child of its own.
constexpr const char* kTrainer = R"SH(#!/bin/sh
echo "env $(env | grep -E '^(FANOUT_|OMP_NUM_THREADS=)' | sort | tr '\n' ' ')"
set -- $(grep -v '^[[:space:]]*#' "$FANOUT_IP_CONFIG" | grep -v '^[[:space:]]*$' | sed -n "$((FANOUT_MACHINE_ID + 1))p")
s=0
while [ $s -lt "$FANOUT_NUM_SERVERS" ]; do
  answer=$("$QUERY" --server "$1:$(($2 + s))" metadata --deadline 20)
  echo "server $1:$(($2 + s)) serves partition $(echo "$answer" | tr -d ' \n' | grep -o '"part_id":[0-9]*' | grep -o '[0-9]*$')"
  s=$((s + 1))
done
case "$MODE" in
  ok) exit 0 ;;
  fail) if [ "$FANOUT_RANK" = 1 ]; then echo "rank 1 gives up"; echo "trainer.sh: error: rank 1 cannot go on" >&2; exit 3; fi ;;
  flaky) if [ "$FANOUT_RANK" = 1 ] && [ "$FANOUT_RESTART_COUNT" = 0 ]; then echo "trainer.sh: error: lost a peer" >&2; exit 3; fi
         echo "run $FANOUT_RESTART_COUNT done"; exit 0 ;;
  usage) if [ "$FANOUT_RANK" = 1 ]; then echo "trainer.sh: error: --bad-flag is not a flag" >&2; exit 2; fi ;;
esac
sleep 1000 &
echo "sampler $! of trainer $$"
wait
)SH";

class LaunchCli : public ::testing::Test {
 public:  // the helpers below take the fixture
  void SetUp() override {
    config_ = fanout::testing::PartitionRandom(dir_, {.num_nodes = 300, .num_edges = 1500}, 2);
    ASSERT_FALSE(config_.empty());
    port0_ = FreeBasePort("127.0.0.1", kServers);
    port1_ = FreeBasePort("127.0.0.2", kServers);
    coordinator_ = FreeBasePort("127.0.0.1", 1);
    WriteText(dir_.Sub("ip_config.txt"), "# two loopback machines\n127.0.0.1 " + std::to_string(port0_) +
                                             "\n\n127.0.0.2 " + std::to_string(port1_) + "  # m1\n");
    WriteText(dir_.Sub("trainer.sh"), kTrainer);
    chmod(dir_.Sub("trainer.sh").c_str(), 0755);
    WriteText(dir_.Sub("fake-ssh"), "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n");
    chmod(dir_.Sub("fake-ssh").c_str(), 0755);
    job_id_ = std::string("cli-") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
              "-" + std::to_string(getpid());
  }

  // The launcher's command line for the two-machine job, trainers in `mode`.
  std::vector<std::string> Args(const std::string& mode, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"--ip-config", "ip_config.txt", "--part-config", config_,
                                  "--workspace", dir_.path(), "--num-servers", std::to_string(kServers),
                                  "--num-trainers", "2", "--num-samplers", "3",
                                  "--coordinator-port", std::to_string(coordinator_),
                                  "--job-id", job_id_, "--server-timeout", "30", "--stop-grace", "3",
                                  "--server-bin", FANOUT_SERVER_BIN, "--num-server-threads", "2",
                                  "--extra-env", std::string("QUERY=") + FANOUT_QUERY_BIN,
                                  "--extra-env=MODE=" + mode};
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), {"--", "./trainer.sh"});
    return a;
  }

  std::vector<pid_t> LearnedPids(const LaunchRun& run) {
    std::vector<pid_t> pids = testing::NumbersAfter(run.output(), "pid");
    for (pid_t p : testing::NumbersAfter(run.output(), "sampler")) pids.push_back(p);
    for (pid_t p : testing::NumbersAfter(run.output(), "of trainer")) pids.push_back(p);
    return pids;
  }

  static constexpr int kServers = 2;
  TempDir dir_;
  std::string config_, job_id_;
  int port0_ = 0, port1_ = 0, coordinator_ = 0;
};

TEST_F(LaunchCli, JobWithStandInTrainersRunsToTheEnd) {
  LaunchRun run(Args("ok"), dir_.path());
  ASSERT_EQ(run.Finish(), 0) << run.output();
  const std::string& out = run.output();
  const std::string p0 = std::to_string(port0_), p1 = std::to_string(port1_);
  // Servers on PORT + s of each machine, ready before any trainer starts.
  EXPECT_THAT(out, HasSubstr("started m0 server 1 pid "));
  EXPECT_THAT(out, HasSubstr("[m1 server 1] fanout-server: ready: graph"));
  EXPECT_THAT(out, HasSubstr("on 127.0.0.2:" + std::to_string(port1_ + 1)));
  EXPECT_LT(out.rfind(" ready on "), out.find("started m0 trainer 0"));
  // Each trainer got its place in the job and found its machine's servers serving its partition.
  for (int m = 0; m < 2; ++m) {
    const std::string ip = m == 0 ? "127.0.0.1" : "127.0.0.2";
    const int base = m == 0 ? port0_ : port1_;
    for (int t = 0; t < 2; ++t) {
      const std::string label = "[m" + std::to_string(m) + " trainer " + std::to_string(t) + "] ";
      std::smatch env;
      ASSERT_TRUE(std::regex_search(out, env, std::regex("\\[m" + std::to_string(m) + " trainer " +
                                                         std::to_string(t) + "\\] env ([^\n]*)")))
          << out;
      const std::string e = env[1].str();
      EXPECT_THAT(e, HasSubstr("FANOUT_MACHINE_ID=" + std::to_string(m) + " "));
      EXPECT_THAT(e, HasSubstr("FANOUT_LOCAL_RANK=" + std::to_string(t) + " "));
      EXPECT_THAT(e, HasSubstr("FANOUT_RANK=" + std::to_string(m * 2 + t) + " "));
      EXPECT_THAT(e, HasSubstr("FANOUT_WORLD_SIZE=4 "));
      EXPECT_THAT(e, HasSubstr("FANOUT_NUM_MACHINES=2 "));
      EXPECT_THAT(e, HasSubstr("FANOUT_NUM_SERVERS=2 "));
      EXPECT_THAT(e, HasSubstr("FANOUT_NUM_TRAINERS=2 "));
      EXPECT_THAT(e, HasSubstr("FANOUT_NUM_SAMPLERS=3 "));
      EXPECT_THAT(e, HasSubstr("FANOUT_COORDINATOR=127.0.0.1:" + std::to_string(coordinator_) + " "));
      EXPECT_THAT(e, HasSubstr("FANOUT_PART_CONFIG=" + config_ + " "));
      EXPECT_THAT(e, HasSubstr("FANOUT_IP_CONFIG=" + dir_.Sub("ip_config.txt") + " "));
      EXPECT_THAT(e, HasSubstr("FANOUT_JOB_ID=" + job_id_ + " "));
      EXPECT_THAT(e, HasSubstr("OMP_NUM_THREADS="));
      for (int s = 0; s < 2; ++s) {
        EXPECT_THAT(out, HasSubstr(label + "server " + ip + ":" + std::to_string(base + s) +
                                   " serves partition " + std::to_string(m) + "\n"));
      }
    }
  }
  EXPECT_THAT(out, HasSubstr("all 4 trainers finished; stopping the servers"));
  EXPECT_THAT(out, HasSubstr("[m0 server 0] fanout-server: stopped"));
  // Logs: --log-dir was not given, so fanout-logs/<job-id> in the launcher's working folder.
  const std::string logs = dir_.Sub("fanout-logs/" + job_id_);
  EXPECT_THAT(testing::ReadLog(logs + "/m1-trainer-1.log"),
              HasSubstr("\nserver 127.0.0.2:" + p1 + " serves partition 1\n"));
  EXPECT_THAT(testing::ReadLog(logs + "/m0-server-1.log"), HasSubstr("fanout-server: ready: graph"));
  EXPECT_THAT(testing::ReadLog(logs + "/m0-server-1.log"), Not(HasSubstr("[m0")));
  EXPECT_THAT(testing::ReadLog(logs + "/fanout-launch.log"), HasSubstr("done in"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

TEST_F(LaunchCli, FailingTrainerStopsTheJobWithItsExitCode) {
  LaunchRun run(Args("fail"), dir_.path());
  ASSERT_EQ(run.Finish(), 3) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 1] rank 1 gives up"));
  EXPECT_THAT(run.output(), HasSubstr("job " + job_id_ + " failed (exit 3): m0 trainer 1 (machine 0 at "
                                      "127.0.0.1, trainer local rank 1, rank 1; pid " +
                                      std::to_string(run.PidOf("m0 trainer 1")) + ") exited with status 3"));
  // The launcher's last line names the failure's own error message.
  std::string out = run.output();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  EXPECT_THAT(out.substr(out.rfind('\n') + 1),
              ::testing::EndsWith("exited with status 3: trainer.sh: error: rank 1 cannot go on"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// A partition's servers killed one by one: while one is left the job goes on (its clients fail
// over to it); with none left the job stops, naming the last.
TEST_F(LaunchCli, KilledServersStopTheJobOnceAPartitionHasNoneLeft) {
  LaunchRun run(Args("sleep"), dir_.path());
  ASSERT_TRUE(run.WaitFor("sampler ", 4)) << run.output();
  const pid_t first = run.PidOf("m1 server 0"), last = run.PidOf("m1 server 1");
  ASSERT_GT(first, 0) << run.output();
  ASSERT_GT(last, 0) << run.output();
  kill(first, SIGKILL);
  ASSERT_TRUE(run.WaitFor("partition 1 goes on with its 1 other server")) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("m1 server 0 (machine 1 at 127.0.0.2, server 0 on 127.0.0.2:" +
                                      std::to_string(port1_) + "; pid " + std::to_string(first) +
                                      ") killed by signal 9 (SIGKILL); partition 1 goes on"));
  const auto t0 = std::chrono::steady_clock::now();
  kill(last, SIGKILL);
  std::optional<int> code = run.Finish(seconds(15));
  ASSERT_TRUE(code.has_value()) << "the launcher did not exit within 15 s\n" << run.output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(15));
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(run.output(), HasSubstr("m1 server 1 (machine 1 at 127.0.0.2, server 1 on 127.0.0.2:" +
                                      std::to_string(port1_ + 1) + "; pid " + std::to_string(last) +
                                      ") killed by signal 9 (SIGKILL) while trainers were running"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// --max-restarts: the failed job is stopped as always, then started again as a whole, with
// FANOUT_RESTART_COUNT telling the processes which run this is and the logs of run k in
// restart-k/; what would only fail the same way is not retried.
TEST_F(LaunchCli, FailedJobIsRestartedAndFinishes) {
  LaunchRun run(Args("flaky", {"--max-restarts", "2", "--restart-backoff", "0"}), dir_.path());
  ASSERT_EQ(run.Finish(), 0) << run.output();
  const std::string& out = run.output();
  EXPECT_THAT(out, HasSubstr("fanout-launch: job " + job_id_ + " failed (exit 3): m0 trainer 1 ("));
  EXPECT_THAT(out, HasSubstr("fanout-launch: restart 1 of 2 in 0 s (FANOUT_RESTART_COUNT=1) after m0 trainer 1 ("));
  EXPECT_THAT(out, HasSubstr("exited with status 3: trainer.sh: error: lost a peer\n"));
  EXPECT_THAT(out, HasSubstr("[m1 trainer 1] run 1 done"));
  EXPECT_THAT(out, HasSubstr("fanout-launch: job " + job_id_ + " finished after 1 restart"));
  EXPECT_THAT(out, HasSubstr("FANOUT_RESTART_COUNT=1 "));
  const std::string logs = dir_.Sub("fanout-logs/" + job_id_);
  EXPECT_THAT(testing::ReadLog(logs + "/m0-trainer-1.log"), HasSubstr("trainer.sh: error: lost a peer"));
  EXPECT_THAT(testing::ReadLog(logs + "/restart-1/m0-trainer-1.log"), HasSubstr("run 1 done"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

TEST_F(LaunchCli, FailuresThatWouldRepeatAreNotRestarted) {
  {
    LaunchRun run(Args("usage", {"--max-restarts", "3", "--restart-backoff", "0"}), dir_.path());
    ASSERT_EQ(run.Finish(), 2) << run.output();
    EXPECT_THAT(run.output(), HasSubstr("not restarting job " + job_id_ +
                                        ": a usage error (exit status 2) fails the same way every time"));
    EXPECT_THAT(run.output(), Not(HasSubstr("restart 1 of")));
    ExpectNothingLeft(job_id_, LearnedPids(run));
  }
  LaunchRun run(Args("fail", {"--max-restarts", "5", "--restart-backoff", "0"}), dir_.path());
  ASSERT_EQ(run.Finish(), 3) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("restart 1 of 5"));
  EXPECT_THAT(run.output(), Not(HasSubstr("restart 2 of 5")));
  EXPECT_THAT(run.output(), HasSubstr("not restarting job " + job_id_ + ": it failed exactly as the run before it"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// The real trainer (fanout-train, with a sampler process each) instead of the stand-in.
std::vector<std::string> RealTrainingArgs(const std::vector<std::string>& launch, int epochs) {
  std::vector<std::string> a = launch;
  a.erase(std::find(a.begin(), a.end(), "--"), a.end());
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    if (a[i] == "--num-trainers") a[i + 1] = "1";
    if (a[i] == "--num-samplers") a[i + 1] = "1";
  }
  a.insert(a.end(), {"--", FANOUT_TRAIN_BIN, "--fanouts", "5,5", "--hidden", "16", "--batch-size", "16",
                     "--epochs", std::to_string(epochs), "--threads", "1", "--comm-timeout", "10", "--deadline", "5"});
  return a;
}

TEST_F(LaunchCli, RealTrainingJobFinishesAndReportsAccuracy) {
  LaunchRun run(RealTrainingArgs(Args("ok"), 3), dir_.path());
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 0] fanout-train: graph"));
  EXPECT_THAT(run.output(), HasSubstr("2 trainer(s)"));
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 0] epoch 2 | loss"));
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 0] fanout-train: test accuracy "));
  EXPECT_THAT(run.output(), HasSubstr("all 2 trainers finished; stopping the servers"));
  // Issue 40: every process's peak memory, and each machine's sum of them (two servers, a
  // trainer and its sampler process).
  EXPECT_THAT(run.output(), HasSubstr("[m1 trainer 0] fanout-memory: role=sampler peak_pss="));
  EXPECT_THAT(run.output(), HasSubstr("[m0 server 0] fanout-memory: role=server peak_pss="));
  for (const char* machine : {"machine 0 (127.0.0.1)", "machine 1 (127.0.0.2)"}) {
    EXPECT_THAT(run.output(), HasSubstr(std::string("fanout-launch: ") + machine +
                                        ": peak PSS ")) << machine;
  }
  EXPECT_THAT(run.output(), HasSubstr("processes sampled together (topology "));
  EXPECT_THAT(run.output(), HasSubstr("their own peaks: 1 sampler: "));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// Issue 40: --features-from-disk-mb: the servers and the samplers read the features from disk
// through row caches (1 MiB here, smaller than the features), S3-FIFO or (--features-cache-policy)
// LRU, and the job trains exactly as one that maps them.
TEST_F(LaunchCli, FeaturesReadFromDiskTrainAsMappedOnes) {
  auto accuracy = [](const std::string& output) {
    std::smatch m;
    return std::regex_search(output, m, std::regex("\\[m0 trainer 0\\] fanout-train: test accuracy [^\n]*")) ? m[0].str()
                                                                                                       : std::string();
  };
  LaunchRun mapped(RealTrainingArgs(Args("ok"), 2), dir_.path());
  ASSERT_EQ(mapped.Finish(seconds(120)), 0) << mapped.output();
  std::vector<std::string> args = RealTrainingArgs(Args("ok"), 2);
  *(std::find(args.begin(), args.end(), "--job-id") + 1) = job_id_ + "-disk";
  args.insert(std::find(args.begin(), args.end(), "--"), {"--features-from-disk-mb", "1"});
  LaunchRun disk(args, dir_.path());
  ASSERT_EQ(disk.Finish(seconds(120)), 0) << disk.output();
  EXPECT_THAT(disk.output(), HasSubstr("[m0 server 0] fanout-server: row cache (s3fifo, 1 MiB): hit rate"));
  EXPECT_THAT(disk.output(), HasSubstr("[m1 trainer 0] fanout-sampler: row cache (s3fifo, 1 MiB): hit rate"));
  EXPECT_THAT(mapped.output(), Not(HasSubstr("row cache")));
  ASSERT_FALSE(accuracy(mapped.output()).empty()) << mapped.output();
  EXPECT_EQ(accuracy(disk.output()), accuracy(mapped.output()));
  ExpectNothingLeft(job_id_ + "-disk", LearnedPids(disk));
  *(std::find(args.begin(), args.end(), "--job-id") + 1) = job_id_ + "-lru";
  args.insert(std::find(args.begin(), args.end(), "--"), {"--features-cache-policy", "lru"});
  LaunchRun lru(args, dir_.path());
  ASSERT_EQ(lru.Finish(seconds(120)), 0) << lru.output();
  EXPECT_THAT(lru.output(), HasSubstr("[m0 server 0] fanout-server: row cache (lru, 1 MiB): hit rate"));
  EXPECT_THAT(lru.output(), HasSubstr("[m1 trainer 0] fanout-sampler: row cache (lru, 1 MiB): hit rate"));
  EXPECT_EQ(accuracy(lru.output()), accuracy(mapped.output()));
  ExpectNothingLeft(job_id_ + "-lru", LearnedPids(lru));
}

// Issue 30: a partition written by `fanout-partition --distributed` (2 MPI ranks, PT-Scotch on the
// graph contracted by label propagation) trains through the launcher to the accuracy of the
// single-machine tool's METIS partition: Cora (../shared/data, written in the plain layout that
// --distributed reads; skipped when absent) and a generated graph, mean of 2 seeds each.
TEST_F(LaunchCli, DistributedPartitionTrainsLikeTheSingleMachineOne) {
  if (fanout::testing::MpirunPath().empty()) GTEST_SKIP() << "mpirun not installed (scripts/setup.sh installs it)";
  struct Graph {
    std::string name, dir;
    std::vector<std::string> train;
    double floor;
  };
  std::vector<Graph> graphs;
  {
    std::string err;
    ASSERT_EQ(fanout::testing::RunProcess({FANOUT_GENERATE_BIN, "--preset", "tiny", "--num-nodes", "3000",
                                           "--num-edges", "15000", "--out", dir_.Sub("generated"), "--seed", "4"},
                                          nullptr, &err),
              0)
        << err;
    graphs.push_back({"generated", dir_.Sub("generated"),
                      {"--fanouts", "10,10", "--hidden", "32", "--lr", "0.01", "--batch-size", "64", "--epochs", "8"},
                      0.5});
  }
  const std::string shared = fanout::testing::SharedDataDir();
  if (!shared.empty() && fs::exists(shared + "/cora/raw/edge.csv.gz")) {
    auto cora = partition::ReadDataset({.input_dir = shared + "/cora"});
    ASSERT_TRUE(cora.ok()) << cora.status();
    fs::create_directories(dir_.Sub("cora"));
    fanout::testing::WritePlainLayout(*cora, dir_.Sub("cora"));
    graphs.push_back({"cora", dir_.Sub("cora"),
                      {"--fanouts", "10,10", "--hidden", "64", "--lr", "0.01", "--weight-decay", "5e-4", "--batch-size",
                       "32", "--epochs", "30", "--eval-fanouts", "-1,-1"},
                      0.75});
  }
  for (const Graph& g : graphs) {
    double mean[2] = {0, 0};
    for (int dist = 0; dist < 2; ++dist) {
      const std::string out = dir_.Sub(StrCat(g.name, dist ? "-distributed" : "-serial"));
      std::vector<std::string> args = {FANOUT_PARTITION_BIN, "--input", g.dir, "--num-parts", "2", "--out", out,
                                       "--add-reverse-edges", "--graph-name", "g", "--quiet"};
      std::string err;
      if (dist) {
        // Contracted even at this size, so that the path large graphs take is the one trained on.
        args.insert(args.end(), {"--distributed", "--scotch-max-edges", "2000"});
        ASSERT_EQ(fanout::testing::RunMpi(2, args, nullptr, &err), 0) << err;
      } else {
        ASSERT_EQ(fanout::testing::RunProcess(args, nullptr, &err), 0) << err;
      }
      config_ = out + "/g.json";
      for (int seed : {0, 1}) {
        std::vector<std::string> a = RealTrainingArgs(Args("ok"), 1);
        a.erase(std::find(a.begin(), a.end(), "--") + 2, a.end());  // the trainer, without the stand-in's flags
        a.insert(a.end(), g.train.begin(), g.train.end());
        a.insert(a.end(), {"--threads", "1", "--comm-timeout", "30", "--seed", std::to_string(seed)});
        LaunchRun run(a, dir_.path());
        ASSERT_EQ(run.Finish(seconds(300)), 0) << run.output();
        std::smatch m;
        const std::string text = run.output();
        ASSERT_TRUE(std::regex_search(text, m, std::regex("\\[m0 trainer 0\\] fanout-train: test accuracy ([0-9.]+)")))
            << text;
        mean[dist] += std::stod(m[1]) / 2;
      }
    }
    std::printf("%s: test accuracy, mean of 2 seeds: single-machine METIS partition %.4f, distributed %.4f\n",
                g.name.c_str(), mean[0], mean[1]);
    EXPECT_GE(mean[1], g.floor) << g.name;
    EXPECT_NEAR(mean[1], mean[0], 0.03) << g.name;
  }
}

// The job's last epoch line and test line from rank 0, figure for figure (timings aside), in
// both outputs: a run that failed and resumed against an uninterrupted one.
void ExpectSameEnding(const std::string& uninterrupted, const std::string& resumed, int epochs) {
  const std::regex last_epoch("\\[m0 trainer 0\\] epoch " + std::to_string(epochs - 1) +
                              " \\| loss [0-9.]+ \\| train acc [0-9.]+ \\| val acc [-0-9.]+"),
      test("\\[m0 trainer 0\\] fanout-train: test accuracy [^\n]*");
  testing::ExpectSameMatches(uninterrupted, resumed, {last_epoch, test});
}

// A trainer SIGKILLed mid-training (a preempted machine, the OOM killer): with --max-restarts and
// checkpoints the job restarts, every trainer resumes from the newest epoch that all of them
// checkpointed, and the job ends with the model an uninterrupted run ends with.
TEST_F(LaunchCli, KilledTrainerIsRestartedAndTheJobEndsAsIfUninterrupted) {
  const int epochs = 30;
  auto job = [&](const std::string& name, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--log-dir", dir_.Sub("logs-" + name)});
    std::vector<std::string> a = RealTrainingArgs(Args("ok", extra), epochs);
    a.insert(a.end(), {"--checkpoint-dir", dir_.Sub("ckpt-" + name)});
    return a;
  };
  LaunchRun plain(job("plain", {}), dir_.path());
  ASSERT_EQ(plain.Finish(seconds(120)), 0) << plain.output();

  LaunchRun run(job("killed", {"--max-restarts", "2", "--restart-backoff", "0"}), dir_.path());
  // By epoch 2's line, epochs 0 and 1 are checkpointed on both ranks.
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 2 | loss")) << run.output();
  const pid_t victim = run.PidOf("m1 trainer 0");
  ASSERT_GT(victim, 0) << run.output();
  kill(victim, SIGKILL);
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  const std::string& out = run.output();
  // (The killed trainer, or its peer that lost it, whichever the launcher saw first.)
  EXPECT_THAT(out, HasSubstr("restart 1 of 2 in 0 s (FANOUT_RESTART_COUNT=1) after m"));
  EXPECT_THAT(out, HasSubstr("[m0 trainer 0] fanout-train: resumed from " + dir_.Sub("ckpt-killed/last.rank0")));
  EXPECT_THAT(out, HasSubstr("(restart 1)"));
  EXPECT_THAT(out, HasSubstr("finished after 1 restart"));
  // The last epoch and the test, figure for figure (timings aside).
  ExpectSameEnding(plain.output(), out, epochs);
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// --replicas 1 with one server per machine: machine 0 also serves partition 1. Partition 1's own
// server killed mid-job, its calls go to the replica on the other machine, and the job ends as an
// uninterrupted one does.
TEST_F(LaunchCli, AReplicaOnAnotherMachineServesAPartitionWhoseServerIsGone) {
  const int epochs = 20;
  auto job = [&](const std::string& name) {
    std::vector<std::string> a = RealTrainingArgs(
        Args("ok", {"--log-dir", dir_.Sub("logs-" + name), "--replicas", "1"}), epochs);
    *(std::find(a.begin(), a.end(), "--num-servers") + 1) = "1";
    return a;
  };
  LaunchRun plain(job("plain"), dir_.path());
  ASSERT_EQ(plain.Finish(seconds(120)), 0) << plain.output();
  EXPECT_THAT(plain.output(), ::testing::ContainsRegex("started m0 server 1 pid [0-9]+ on 127\\.0\\.0\\.1:" +
                                                       std::to_string(port0_ + 1) + ", replica of partition 1"));

  LaunchRun run(job("kill"), dir_.path());
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 3 | loss")) << run.output();
  const pid_t victim = run.PidOf("m1 server 0");
  ASSERT_GT(victim, 0) << run.output();
  kill(victim, SIGKILL);
  ASSERT_TRUE(run.WaitFor("partition 1 goes on with its 1 other server")) << run.output();
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  ExpectSameEnding(plain.output(), run.output(), epochs);
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// Chaos: SIGKILL for a trainer, a sampler process, a server and then the launcher itself, each once
// training has moved on from the last failure. The launcher restarts the job after the first two
// (--max-restarts), the server's partition fails over to its other server, the same command with
// --auto-resume follows the launcher's death (as a requeued Slurm job or a rescheduled pod would),
// and the job ends with an uninterrupted run's last epoch and test, figure for figure.
TEST_F(LaunchCli, ChaosOfKillsEndsAsAnUninterruptedRun) {
  const int epochs = 40;
  auto job = [&](const std::string& name, const std::string& ckpt) {
    std::vector<std::string> a = RealTrainingArgs(
        Args("ok", {"--log-dir", dir_.Sub("logs-" + name), "--max-restarts", "5", "--restart-backoff", "0"}), epochs);
    a.insert(a.end(), {"--checkpoint-dir", dir_.Sub(ckpt), "--checkpoint-every-steps", "1", "--auto-resume"});
    return a;
  };
  LaunchRun plain(job("plain", "ckpt-plain"), dir_.path());
  ASSERT_EQ(plain.Finish(seconds(120)), 0) << plain.output();

  auto children_of = [](pid_t pid) {
    std::vector<pid_t> out;
    std::istringstream in(testing::ReadFile(StrCat("/proc/", pid, "/task/", pid, "/children")));
    for (pid_t c; in >> c;) out.push_back(c);
    return out;
  };
  // The n-th started process with this label ("m1 trainer 0"), from the launcher's lines.
  auto nth_pid = [](const std::string& out, const std::string& label, int n) -> pid_t {
    const std::regex re("started " + label + " pid ([0-9]+)");
    int seen = 0;
    for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) {
      if (++seen == n) return std::stoi((*it)[1].str());
    }
    return -1;
  };
  LaunchRun run(job("chaos", "ckpt-chaos"), dir_.path());
  std::vector<pid_t> pids;
  // 1. A trainer.
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 3 | loss")) << run.output();
  pid_t victim = nth_pid(run.output(), "m1 trainer 0", 1);
  ASSERT_GT(victim, 0) << run.output();
  kill(victim, SIGKILL);
  // 2. A sampler process of the restarted run's rank 0.
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 8 | loss")) << run.output();
  const pid_t trainer = nth_pid(run.output(), "m0 trainer 0", 2);
  ASSERT_GT(trainer, 0) << run.output();
  const std::vector<pid_t> samplers = children_of(trainer);
  ASSERT_FALSE(samplers.empty()) << "no sampler process under pid " << trainer;
  pids.insert(pids.end(), samplers.begin(), samplers.end());
  kill(samplers[0], SIGKILL);
  // 3. A server: its partition's other server takes its calls, no restart.
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 13 | loss")) << run.output();
  victim = nth_pid(run.output(), "m1 server 0", 3);
  ASSERT_GT(victim, 0) << run.output();
  kill(victim, SIGKILL);
  ASSERT_TRUE(run.WaitFor("partition 1 goes on with its 1 other server")) << run.output();
  // 4. The launcher itself: it takes the job with it.
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 18 | loss")) << run.output();
  kill(run.pid(), SIGKILL);
  EXPECT_EQ(run.Finish(seconds(60)), 128 + SIGKILL);
  for (int n = 1; n <= 2; ++n) {
    EXPECT_THAT(run.output(), HasSubstr(StrCat("restart ", n, " of 5 in 0 s (FANOUT_RESTART_COUNT=", n, ")"))) << n;
  }
  EXPECT_THAT(run.output(), Not(HasSubstr("restart 3 of 5")));
  std::vector<pid_t> learned = LearnedPids(run);
  pids.insert(pids.end(), learned.begin(), learned.end());
  ExpectNothingLeft(job_id_, pids);

  LaunchRun again(job("again", "ckpt-chaos"), dir_.path());
  ASSERT_EQ(again.Finish(seconds(120)), 0) << again.output();
  EXPECT_THAT(again.output(), HasSubstr("[m0 trainer 0] fanout-train: resumed from "));
  ExpectSameEnding(plain.output(), again.output(), epochs);
  // The best-validation checkpoint (model, its epoch and metric) byte for byte. (The last.rank
  // files hold the same model but LibTorch writes Adam's state in an order of its own per process.)
  EXPECT_TRUE(testing::ReadFile(dir_.Sub("ckpt-plain/best.pt")) == testing::ReadFile(dir_.Sub("ckpt-chaos/best.pt")))
      << "best.pt differs from the uninterrupted run's";
  ExpectNothingLeft(job_id_, LearnedPids(again));
}

// SIGTERM to the launcher (a Slurm job's end, a Kubernetes pod's deletion): it passes it on, the
// trainers stop after the same step with a checkpoint there (their samplers see them through it),
// and the launcher exits 143; the same command with --auto-resume (a requeued job) ends as an
// uninterrupted run does.
TEST_F(LaunchCli, SigtermToTheLauncherCheckpointsAndAutoResumeFinishes) {
  const int epochs = 30;
  auto job = [&](const std::string& name, bool auto_resume) {
    std::vector<std::string> a = RealTrainingArgs(Args("ok", {"--log-dir", dir_.Sub("logs-" + name)}), epochs);
    a.insert(a.end(), {"--checkpoint-dir", dir_.Sub("ckpt-" + (name == "plain" ? name : "term"))});
    if (auto_resume) a.push_back("--auto-resume");
    return a;
  };
  LaunchRun plain(job("plain", false), dir_.path());
  ASSERT_EQ(plain.Finish(seconds(120)), 0) << plain.output();

  LaunchRun run(job("term", true), dir_.path());
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 2 | loss")) << run.output();
  kill(run.pid(), SIGTERM);
  ASSERT_EQ(run.Finish(seconds(60)), 143) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("got SIGTERM: stopping the job on every machine"));
  for (const char* who : {"[m0 trainer 0]", "[m1 trainer 0]"}) {
    EXPECT_THAT(run.output(), HasSubstr(std::string(who) + " fanout-train: rank ")) << who;
  }
  EXPECT_THAT(run.output(), HasSubstr("SIGTERM: stopped after a checkpoint at epoch "));
  // Servers are stopped after the trainers, so nothing failed on the way out.
  EXPECT_THAT(run.output(), Not(HasSubstr("error")));
  EXPECT_LT(run.output().find("fanout-train: rank 0: SIGTERM"), run.output().find("fanout-server: SIGTERM"));
  ExpectNothingLeft(job_id_, LearnedPids(run));

  LaunchRun again(job("again", true), dir_.path());
  ASSERT_EQ(again.Finish(seconds(120)), 0) << again.output();
  EXPECT_THAT(again.output(), HasSubstr("[m0 trainer 0] fanout-train: resumed from "));
  ExpectSameEnding(plain.output(), again.output(), epochs);
  ExpectNothingLeft(job_id_, LearnedPids(again));
}

// One launcher per machine (--machine-id), as in a Kubernetes pod each: machine 1's launcher
// starts later; machine 0's trainers wait for its servers, the trainers of both machines train
// one model together, and each launcher ends when its own trainers are done.
TEST_F(LaunchCli, OneLauncherPerMachineTrainsTogether) {
  LaunchRun run0(RealTrainingArgs(Args("ok", {"--machine-id", "0", "--log-dir", dir_.Sub("logs0")}), 2), dir_.path());
  // Machine 1 starts once machine 0 is up and waiting for it.
  ASSERT_TRUE(run0.WaitFor("waiting for the other machines' 2")) << run0.output();
  LaunchRun run1(RealTrainingArgs(Args("ok", {"--machine-id", "1", "--log-dir", dir_.Sub("logs1")}), 2), dir_.path());
  ASSERT_EQ(run0.Finish(seconds(120)), 0) << run0.output() << run1.output();
  ASSERT_EQ(run1.Finish(seconds(60)), 0) << run1.output();
  EXPECT_THAT(run0.output(), HasSubstr("machine 0 of 2 (--machine-id), 2 server(s) and 1 trainer(s) here"));
  EXPECT_THAT(run0.output(), HasSubstr("waiting for the other machines' 2"));
  EXPECT_THAT(run0.output(), HasSubstr("m1 server 1 answers on 127.0.0.2:" + std::to_string(port1_ + 1)));
  EXPECT_THAT(run0.output(), HasSubstr("[m0 trainer 0] fanout-train: test accuracy "));
  EXPECT_THAT(run0.output(), Not(HasSubstr("[m1 ")));
  // Rank 0 trained with rank 1 of the other launcher (only rank 0 reports epochs).
  EXPECT_TRUE(std::regex_search(run0.output(), std::regex("\\[m0 trainer 0\\] fanout-train: graph[^\n]* 2 trainer\\(s\\)")))
      << run0.output();
  EXPECT_THAT(run1.output(), HasSubstr("started m1 trainer 0 pid "));
  EXPECT_THAT(run1.output(), HasSubstr("rank 1; pid"));
  EXPECT_THAT(run1.output(), Not(HasSubstr("[m0 ")));
  ExpectNothingLeft(job_id_, LearnedPids(run0));
  ExpectNothingLeft(job_id_, LearnedPids(run1));
}

// A machine lost mid-training (its launcher SIGKILLed: a pod evicted) takes the other machines'
// launchers down with an error, not a hang.
TEST_F(LaunchCli, LosingOneMachineEndsTheOthersWithAnError) {
  LaunchRun run0(RealTrainingArgs(Args("ok", {"--machine-id", "0", "--log-dir", dir_.Sub("logs0")}), 100000),
                 dir_.path());
  LaunchRun run1(RealTrainingArgs(Args("ok", {"--machine-id", "1", "--log-dir", dir_.Sub("logs1")}), 100000),
                 dir_.path());
  ASSERT_TRUE(run0.WaitFor("[m0 trainer 0] epoch 3 ")) << run0.output() << run1.output();
  kill(run1.pid(), SIGKILL);
  EXPECT_EQ(run1.Finish(seconds(15)), 128 + SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run0.Finish(seconds(60)), 1) << run0.output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(30));  // --comm-timeout is 10 s
  EXPECT_THAT(run0.output(), HasSubstr("failed (exit 1): m0 trainer 0"));
  EXPECT_THAT(run0.output(), HasSubstr(": fanout-train: error: rank 0: "));
  ExpectNothingLeft(job_id_, LearnedPids(run0));
  ExpectNothingLeft(job_id_, LearnedPids(run1));
}

TEST_F(LaunchCli, MachineLauncherNamesPeersThatNeverAnswer) {
  std::vector<std::string> args = Args("ok", {"--machine-id", "0"});
  *(std::find(args.begin(), args.end(), "--server-timeout") + 1) = "2";
  LaunchRun run(args, dir_.path());
  EXPECT_EQ(run.Finish(seconds(30)), 1) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("m1 server 0 at 127.0.0.2:" + std::to_string(port1_) +
                                      ", m1 server 1 at 127.0.0.2:" + std::to_string(port1_ + 1) +
                                      " did not accept connections within 2 s (--server-timeout)"));
  EXPECT_THAT(run.output(), Not(HasSubstr("started m0 trainer")));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// Machines listed by host name: "localhost" is this host (it resolves to loopback), so its
// processes start directly; servers bind it, trainers reach it by name.
TEST_F(LaunchCli, RealTrainingJobWithAMachineListedByHostName) {
  WriteText(dir_.Sub("ip_config.txt"), "localhost " + std::to_string(port0_) + "\n127.0.0.2 " + std::to_string(port1_) +
                                           "\n");
  LaunchRun run(RealTrainingArgs(Args("ok"), 2), dir_.path());
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("m0 server 0 ready on localhost:" + std::to_string(port0_)));
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 0] fanout-train: test accuracy "));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// Servers with mutual TLS and a token: the launcher hands both to servers, trainers and their
// sampler processes, and the job trains as without them.
TEST_F(LaunchCli, RealTrainingJobWithMutualTlsAndAToken) {
  fanout::testing::TestPki pki;
  ASSERT_NO_FATAL_FAILURE(fanout::testing::MakeTestPki(dir_, &pki));
  const std::string token = fanout::testing::WriteTokenFile(dir_, "token", "job-token-0123456789abcdef");
  LaunchRun run(RealTrainingArgs(Args("ok", {"--tls-cert", pki.cert, "--tls-key", pki.key, "--tls-ca", pki.ca,
                                             "--auth-token-file", "token"}),
                                 1),
                dir_.path());
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("(mutual TLS, token, read-only)"));
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 0] fanout-train: test accuracy "));
  EXPECT_THAT(run.output(), HasSubstr("1 sampler process(es) per trainer"));
  EXPECT_THAT(run.output(), ::testing::Not(HasSubstr("WARNING")));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// Failover in a real job: machine 1's server 0 SIGKILLed mid-training; the other machine's
// trainer moves its calls for partition 1 to server 1, and the job ends, without a restart, with
// the figures of an uninterrupted run.
TEST_F(LaunchCli, KilledServerFailsOverAndTheJobEndsAsIfUninterrupted) {
  const int epochs = 30;
  LaunchRun plain(RealTrainingArgs(Args("ok", {"--log-dir", dir_.Sub("logs-plain")}), epochs), dir_.path());
  ASSERT_EQ(plain.Finish(seconds(120)), 0) << plain.output();
  LaunchRun run(RealTrainingArgs(Args("ok", {"--log-dir", dir_.Sub("logs-failover")}), epochs), dir_.path());
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 2 | loss")) << run.output();
  const pid_t server = run.PidOf("m1 server 0");
  ASSERT_GT(server, 0) << run.output();
  kill(server, SIGKILL);
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("killed by signal 9 (SIGKILL); partition 1 goes on with its 1 other server"));
  // The client side: the call that found the server gone went to the other one.
  EXPECT_THAT(run.output(), HasSubstr("[m0 trainer 0] fanout: server 127.0.0.2:" + std::to_string(port1_) +
                                      " of partition 1 is unavailable"));
  EXPECT_THAT(run.output(), Not(HasSubstr("restart")));
  ExpectSameEnding(plain.output(), run.output(), epochs);
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// With every server of a partition gone, a real training job stops within the launcher's bound.
TEST_F(LaunchCli, KilledServerStopsARealTrainingJob) {
  LaunchRun run(RealTrainingArgs(Args("ok"), 100000), dir_.path());
  ASSERT_TRUE(run.WaitFor("epoch 0 | loss", 1, seconds(120))) << run.output();
  const pid_t other = run.PidOf("m1 server 1");
  ASSERT_GT(other, 0) << run.output();
  kill(other, SIGKILL);
  ASSERT_TRUE(run.WaitFor("partition 1 goes on with its 1 other server")) << run.output();
  const pid_t server = run.PidOf("m1 server 0");
  ASSERT_GT(server, 0) << run.output();
  const auto t0 = std::chrono::steady_clock::now();
  kill(server, SIGKILL);
  std::optional<int> code = run.Finish(seconds(15));
  ASSERT_TRUE(code.has_value()) << "the launcher did not exit within 15 s\n" << run.output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(15));
  EXPECT_NE(*code, 0);
  EXPECT_THAT(run.output(), HasSubstr("m1 server 0 (machine 1 at 127.0.0.2"));
  EXPECT_THAT(run.output(), HasSubstr("killed by signal 9 (SIGKILL)"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// A process that stops responding (SIGSTOP: alive, but silent) ends the job within 15 s with
// default settings, named, and nothing is left running. The trainers' own timeouts are left at
// their defaults too (--comm-timeout 300 s, --deadline 30 s), so only the launcher's heartbeat
// check can be what ends it.
std::vector<std::string> DefaultTimeouts(std::vector<std::string> a) {
  for (const char* flag : {"--stop-grace", "--comm-timeout", "--deadline"}) {
    auto it = std::find(a.begin(), a.end(), flag);
    if (it != a.end()) a.erase(it, it + 2);
  }
  return a;
}

// SIGSTOPs the processes labelled `labels` once training runs; returns the launcher's output after
// checking that the job ended within 15 s, failed, named `who`, and left nothing running.
// `launcher_flags` go to fanout-launch (none: its defaults).
void ExpectStoppedProcessEndsTheJob(LaunchCli* t, const std::vector<std::string>& labels, const std::string& who,
                                    const std::vector<std::string>& launcher_flags = {}) {
  LaunchRun run(DefaultTimeouts(RealTrainingArgs(t->Args("ok", launcher_flags), 100000)), t->dir_.path());
  ASSERT_TRUE(run.WaitFor("epoch 0 | loss", 1, seconds(120))) << run.output();
  std::vector<pid_t> pids;
  for (const std::string& label : labels) {
    pids.push_back(run.PidOf(label));
    ASSERT_GT(pids.back(), 0) << label << "\n" << run.output();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (pid_t pid : pids) kill(pid, SIGSTOP);
  std::optional<int> code = run.Finish(seconds(20));
  ASSERT_TRUE(code.has_value()) << "the launcher did not exit within 20 s\n" << run.output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(15)) << run.output();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(run.output(), HasSubstr(who));
  EXPECT_THAT(run.output(), HasSubstr("stopped responding: no heartbeat for"));
  ExpectNothingLeft(t->job_id_, t->LearnedPids(run));
}

// Both servers of a partition stopped: the partition has none left answering. The launcher's
// default heartbeat is the trainer case's; this one checks a server's silence is caught the same
// way, with a quicker heartbeat (the suite's time).
TEST_F(LaunchCli, StoppedServerEndsTheJobWithinFifteenSeconds) {
  ExpectStoppedProcessEndsTheJob(this, {"m1 server 0", "m1 server 1"}, "m1 server ",
                                 {"--heartbeat-interval", "0.5", "--heartbeat-timeout", "2"});
}

TEST_F(LaunchCli, StoppedTrainerEndsTheJobWithinFifteenSeconds) {
  ExpectStoppedProcessEndsTheJob(this, {"m1 trainer 0"},
                                 "m1 trainer 0 (machine 1 at 127.0.0.2, trainer local rank 0, rank 1");
}

// One server of a partition stopped (alive but silent): the launcher stops it once its heartbeat
// is overdue, its clients fail over to the partition's other server, and the job ends as an
// uninterrupted run, without a restart.
TEST_F(LaunchCli, StoppedServerIsReplacedByItsPartitionsOtherServer) {
  const int epochs = 30;
  const std::vector<std::string> quick = {"--heartbeat-interval", "0.5", "--heartbeat-timeout", "2"};
  std::vector<std::string> extra = quick;
  extra.insert(extra.end(), {"--log-dir", dir_.Sub("logs-plain")});
  LaunchRun plain(RealTrainingArgs(Args("ok", extra), epochs), dir_.path());
  ASSERT_EQ(plain.Finish(seconds(120)), 0) << plain.output();
  extra = quick;
  extra.insert(extra.end(), {"--log-dir", dir_.Sub("logs-stopped")});
  LaunchRun run(RealTrainingArgs(Args("ok", extra), epochs), dir_.path());
  ASSERT_TRUE(run.WaitFor("[m0 trainer 0] epoch 2 | loss")) << run.output();
  const pid_t server = run.PidOf("m1 server 0");
  ASSERT_GT(server, 0) << run.output();
  kill(server, SIGSTOP);
  ASSERT_EQ(run.Finish(seconds(120)), 0) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("stopped responding: no heartbeat for"));
  EXPECT_THAT(run.output(), HasSubstr("; stopping it"));
  EXPECT_THAT(run.output(), HasSubstr("partition 1 goes on with its 1 other server"));
  ExpectSameEnding(plain.output(), run.output(), epochs);
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

TEST_F(LaunchCli, CtrlCStopsEveryProcess) {
  LaunchRun run(Args("sleep"), dir_.path());
  ASSERT_TRUE(run.WaitFor("sampler ", 4)) << run.output();
  kill(run.pid(), SIGINT);
  std::optional<int> code = run.Finish(seconds(15));
  ASSERT_TRUE(code.has_value()) << run.output();
  EXPECT_EQ(*code, 130);
  EXPECT_THAT(run.output(), HasSubstr("got SIGINT: stopping the job on every machine"));
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

TEST_F(LaunchCli, KilledLauncherTakesTheJobWithIt) {
  LaunchRun run(Args("sleep"), dir_.path());
  ASSERT_TRUE(run.WaitFor("sampler ", 4)) << run.output();
  // 4 servers, 4 trainers, 4 samplers: the last one named may not have exec'd yet (seen under
  // load on a cold 2-core machine), so wait for it rather than count at once.
  for (int i = 0; i < 100 && JobProcesses(job_id_).size() < 12u; ++i) std::this_thread::sleep_for(milliseconds(50));
  ASSERT_EQ(JobProcesses(job_id_).size(), 12u);
  kill(run.pid(), SIGKILL);
  EXPECT_EQ(run.Finish(seconds(15)), 128 + SIGKILL);
  // Direct children die of PR_SET_PDEATHSIG; the samplers through the guard.
  ExpectNothingLeft(job_id_, LearnedPids(run));
}

// The ssh path end to end, with a stand-in for ssh that runs the remote command here the way
// sshd does (the user's shell -c "<command>").
TEST_F(LaunchCli, OverSshJobRunsAndHangUpStopsRemoteProcesses) {
  {
    LaunchRun run(Args("ok", {"--always-ssh", "--ssh-command", dir_.Sub("fake-ssh"), "--log-dir", dir_.Sub("logs1")}),
                  "/");
    ASSERT_EQ(run.Finish(), 0) << run.output();
    // The normal stop reaches the remote side through ssh's stdin, not the SIGKILL fallback.
    EXPECT_THAT(run.output(), HasSubstr("[m1 server 0] fanout-server: stopped"));
    EXPECT_THAT(run.output(), Not(HasSubstr("sent SIGKILL")));
    EXPECT_THAT(run.output(), HasSubstr("started m1 server 0 pid "));
    EXPECT_THAT(run.output(), HasSubstr("(ssh to 127.0.0.2)"));
    EXPECT_THAT(run.output(), HasSubstr("[m1 trainer 1] server 127.0.0.2:" + std::to_string(port1_ + 1) +
                                        " serves partition 1"));
    EXPECT_THAT(run.output(), HasSubstr("FANOUT_RANK=3 "));
    ExpectNothingLeft(job_id_, {});
  }
  {
    LaunchRun run(Args("sleep", {"--always-ssh", "--ssh-command", dir_.Sub("fake-ssh"),
                                 "--log-dir", dir_.Sub("logs2")}),
                  "/");
    ASSERT_TRUE(run.WaitFor("sampler ", 4)) << run.output();
    kill(run.pid(), SIGKILL);  // the remote side sees its ssh stdin close
    EXPECT_EQ(run.Finish(seconds(15)), 128 + SIGKILL);
    ExpectNothingLeft(job_id_, LearnedPids(run));
  }
}

// --slurm end to end inside a stand-in allocation: the nodes come from SLURM_JOB_NODELIST through
// a stand-in scontrol, the launcher writes their ip_config into the workspace, and every process
// starts through a stand-in srun (--always-ssh: the loopback "nodes" would otherwise be local).
TEST_F(LaunchCli, SlurmAllocationRunsThroughSrun) {
  WriteText(dir_.Sub("fake-scontrol"), "#!/bin/sh\n[ \"$3\" = 'loop[1-2]' ] || exit 1\nprintf '127.0.0.1\\n127.0.0.2\\n'\n");
  WriteText(dir_.Sub("fake-srun"), "#!/bin/sh\nopts=\"\"\nwhile [ $# -gt 0 ]; do case \"$1\" in --*) opts=\"$opts $1\"; shift ;; "
                                   "*) break ;; esac; done\necho \"$opts\" >> \"$FAKE_SRUN_LOG\"\nexec \"$@\"\n");
  chmod(dir_.Sub("fake-scontrol").c_str(), 0755);
  chmod(dir_.Sub("fake-srun").c_str(), 0755);
  // One base port free on both loopback nodes, as on a real allocation's identical nodes.
  int port = 0;
  for (int attempt = 0; attempt < 50 && port == 0; ++attempt) {
    const int p = FreeBasePort("127.0.0.1", kServers);
    if (FreeBasePortFrom("127.0.0.2", p, kServers)) port = p;
  }
  ASSERT_GT(port, 0);
  std::vector<std::string> args = Args("ok", {"--slurm", "--slurm-port", std::to_string(port), "--always-ssh",
                                             "--srun-command", dir_.Sub("fake-srun"), "--scontrol-command",
                                             dir_.Sub("fake-scontrol")});
  args.erase(args.begin(), args.begin() + 2);  // no --ip-config: the launcher writes it
  setenv("SLURM_JOB_NODELIST", "loop[1-2]", 1);
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("FAKE_SRUN_LOG", dir_.Sub("srun.log").c_str(), 1);
  LaunchRun run(args, dir_.path());
  std::optional<int> code = run.Finish();
  unsetenv("SLURM_JOB_NODELIST");
  unsetenv("SLURM_JOB_ID");
  unsetenv("FAKE_SRUN_LOG");
  ASSERT_EQ(code, 0) << run.output();
  const std::string ip_config = dir_.Sub("ip_config.slurm-4242.txt");
  EXPECT_THAT(testing::ReadFile(ip_config), HasSubstr("\n127.0.0.1 " + std::to_string(port) + "\n127.0.0.2 " +
                                                          std::to_string(port) + "\n"));
  EXPECT_THAT(run.output(), HasSubstr("started m1 server 0 pid "));
  EXPECT_THAT(run.output(), HasSubstr("(srun on 127.0.0.2)"));
  EXPECT_THAT(run.output(), HasSubstr("FANOUT_IP_CONFIG=" + ip_config + " "));
  EXPECT_THAT(run.output(), HasSubstr("[m1 trainer 1] server 127.0.0.2:" + std::to_string(port + 1) +
                                      " serves partition 1"));
  EXPECT_THAT(run.output(), HasSubstr("[m1 server 0] fanout-server: stopped"));
  const std::string srun_log = testing::ReadFile(dir_.Sub("srun.log"));
  EXPECT_THAT(srun_log, HasSubstr("--nodelist=127.0.0.2 --overlap --kill-on-bad-exit=1 --job-name=fanout-m1-trainer-1"));
  EXPECT_THAT(srun_log, HasSubstr("--nodelist=127.0.0.1 --overlap --kill-on-bad-exit=1 --job-name=fanout-m0-server-0"));
  ExpectNothingLeft(job_id_, {});
}

// Refused before anything starts: exit 1 (2 for usage), a message naming the culprit, no
// process started, no log folder.
class LaunchCliRefuses : public LaunchCli {
 protected:
  void ExpectRefused(const std::vector<std::string>& args, int code, const std::string& message) {
    LaunchRun run(args, dir_.path());
    EXPECT_EQ(run.Finish(), code) << run.output();
    EXPECT_THAT(run.output(), HasSubstr(message));
    EXPECT_THAT(run.output(), Not(HasSubstr("fanout-launch: started")));
    EXPECT_FALSE(fs::exists(dir_.Sub("fanout-logs")));
    EXPECT_THAT(JobProcesses(job_id_), ::testing::IsEmpty());
  }
};

TEST_F(LaunchCliRefuses, MalformedIpConfig) {
  WriteText(dir_.Sub("ip_config.txt"), "127.0.0.1 30050\n# next\n127.0.0.2 port\n");
  ExpectRefused(Args("ok"), 1,
                "fanout-launch: error: " + dir_.Sub("ip_config.txt") +
                    ":3: port 'port' is not a number in 1..65535");
  WriteText(dir_.Sub("ip_config.txt"), "127.0.0.1\nnode_b\n");
  ExpectRefused(Args("ok"), 1, dir_.Sub("ip_config.txt") + ":2: 'node_b' is not an IPv4 or IPv6 address or a host name");
  // A well-formed host name that does not resolve fails before anything starts, naming the line.
  WriteText(dir_.Sub("ip_config.txt"), "127.0.0.1\nnode-b.invalid\n");
  ExpectRefused(Args("ok"), 1, dir_.Sub("ip_config.txt") + ":2: host 'node-b.invalid' does not resolve");
  WriteText(dir_.Sub("ip_config.txt"), "# nothing\n");
  ExpectRefused(Args("ok"), 1, "lists no machines");
}

TEST_F(LaunchCliRefuses, MissingPartConfig) {
  std::vector<std::string> args = Args("ok");
  args[3] = dir_.Sub("parts/nope.json");
  ExpectRefused(args, 1, "fanout-launch: error: --part-config: " + dir_.Sub("parts/nope.json") +
                             ": cannot open partition config");
}

TEST_F(LaunchCliRefuses, MachinePartitionMismatch) {
  WriteText(dir_.Sub("ip_config.txt"), "127.0.0.1 " + std::to_string(port0_) + "\n127.0.0.2 " +
                                           std::to_string(port1_) + "\n127.0.0.3\n");
  ExpectRefused(Args("ok"), 1,
                dir_.Sub("ip_config.txt") + " lists 3 machines but " + config_ +
                    " has 2 partitions (num_parts)");
}

TEST_F(LaunchCliRefuses, MissingTrainerProgram) {
  std::vector<std::string> args = Args("ok");
  args.back() = "./no-such-trainer";
  ExpectRefused(args, 1, "the trainer command './no-such-trainer' is not an executable file");
}

TEST_F(LaunchCliRefuses, UsageErrors) {
  std::vector<std::string> args = Args("ok");
  args.pop_back();
  args.pop_back();  // no "-- command"
  ExpectRefused(args, 2, "fanout-launch: error: no trainer command");
  args = Args("ok", {"--num-trainers", "0"});
  ExpectRefused(args, 2, "fanout-launch: error: --num-trainers must be at least 1, not 0");
  args = Args("ok", {"--extra-env", "FANOUT_RANK=9"});
  ExpectRefused(args, 2, "FANOUT_* variables are set by the launcher");
  args = Args("ok", {"--max-restarts", "-1"});
  ExpectRefused(args, 2, "--max-restarts");
}

TEST_F(LaunchCli, DryRunPrintsThePlanAndStartsNothing) {
  LaunchRun run(Args("ok", {"--dry-run", "--ssh-user", "alice"}), dir_.path());
  ASSERT_EQ(run.Finish(), 0) << run.output();
  EXPECT_THAT(run.output(), HasSubstr("[m1 server 1] machine 1 at 127.0.0.2, server 1 on 127.0.0.2:" +
                                      std::to_string(port1_ + 1) + ", local\n"));
  // Over ssh, the plan shows the ssh command with the user.
  LaunchRun ssh(Args("ok", {"--dry-run", "--ssh-user", "alice", "--always-ssh"}), dir_.path());
  ASSERT_EQ(ssh.Finish(), 0) << ssh.output();
  EXPECT_THAT(ssh.output(), HasSubstr(", over ssh\n"));
  EXPECT_THAT(ssh.output(), HasSubstr("alice@127.0.0.2"));
  EXPECT_THAT(run.output(), HasSubstr("FANOUT_RANK=3 "));
  EXPECT_THAT(run.output(), Not(HasSubstr("fanout-launch: started")));
  EXPECT_THAT(JobProcesses(job_id_), ::testing::IsEmpty());
}

}  // namespace
}  // namespace fanout::launcher
