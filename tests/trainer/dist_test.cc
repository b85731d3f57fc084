// Multi-rank tests: ranks are threads of this process talking c10d Gloo over loopback, with the
// coordinator on a port rank 0 picks (port 0).
#include "trainer/dist.h"
#include "trainer/metrics.h"

#include <ATen/ATen.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/trainer/rank_threads.h"
#include "tests/trainer/test_batches.h"
#include "trainer/batch_tensors.h"
#include "trainer/c10d_backend.h"
#include "trainer/models.h"

namespace fanout::trainer {

void PrintTo(ModelKind kind, std::ostream* os) { *os << ModelKindName(kind); }

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

using testing::RunRanks;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A port nothing listens on (bound, read back and released).
int UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

at::Tensor FlatParameters(GnnModel& model) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : model.parameters()) flat.push_back(p.detach().reshape({-1}));
  return at::cat(flat);
}

at::Tensor FlatGradients(GnnModel& model) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : model.parameters()) flat.push_back(p.grad().reshape({-1}).clone());
  return at::cat(flat);
}

// Mean cross-entropy of the model on `batch`, back-propagated.
void Backward(GnnModel& model, const sampler::MiniBatch& batch) {
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  const at::Tensor logits = model.Forward(t->blocks, t->features);
  at::cross_entropy_loss(logits, t->labels).backward();
}

ModelOptions SmallModel(ModelKind kind) {
  ModelOptions o;
  o.model = kind;
  o.in_dim = 5;
  o.hidden = 8;
  o.num_classes = 3;
  o.heads = 2;
  o.dropout = 0.0;
  return o;
}

TEST(CollectivesTest, AllReduceBroadcastBarrierAndMetricSums) {
  RunRanks(3, seconds(20), [](const DistOptions& o) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    Communicator& c = **comm;
    EXPECT_EQ(c.rank(), o.rank);
    EXPECT_EQ(c.world_size(), 3);
    EXPECT_EQ(c.device(), c10::Device(c10::kCPU));

    at::Tensor t = at::tensor({1.0f, 10.0f}) * (o.rank + 1);
    ASSERT_TRUE(c.AllReduceSum(t).ok());
    EXPECT_TRUE(at::equal(t, at::tensor({6.0f, 60.0f})));

    at::Tensor b = at::full({4}, static_cast<int64_t>(o.rank), at::kLong);
    ASSERT_TRUE(c.Broadcast(b, 2).ok());
    EXPECT_TRUE(at::equal(b, at::full({4}, 2, at::kLong)));
    EXPECT_EQ(c.Broadcast(b, 3).code(), absl::StatusCode::kInvalidArgument);

    ASSERT_TRUE(c.Barrier().ok());

    // Weighted accuracy: {correct, count} per rank.
    absl::StatusOr<std::vector<double>> sums = AllReduceSum(c, {1.0 + o.rank, 4.0});
    ASSERT_TRUE(sums.ok()) << sums.status();
    EXPECT_EQ(*sums, (std::vector<double>{6.0, 12.0}));

    at::Tensor wrong = at::zeros({2, 2}).t();  // not contiguous
    EXPECT_EQ(c.AllReduceSum(wrong).code(), absl::StatusCode::kInvalidArgument);
  });
}

// Rank r sends q + r rows to rank q (rank 0 sends rank 0 nothing), each row [r, q, k].
TEST(CollectivesTest, AllToAllDeliversUnevenRowsInRankOrder) {
  constexpr int kWorld = 3;
  RunRanks(kWorld, seconds(20), [](const DistOptions& o) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    const int r = o.rank;
    std::vector<int64_t> send(kWorld);
    std::vector<float> rows;
    for (int q = 0; q < kWorld; ++q) {
      send[q] = q + r;
      for (int k = 0; k < q + r; ++k) rows.insert(rows.end(), {float(r), float(q), float(k)});
    }
    absl::StatusOr<std::vector<int64_t>> recv = ExchangeCounts(**comm, send);
    ASSERT_TRUE(recv.ok()) << recv.status();
    EXPECT_EQ(*recv, (std::vector<int64_t>{r, 1 + r, 2 + r}));
    const at::Tensor input = at::tensor(rows).view({-1, 3});
    absl::StatusOr<at::Tensor> got = (*comm)->AllToAll(input, send, *recv);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<float> want;
    for (int q = 0; q < kWorld; ++q) {
      for (int k = 0; k < q + r; ++k) want.insert(want.end(), {float(q), float(r), float(k)});
    }
    EXPECT_TRUE(at::equal(*got, at::tensor(want).view({-1, 3}))) << *got;
    // Counts that do not add up to the input are refused before anything is sent.
    EXPECT_EQ((*comm)->AllToAll(input, {1, 1, 5}, *recv).status().code(), absl::StatusCode::kInvalidArgument);
  });
}

