// GPU paths: models on a CUDA device and the NCCL backend. Every test skips without a CUDA
// device (and the NCCL ones without an NCCL build), so this binary passes on CPU-only machines.
#include <ATen/ATen.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"
#include "tests/trainer/rank_threads.h"
#include "tests/trainer/feature_cache_testing.h"
#include "tests/trainer/test_batches.h"
#include "trainer/batch_tensors.h"
#include "trainer/c10d_backend.h"
#include "trainer/dist.h"
#include "trainer/models.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

#define SKIP_WITHOUT_CUDA() \
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device in this LibTorch"

TEST(GpuTest, ModelsOnCudaMatchCpu) {
  SKIP_WITHOUT_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  testing::RandomBatchSpec spec;
  const sampler::MiniBatch batch = testing::MakeRandomBatch(spec);
  auto cpu = ToTensors(batch);
  auto gpu = ToTensors(batch, {.device = cuda});
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  EXPECT_TRUE(gpu->features.is_cuda());
  EXPECT_TRUE(gpu->blocks[0].src.is_cuda());
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kRgat, ModelKind::kHgt}) {
    ModelOptions o;
    o.model = kind;
    o.in_dim = spec.in_dim;
    o.hidden = 8;
    o.num_classes = spec.num_classes;
    o.heads = 2;
    auto model = MakeModel(o, 1);
    ASSERT_TRUE(model.ok());
    (*model)->eval();
    const at::Tensor on_cpu = (*model)->Forward(cpu->blocks, cpu->features);
    (*model)->to(cuda);
    const at::Tensor on_gpu = (*model)->Forward(gpu->blocks, gpu->features).cpu();
    EXPECT_TRUE(at::allclose(on_cpu, on_gpu, 1e-4, 1e-5)) << ModelKindName(kind);
  }
}

// The device feature cache on the GPU: batches assembled from its rows and the sampler's misses
// equal the plain gather, bit for bit (tests/trainer/feature_cache_test.cc runs it on the CPU).
TEST(GpuTest, FeatureCacheOnCudaEqualsThePlainGather) {
  SKIP_WITHOUT_CUDA();
  fanout::testing::TempDir dir;
  const std::string path = fanout::testing::PartitionRandom(dir, {.num_nodes = 500, .num_edges = 4000}, 1);
  ASSERT_FALSE(path.empty());
  auto config = core::LoadPartitionConfig(path);
  ASSERT_TRUE(config.ok());
  auto graph = sampler::DistGraph::Open(*config, sampler::DistGraphOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status();
  testing::ExpectCachedBatchesMatch(**graph, c10::Device(c10::kCUDA, 0));
}

// Collectives of rank comm.rank() of comm.world_size() on a model whose parameters live on
// `device`: all-reduce and broadcast on the communicator's device, parameter broadcast and
// gradient averaging staged through it, and the metric sums.
void ExpectCollectivesWork(Communicator& comm, const c10::Device& device) {
  const int r = comm.rank(), world = comm.world_size();
  at::Tensor t = at::full({8}, static_cast<float>(r + 1), at::TensorOptions().device(comm.device()));
  ASSERT_TRUE(comm.AllReduceSum(t).ok());
  EXPECT_EQ(t.sum().item<float>(), 8.0f * (world * (world + 1) / 2));
  at::Tensor b = at::full({3}, static_cast<float>(r), at::TensorOptions().device(comm.device()));
  ASSERT_TRUE(comm.Broadcast(b, 0).ok());
  EXPECT_EQ(b.abs().sum().item<float>(), 0.0f);
  at::Tensor p = at::full({4}, static_cast<float>(r + 5), at::TensorOptions().device(device)).requires_grad_(true);
  ASSERT_TRUE(BroadcastParameters(comm, {p}).ok());
  EXPECT_TRUE(p.is_cuda());
  EXPECT_FLOAT_EQ(p[3].item<float>(), 5.0f);  // rank 0's
  (p * static_cast<float>(r + 1)).sum().backward();
  GradientSynchronizer sync({p});
  ASSERT_TRUE(sync.AllReduceMean(comm).ok());
  EXPECT_TRUE(p.grad().is_cuda());
  EXPECT_FLOAT_EQ(p.grad()[0].item<float>(), (world + 1) / 2.0f);
  auto sums = AllReduceSum(comm, {1.0, 2.0});
  ASSERT_TRUE(sums.ok()) << sums.status();
  EXPECT_EQ((*sums)[1], 2.0 * world);
  EXPECT_TRUE(comm.Barrier().ok());
}

// Ranks as threads, one GPU each; with one GPU the group has one rank (NCCL refuses two ranks
// on one device). The test calls the c10d backend directly because Connect() answers a world of
// one without any backend; this way even one GPU runs the NCCL code path end to end.
TEST(GpuTest, NcclAllReduceBroadcastAndGradientAverage) {
  SKIP_WITHOUT_CUDA();
  if (!NcclCompiledIn()) GTEST_SKIP() << "built without NCCL";
  const int world = std::min(2, CudaDeviceCount());
  testing::RunRanks(world, std::chrono::seconds(60), [&](DistOptions o) {
    o.backend = CommBackend::kNccl;
    o.cuda_device = o.rank;
    auto endpoint = internal::ParseEndpoint(o.coordinator);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    auto comm = internal::ConnectC10d(o, *endpoint);
    ASSERT_TRUE(comm.ok()) << comm.status();
    ExpectCollectivesWork(**comm, c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(o.rank)));
  });
}

// Two ranks sharing one GPU (NCCL refuses that): Gloo averages the GPU model's gradients through
// host memory, and broadcasts its parameters the same way (--dist-backend gloo).
TEST(GpuTest, GlooAveragesGradientsOfModelsOnOneSharedGpu) {
  SKIP_WITHOUT_CUDA();
  testing::RunRanks(2, std::chrono::seconds(60), [&](DistOptions o) {
    o.backend = CommBackend::kGloo;
    auto comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    EXPECT_TRUE((*comm)->device().is_cpu());
    ExpectCollectivesWork(**comm, c10::Device(c10::kCUDA, 0));
  });
}

}  // namespace
}  // namespace fanout::trainer
