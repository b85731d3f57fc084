// The parts of trainer/dist.h that need no peers: options, environment, bucket planning and
// the one-rank group.
#include <ATen/ATen.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "gtest/gtest.h"
#include "trainer/c10d_backend.h"
#include "trainer/dist.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

TEST(DistOptionsTest, ValidateNamesTheBadField) {
  DistOptions o;
  EXPECT_TRUE(ValidateDistOptions(o).ok());
  o.world_size = 4;
  o.rank = 4;
  EXPECT_NE(ValidateDistOptions(o).message().find("rank 4 is not in [0, world size 4)"),
            std::string::npos);
  o.rank = 1;
  o.coordinator = "node7";
  EXPECT_NE(ValidateDistOptions(o).message().find("coordinator 'node7'"), std::string::npos);
  o.coordinator = "node7:0";
  EXPECT_NE(ValidateDistOptions(o).message().find("needs the port rank 0 listens on"),
            std::string::npos);
  o.coordinator = "node7:29500";
  o.timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(ValidateDistOptions(o).code(), absl::StatusCode::kInvalidArgument);
}

TEST(DistOptionsTest, EndpointsParse) {
  auto ep = internal::ParseEndpoint("10.0.0.5:29500");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->host, "10.0.0.5");
  EXPECT_EQ(ep->port, 29500);
  ep = internal::ParseEndpoint("[::1]:7");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->host, "::1");
  EXPECT_EQ(ep->port, 7);
  EXPECT_FALSE(internal::ParseEndpoint("host:65536").ok());
  EXPECT_FALSE(internal::ParseEndpoint(":80").ok());
  EXPECT_FALSE(internal::ParseEndpoint("host:8x").ok());
}

class EnvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("FANOUT_RANK");
    unsetenv("FANOUT_WORLD_SIZE");
    unsetenv("FANOUT_COORDINATOR");
  }
};

TEST_F(EnvTest, LauncherVariablesFillRankWorldAndCoordinator) {
  DistOptions base;
  base.timeout = std::chrono::seconds(9);
  auto o = DistOptionsFromEnv(base);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->world_size, 1);  // nothing set: a single-process run
  setenv("FANOUT_RANK", "3", 1);
  setenv("FANOUT_WORLD_SIZE", "8", 1);
  setenv("FANOUT_COORDINATOR", "10.1.2.3:29511", 1);
  o = DistOptionsFromEnv(base);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rank, 3);
  EXPECT_EQ(o->world_size, 8);
  EXPECT_EQ(o->coordinator, "10.1.2.3:29511");
  EXPECT_EQ(o->timeout, std::chrono::seconds(9));
}

TEST_F(EnvTest, PartialOrBadVariablesAreErrors) {
  setenv("FANOUT_RANK", "1", 1);
  auto o = DistOptionsFromEnv();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("missing: FANOUT_WORLD_SIZE FANOUT_COORDINATOR"),
            std::string::npos)
      << o.status();
  setenv("FANOUT_WORLD_SIZE", "two", 1);
  setenv("FANOUT_COORDINATOR", "h:1", 1);
  o = DistOptionsFromEnv();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("FANOUT_WORLD_SIZE='two'"), std::string::npos);
  setenv("FANOUT_WORLD_SIZE", "1", 1);
  EXPECT_NE(DistOptionsFromEnv().status().message().find("rank 1 is not in"), std::string::npos);
}

// --device cuda: the trainers of a machine take one GPU each, wrapping round when there are more
// trainers than GPUs (NCCL then refuses; --dist-backend gloo shares).
TEST(LocalRankDeviceTest, OneGpuPerLocalRank) {
  EXPECT_EQ(LocalRankDevice(0, 4), "cuda:0");
  EXPECT_EQ(LocalRankDevice(3, 4), "cuda:3");
  EXPECT_EQ(LocalRankDevice(5, 4), "cuda:1");
  EXPECT_EQ(LocalRankDevice(2, 0), "cuda:0");  // no GPU: refused later, by ParseDevice
}

TEST(PlanBucketsTest, ConsecutiveRunsUpToTheLimitSplitByDtype) {
  const std::vector<at::Tensor> t = {
      at::zeros({10}),              // 40 bytes
      at::zeros({5}),               // 20
      at::zeros({20}),              // 80 -> past 100, new bucket
      at::zeros({200}),             // 800, larger than the limit: alone
      at::zeros({2}),               // 8
      at::zeros({2}, at::kDouble),  // other dtype: new bucket
  };
  EXPECT_EQ(PlanBuckets(t, 100), (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(PlanBuckets(t, kDefaultBucketBytes),
            (std::vector<std::vector<size_t>>{{0, 1, 2, 3, 4}, {5}}));
}

TEST(SoloTest, OneRankNeedsNoSocketsAndLeavesGradientsAlone) {
  absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(DistOptions{});
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->world_size(), 1);
  at::Tensor p = at::ones({3}).requires_grad_(true);
  (p * 2).sum().backward();
  GradientSynchronizer sync({p});
  ASSERT_TRUE(sync.AllReduceMean(**comm).ok());
  EXPECT_TRUE(at::equal(p.grad(), at::full({3}, 2.0f)));
  EXPECT_EQ(*AllReduceSum(**comm, {1.5, 2.5}), (std::vector<double>{1.5, 2.5}));
  EXPECT_TRUE(BroadcastParameters(**comm, {p}).ok());
  EXPECT_TRUE((*comm)->Barrier().ok());
}

TEST(SoloTest, NcclWithoutNcclBuildIsFailedPrecondition) {
  if (NcclCompiledIn()) GTEST_SKIP() << "this build has NCCL";
  DistOptions o;
  o.backend = CommBackend::kNccl;
  absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(o);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(comm.status().message().find("docs/training.md"), std::string::npos);
  EXPECT_EQ(ParseCommBackend("mpi").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fanout::trainer