// Each metric over three ranks' uneven shares equals the metric of all rows in one process.
TEST(CollectivesTest, MetricsOverRanksEqualOneProcessOverAllRows) {
  constexpr int kWorld = 3, kClasses = 4;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const at::Tensor logits = at::randn({60, kClasses}, gen);
  const at::Tensor labels = at::randint(kClasses, {60}, gen, at::kLong);
  const int64_t cut[] = {0, 5, 5, 60};  // rank 1 has no rows
  for (Metric metric : {Metric::kAccuracy, Metric::kRocAuc, Metric::kF1Macro}) {
    auto solo = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
    MetricAccumulator whole(metric, kClasses);
    whole.Add(logits, labels);
    const double want = *whole.Reduce(*solo);
    RunRanks(kWorld, seconds(20), [&](const DistOptions& o) {
      auto comm = Connect(o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      MetricAccumulator share(metric, kClasses);
      const int64_t b = cut[o.rank], e = cut[o.rank + 1];
      if (e > b) share.Add(logits.slice(0, b, e), labels.slice(0, b, e));
      auto got = share.Reduce(**comm);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_NEAR(*got, want, 1e-12) << MetricName(metric) << " on rank " << o.rank;
    });
  }
}

TEST(CollectivesTest, BroadcastParametersMakesReplicasEqual) {
  std::vector<at::Tensor> result(2);
  RunRanks(2, seconds(20), [&](const DistOptions& o) {
    auto comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    auto model = MakeModel(SmallModel(ModelKind::kSage), /*init_seed=*/10 + o.rank);
    ASSERT_TRUE(model.ok());
    // A tiny bucket size: several broadcasts, each of a few tensors.
    ASSERT_TRUE(BroadcastParameters(**comm, (*model)->parameters(), 0, 256).ok());
    result[o.rank] = FlatParameters(**model);
  });
  auto rank0_model = MakeModel(SmallModel(ModelKind::kSage), 10);
  ASSERT_TRUE(rank0_model.ok());
  EXPECT_TRUE(at::equal(result[0], FlatParameters(**rank0_model)));
  EXPECT_TRUE(at::equal(result[1], result[0]));
}

class GradSyncTest : public ::testing::TestWithParam<ModelKind> {};

// Two ranks with half a batch each, averaged, equal one process with the whole batch (mean loss
// over equal halves).
TEST_P(GradSyncTest, AveragedGradientEqualsGradientOfTheWholeBatch) {
  const ModelOptions options = SmallModel(GetParam());
  std::vector<sampler::MiniBatch> halves;
  for (int r = 0; r < 2; ++r) {
    testing::RandomBatchSpec spec;
    spec.num_seeds = 8;
    spec.seed = 50 + r;
    spec.id_offset = 1000 * r;  // disjoint IDs, so the halves can be joined
    halves.push_back(testing::MakeRandomBatch(spec));
  }
  std::vector<at::Tensor> local(2), synced(2);
  RunRanks(2, seconds(20), [&](const DistOptions& o) {
    auto comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    auto model = MakeModel(options, 4);
    ASSERT_TRUE(model.ok());
    GradientSynchronizer sync((*model)->parameters(), {.bucket_bytes = 128});
    EXPECT_GT(sync.buckets().size(), 1u);
    Backward(**model, halves[o.rank]);
    local[o.rank] = FlatGradients(**model);
    ASSERT_TRUE(sync.AllReduceMean(**comm).ok());
    synced[o.rank] = FlatGradients(**model);
  });
  auto whole_model = MakeModel(options, 4);
  ASSERT_TRUE(whole_model.ok());
  Backward(**whole_model, testing::UnionOfBatches(halves[0], halves[1]));
  const at::Tensor whole = FlatGradients(**whole_model);

  EXPECT_FALSE(at::allclose(local[0], local[1]));  // the halves really differ
  EXPECT_TRUE(at::equal(synced[0], synced[1]));
  EXPECT_TRUE(at::allclose(synced[0], (local[0] + local[1]) / 2, 1e-6, 1e-7));
  const double diff = (synced[0] - whole).abs().max().item<double>();
  EXPECT_LE(diff, 1e-6) << "synced " << synced[0] << "\nwhole batch " << whole;
}

// --allreduce-dtype float16 (DDP's fp16 compression): each rank sends its share of the mean as
// float16, so the averaged gradients are the float32 mean rounded once per share, equal on every
// rank, overlapped or not, and the collectives count half the bytes.
TEST(GradSyncTest, Float16OnTheWireAveragesWithinItsPrecisionAndHalvesTheBytes) {
  const ModelOptions options = SmallModel(ModelKind::kSage);
  std::vector<at::Tensor> exact(2), half(2);
  std::vector<int64_t> bytes(2);
  for (bool fp16 : {false, true}) {
    for (bool overlap : {false, true}) {
      RunRanks(2, seconds(20), [&](const DistOptions& o) {
        auto raw = Connect(o);
        ASSERT_TRUE(raw.ok()) << raw.status();
        auto wire = base::WireCounters::Create();
        ASSERT_TRUE(wire.ok());
        std::unique_ptr<Communicator> comm = CountWireBytes(std::move(*raw), *wire);
        auto model = MakeModel(options, 4);
        ASSERT_TRUE(model.ok());
        GradientSynchronizer sync((*model)->parameters(), {.bucket_bytes = 256, .overlap = overlap,
                                                           .wire_dtype = fp16 ? at::kHalf : at::kFloat});
        testing::RandomBatchSpec spec;
        spec.seed = 7 + o.rank;
        sync.BeginBackward(*comm);
        Backward(**model, testing::MakeRandomBatch(spec));
        ASSERT_TRUE(sync.AllReduceMean(*comm).ok());
        const at::Tensor g = FlatGradients(**model);
        if (overlap && o.rank == 1) {
          EXPECT_TRUE(at::equal(g, (fp16 ? half : exact)[0])) << "overlapped and not differ";
        }
        if (!overlap) {
          (fp16 ? half : exact)[o.rank] = g;
          bytes[fp16] = (*wire)->Read().total();
        }
      });
    }
  }
  EXPECT_TRUE(at::equal(half[0], half[1]));  // every rank the same averaged gradients
  EXPECT_FALSE(at::equal(half[0], exact[0]));  // really sent narrower
  // Each rank's share rounds to float16 (2^-11 of its size): the mean is off by a few of those
  // units of the largest gradient, whatever a single element's cancellation does.
  EXPECT_LE((half[0] - exact[0]).abs().max().item<double>(), 2e-3 * exact[0].abs().max().item<double>());
  EXPECT_EQ(bytes[1] * 2, bytes[0]);
}

INSTANTIATE_TEST_SUITE_P(Models, GradSyncTest,
                         ::testing::Values(ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat),
                         [](const ::testing::TestParamInfo<ModelKind>& info) {
                           return std::string(ModelKindName(info.param));
                         });

class OverlapTest : public ::testing::TestWithParam<ModelKind> {};

// All-reduces started during backward, as each bucket's gradients are written (DDP's scheme),
// give exactly the gradients of the all-reduce after backward, for every built-in model, on 2
// ranks with different batches, over 3 steps of Adam (tiny buckets: many in flight at once).
// The buckets hold the same bytes either way, so the sums are the same bit for bit.
TEST_P(OverlapTest, GradientsEqualTheAllReduceAfterBackwardBitForBit) {
  const ModelOptions options = SmallModel(GetParam());
  constexpr int kSteps = 3;
  // [overlap][rank][step]: the averaged gradients.
  std::vector<std::vector<std::vector<at::Tensor>>> got(2, std::vector<std::vector<at::Tensor>>(2));
  for (bool overlap : {false, true}) {
    RunRanks(2, seconds(30), [&](const DistOptions& o) {
      auto comm = Connect(o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      auto model = MakeModel(options, 4);
      ASSERT_TRUE(model.ok());
      GnnModel& m = **model;
      GradientSynchronizer sync(m.parameters(), {.bucket_bytes = 64, .overlap = overlap});
      EXPECT_GT(sync.buckets().size(), 3u);
      torch::optim::Adam adam(m.parameters(), torch::optim::AdamOptions(0.01));
      for (int step = 0; step < kSteps; ++step) {
        testing::RandomBatchSpec spec;
        spec.seed = 100 * o.rank + step;
        spec.num_seeds = 6 + o.rank;
        adam.zero_grad();
        sync.BeginBackward(**comm);
        Backward(m, testing::MakeRandomBatch(spec));
        ASSERT_TRUE(sync.AllReduceMean(**comm).ok());
        // Overlapped, most buckets started inside backward (the first layer's parameters, whose
        // bucket starts last, may all be written at its very end).
        if (overlap) {
          EXPECT_GE(sync.started_in_backward(), sync.buckets().size() / 2) << "of " << sync.buckets().size();
        } else {
          EXPECT_EQ(sync.started_in_backward(), 0u);
        }
        got[overlap][o.rank].push_back(FlatGradients(m));
        adam.step();
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[0][r].size(), static_cast<size_t>(kSteps));
    ASSERT_EQ(got[1][r].size(), static_cast<size_t>(kSteps));
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_TRUE(at::equal(got[1][r][step], got[0][r][step])) << "rank " << r << " step " << step;
      EXPECT_TRUE(at::equal(got[1][r][step], got[1][0][step])) << "ranks differ at step " << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OverlapTest,
                         ::testing::Values(ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kRgcn,
                                           ModelKind::kRgat, ModelKind::kHgt),
                         [](const ::testing::TestParamInfo<ModelKind>& info) {
                           return std::string(ModelKindName(info.param));
                         });

// A parameter that gets no gradient on one rank (as a relation absent from its batch would):
// its bucket, and the buckets after it in starting order, start after backward with zeros for
// it; the result equals the all-reduce after backward, and both ranks agree.
TEST(OverlapTest, AParameterWithoutAGradientOnOneRankStillAverages) {
  std::vector<std::vector<at::Tensor>> got(2, std::vector<at::Tensor>(2));
  for (bool overlap : {false, true}) {
    RunRanks(2, seconds(20), [&](const DistOptions& o) {
      auto comm = Connect(o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      at::Tensor a = at::ones({3}).requires_grad_(), b = at::ones({5}).requires_grad_(),
                 c = at::ones({4}).requires_grad_();
      GradientSynchronizer sync({a, b, c}, {.bucket_bytes = 16, .overlap = overlap});
      ASSERT_EQ(sync.buckets().size(), 3u);
      sync.BeginBackward(**comm);
      // Rank 1 never uses b.
      at::Tensor loss = (a * (o.rank + 1.0)).sum() + (c * c).sum() * 2;
      if (o.rank == 0) loss = loss + (b * 3).sum();
      loss.backward();
      ASSERT_TRUE(sync.AllReduceMean(**comm).ok());
      // Started in backward: c's bucket (the first in starting order) on both ranks, then a's and
      // b's on rank 0; on rank 1, b's (no gradient) and a's (after it) only afterwards.
      EXPECT_EQ(sync.started_in_backward(), !overlap ? 0u : o.rank == 0 ? 3u : 1u);
      got[overlap][o.rank] = at::cat({a.grad(), b.grad(), c.grad()});
    });
  }
  const at::Tensor want = at::cat({at::full({3}, 1.5), at::full({5}, 1.5), at::full({4}, 4.0)});
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(at::equal(got[1][r], got[0][r])) << "rank " << r;
    EXPECT_TRUE(at::equal(got[1][r], want)) << got[1][r];
  }
}

class ReplicaTest : public ::testing::TestWithParam<bool> {};

// Different batches (and dropout) on each rank; after Adam steps with synchronised gradients,
// the replicas hold bit-identical parameters. With different init seeds, the initial broadcast
// is what makes them equal.
TEST_P(ReplicaTest, ReplicasStayBitIdenticalThroughAdamSteps) {
  const bool same_init_seed = GetParam();
  constexpr int kSteps = 5;
  ModelOptions options = SmallModel(ModelKind::kGat);
  options.dropout = 0.3;
  std::vector<at::Tensor> final_params(2), initial_params(2);
  RunRanks(2, seconds(30), [&](const DistOptions& o) {
    auto comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    auto model = MakeModel(options, same_init_seed ? 7 : 7 + o.rank);
    ASSERT_TRUE(model.ok());
    GnnModel& m = **model;
    ASSERT_TRUE(BroadcastParameters(**comm, m.parameters()).ok());
    initial_params[o.rank] = FlatParameters(m).clone();
    GradientSynchronizer sync(m.parameters(), {.bucket_bytes = 1024});
    torch::optim::Adam adam(m.parameters(), torch::optim::AdamOptions(0.01));
    m.train();
    for (int step = 0; step < kSteps; ++step) {
      testing::RandomBatchSpec spec;
      spec.seed = 1000 * o.rank + step;
      spec.num_seeds = 5 + o.rank;  // even the batch sizes differ
      adam.zero_grad();
      Backward(m, testing::MakeRandomBatch(spec));
      ASSERT_TRUE(sync.AllReduceMean(**comm).ok());
      adam.step();
    }
    final_params[o.rank] = FlatParameters(m);
  });
  ASSERT_TRUE(final_params[0].defined() && final_params[1].defined());
  EXPECT_TRUE(at::equal(initial_params[0], initial_params[1]));
  EXPECT_TRUE(at::equal(final_params[0], final_params[1]));
  EXPECT_FALSE(at::equal(final_params[0], initial_params[0]));  // training moved them
}

INSTANTIATE_TEST_SUITE_P(InitSeeds, ReplicaTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "SameInitSeed" : "DifferentInitSeeds");
                         });

// A dead or stuck peer is an UNAVAILABLE error within the timeout, never a hang.
TEST(DeadPeerTest, RankThatNeverJoinsIsAnErrorWithinTheTimeout) {
  DistOptions o;
  o.rank = 0;
  o.world_size = 2;
  o.coordinator = "127.0.0.1:0";
  o.timeout = seconds(1);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(o);
  const double elapsed = SecondsSince(start);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(comm.status().message().find("rank 0 of 2"), std::string::npos) << comm.status();
  EXPECT_GE(elapsed, 0.75);
  EXPECT_LT(elapsed, 1 + 3.0);
}

TEST(DeadPeerTest, UnreachableCoordinatorIsAnErrorWithinTheTimeout) {
  DistOptions o;
  o.rank = 1;
  o.world_size = 2;
  o.coordinator = "127.0.0.1:" + std::to_string(UnusedPort());
  o.timeout = seconds(1);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(o);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(comm.status().message().find(o.coordinator), std::string::npos) << comm.status();
  EXPECT_LT(SecondsSince(start), 1 + 3.0);
}

TEST(DeadPeerTest, PeerThatExitsIsAnErrorAndTheGroupStaysFailed) {
  std::promise<void> peer_gone;
  std::shared_future<void> gone = peer_gone.get_future().share();
  RunRanks(2, seconds(5), [&](const DistOptions& o) {
    auto comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    at::Tensor t = at::ones({16});
    ASSERT_TRUE((*comm)->AllReduceSum(t).ok());
    if (o.rank == 1) {
      comm->reset();  // closes its connections, as a crashed process's would be
      peer_gone.set_value();
      return;
    }
    ASSERT_EQ(gone.wait_for(seconds(10)), std::future_status::ready);
    const Clock::time_point start = Clock::now();
    absl::Status s = (*comm)->AllReduceSum(t);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_NE(s.message().find("gloo all-reduce failed on rank 0 of 2"), std::string::npos) << s;
    EXPECT_LT(SecondsSince(start), 5 + 3.0);
    // Later calls fail at once with the first error.
    const Clock::time_point again = Clock::now();
    absl::Status s2 = (*comm)->Barrier();
    EXPECT_EQ(s2.code(), absl::StatusCode::kFailedPrecondition) << s2;
    EXPECT_NE(s2.message().find("already failed"), std::string::npos) << s2;
    EXPECT_LT(SecondsSince(again), 0.5);
  });
}

TEST(DeadPeerTest, PeerThatStopsTakingPartIsAnErrorWithinTheTimeout) {
  std::promise<void> rank0_done;
  std::shared_future<void> done = rank0_done.get_future().share();
  RunRanks(2, seconds(1), [&](const DistOptions& o) {
    auto comm = Connect(o);
    ASSERT_TRUE(comm.ok()) << comm.status();
    if (o.rank == 1) {  // alive, connected, but never calls the collective
      EXPECT_EQ(done.wait_for(seconds(30)), std::future_status::ready);
      return;
    }
    at::Tensor t = at::ones({16});
    const Clock::time_point start = Clock::now();
    absl::Status s = (*comm)->AllReduceSum(t);
    const double elapsed = SecondsSince(start);
    rank0_done.set_value();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_GE(elapsed, 0.75);
    EXPECT_LT(elapsed, 1 + 3.0);
  });
}

TEST(LocalAddressTest, LoopbackCoordinatorIsReachedFromLoopback) {
  absl::StatusOr<std::string> address = internal::LocalAddressTowards("127.0.0.1", 29500);
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(*address, "127.0.0.1");
  EXPECT_EQ(internal::LocalAddressTowards("no-such-host.invalid", 1).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fanout::trainer
