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
#include "tests/trainer/typed_job.h"
#include "trainer/batch_tensors.h"
#include "trainer/c10d_backend.h"
#include "trainer/dist.h"
#include "trainer/link_loss.h"
#include "trainer/link_scorer.h"
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

// The typed models on a typed graph's batch, sampled from real graph servers (a relation per
// edge, a node type per input, blocks grouped in runs of one destination type, relations missing
// from some runs): on CUDA, the logits and the gradients of the input and of every parameter equal
// the CPU's. The CPU runs the fused kernels, CUDA the ATen composition (models.h).
TEST(GpuTest, TypedModelsOnCudaMatchCpu) {
  SKIP_WITHOUT_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  sampler::MiniBatch mb;
  ASSERT_NO_FATAL_FAILURE(job.PaperBatch(32, {4, 4}, &mb));
  auto cpu = ToTensors(mb);
  auto gpu = ToTensors(mb, {.device = cuda});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_GT(cpu->blocks[0].dst_runs.size(), 1u);
  const int64_t in_dim = 6;
  at::manual_seed(5);
  const at::Tensor x = at::randn({cpu->blocks[0].num_src, in_dim});
  for (ModelKind kind : {ModelKind::kRgcn, ModelKind::kRgat, ModelKind::kHgt}) {
    SCOPED_TRACE(std::string(ModelKindName(kind)));
    ModelOptions o = job.Rgcn(in_dim, 8);
    o.model = kind;
    o.heads = 2;
    o.num_node_types = static_cast<int64_t>(job.config.node_types.size());
    // Logits, then the input's gradient and every parameter's (undefined ones as empty tensors).
    auto run = [&](const BatchTensors& b, const c10::Device& device) {
      auto model = MakeModel(o, /*init_seed=*/4);
      EXPECT_TRUE(model.ok()) << model.status();
      (*model)->to(device);
      (*model)->eval();
      const at::Tensor in = x.to(device).clone().requires_grad_(true);
      const at::Tensor out = (*model)->Forward(b.blocks, in);
      EXPECT_EQ(out.device(), device);
      const at::Tensor weights = at::linspace(-1.0, 1.0, out.numel()).view(out.sizes()).to(device);
      (out * weights).sum().backward();
      std::vector<at::Tensor> all = {out.detach().cpu(), in.grad().cpu()};
      for (const at::Tensor& p : (*model)->parameters()) {
        all.push_back(p.grad().defined() ? p.grad().cpu() : at::Tensor());
      }
      return all;
    };
    const std::vector<at::Tensor> on_cpu = run(*cpu, c10::Device(c10::kCPU));
    const std::vector<at::Tensor> on_gpu = run(*gpu, cuda);
    ASSERT_EQ(on_cpu.size(), on_gpu.size());
    EXPECT_EQ(on_cpu[0].size(0), 32);
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      ASSERT_EQ(on_cpu[i].defined(), on_gpu[i].defined()) << "tensor " << i;
      if (on_cpu[i].defined()) {
        EXPECT_TRUE(at::allclose(on_cpu[i], on_gpu[i], 1e-4, 1e-5)) << "tensor " << i;
      }
    }
  }
}

// Link prediction's scorers and losses on CUDA: scores (pairwise and every-against-every), each
// loss and its gradients with respect to the embeddings and the scorer's parameters equal the
// CPU's (link_scorer_test.cc and link_loss_test.cc hold the CPU to references).
TEST(GpuTest, LinkScorersAndLossesOnCudaMatchCpu) {
  SKIP_WITHOUT_CUDA();
  const c10::Device cuda(c10::kCUDA, 0);
  const int64_t n = 12, k = 5, dim = 16;
  at::manual_seed(7);
  const at::Tensor a = at::randn({n, dim}), b = at::randn({n, dim}), negs = at::randn({n * k, dim});
  const at::Tensor weight = at::rand({n}) + 0.5;
  for (ScorerKind scorer : {ScorerKind::kDot, ScorerKind::kMlp, ScorerKind::kDistMult}) {
    for (LinkLoss loss : {LinkLoss::kBce, LinkLoss::kWeightedBce, LinkLoss::kAdversarial, LinkLoss::kContrastive}) {
      SCOPED_TRACE(std::string(ScorerKindName(scorer)) + " " + std::string(LinkLossName(loss)));
      // The same scorer parameters on both devices (drawn from init_seed alone), three relations.
      auto run = [&](const c10::Device& device, std::vector<at::Tensor>* grads) {
        LinkScorer s(scorer, dim, /*init_seed=*/3, /*num_relations=*/3, /*relation=*/1);
        s.to(device);
        // Fresh leaves on each device (a CPU tensor's to(kCPU) is the tensor itself).
        auto leaf = [&](const at::Tensor& t) { return t.to(device).clone().requires_grad_(true); };
        at::Tensor ea = leaf(a), eb = leaf(b), en = leaf(negs);
        const at::Tensor pos = s.Score(ea, eb);
        const at::Tensor neg = s.Score(ea.repeat_interleave(k, 0), en).view({n, k});
        const at::Tensor all = s.ScoreAll(ea, eb);
        const at::Tensor l = LinkLossOf({.kind = loss, .temperature = 0.5}, pos, neg, weight.to(device));
        l.backward();
        grads->push_back(ea.grad().cpu());
        grads->push_back(eb.grad().cpu());
        grads->push_back(en.grad().cpu());
        for (const at::Tensor& p : s.parameters()) grads->push_back(p.grad().cpu());
        EXPECT_EQ(l.device(), device);
        return std::vector<at::Tensor>{pos.detach().cpu(), neg.detach().cpu(), all.detach().cpu(),
                                       l.detach().cpu()};
      };
      std::vector<at::Tensor> cpu_grads, gpu_grads;
      const auto on_cpu = run(c10::Device(c10::kCPU), &cpu_grads);
      const auto on_gpu = run(cuda, &gpu_grads);
      for (size_t i = 0; i < on_cpu.size(); ++i) {
        EXPECT_TRUE(at::allclose(on_cpu[i], on_gpu[i], 1e-4, 1e-5)) << "output " << i;
      }
      ASSERT_EQ(cpu_grads.size(), gpu_grads.size());
      for (size_t i = 0; i < cpu_grads.size(); ++i) {
        EXPECT_TRUE(at::allclose(cpu_grads[i], gpu_grads[i], 1e-4, 1e-5)) << "gradient " << i;
      }
    }
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
