// Collective communication between trainer ranks: identical initial parameters (broadcast from
// rank 0), bucketed gradient averaging, sums of metric vectors and barriers, over c10d's Gloo
// (CPU tensors) or NCCL (CUDA tensors; compiled in only with a CUDA LibTorch). Every operation
// is bounded by DistOptions::timeout: a dead or stuck peer is an error, never a hang.
// Design and backend notes: docs/training.md.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/wire_counters.h"

namespace torch::autograd {
struct Node;
}

namespace fanout::trainer {

enum class CommBackend {
  kGloo,  // CPU tensors
  kNccl,  // CUDA tensors; needs a CUDA LibTorch at build time (NcclCompiledIn())
};

// "gloo" or "nccl"; INVALID_ARGUMENT lists the valid names.
absl::StatusOr<CommBackend> ParseCommBackend(std::string_view name);
std::string_view CommBackendName(CommBackend backend);
// Whether this build has the NCCL backend (a CUDA LibTorch and nccl.h were found by CMake).
bool NcclCompiledIn();

// Bucket size for gradient all-reduce and parameter broadcast (PyTorch DDP's default).
inline constexpr int64_t kDefaultBucketBytes = int64_t{25} << 20;

struct DistOptions {
  int rank = 0;        // this trainer, in [0, world_size)   (launcher: FANOUT_RANK)
  int world_size = 1;  // trainers in the job                (launcher: FANOUT_WORLD_SIZE)
  // host:port of the rendezvous store (base/rendezvous_store.h). Rank 0 listens on that
  // address only (0 picks a free port, reported through on_coordinator_listening); the others
  // connect to it.
  // (launcher: FANOUT_COORDINATOR)
  std::string coordinator = "127.0.0.1:29500";
  CommBackend backend = CommBackend::kGloo;
  // Bounds the rendezvous (every rank joined) and each collective: past it the call fails with
  // UNAVAILABLE. Size it above the longest gap between two collectives a slow rank can cause
  // (a step plus a sampler hiccup), not the expected step time.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Address this rank's Gloo transport binds to; "" = the local address that routes to the
  // coordinator (right for one NIC; set it on multi-homed hosts).
  std::string local_address;
  int cuda_device = 0;  // NCCL only: the CUDA device index this rank uses
  // Non-empty: the rendezvous refuses ranks that do not present it (the job's auth token).
  std::string auth_token;
  // Rank 0 only, called once with the port its coordinator listens on, before waiting for the
  // other ranks (lets tests and single-machine launches use port 0).
  std::function<void(int port)> on_coordinator_listening;
};

// OK, or INVALID_ARGUMENT naming the bad field: ranks, the host:port form, a positive timeout.
absl::Status ValidateDistOptions(const DistOptions& options);

// `base` with rank, world_size and coordinator taken from FANOUT_RANK, FANOUT_WORLD_SIZE and
// FANOUT_COORDINATOR. With none of them set, `base` is returned unchanged (a single-process
// run); with some but not all, or unparsable ones, INVALID_ARGUMENT names the variable.
absl::StatusOr<DistOptions> DistOptionsFromEnv(DistOptions base = {});

// A collective started by Communicator::StartAllReduceSum. Wait returns once it is done, with the
// status the synchronous call would have returned.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual absl::Status Wait() = 0;
};
// One that already ended with `status` (a collective run at once, or refused before it started).
std::unique_ptr<PendingCollective> FinishedCollective(absl::Status status);

// A fixed group of ranks. Every rank must issue the same collectives in the same order with
// tensors of the same shapes and dtypes. Not thread-safe: one thread at a time issues the
// collectives (GradientSynchronizer's overlap starts all-reduces from autograd's thread while the
// training thread is inside backward(), never at the same time as another call).
// After a failed collective the group is unusable: later calls return FAILED_PRECONDITION with
// the first error, at once.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual CommBackend backend() const = 0;
  // Where tensors passed in must live: CPU for Gloo, the rank's CUDA device for NCCL.
  virtual c10::Device device() const = 0;

  // In place: `tensor` (contiguous, on device()) becomes the element-wise sum over all ranks.
  // Every rank receives bit-identical results. UNAVAILABLE when a peer died or did not take
  // part within the timeout.
  virtual absl::Status AllReduceSum(at::Tensor& tensor) = 0;
  // The same, started and returned at once: `tensor` must stay alive and untouched until Wait.
  // Collectives started this way count in the order they are started. The default runs
  // AllReduceSum now.
  virtual std::unique_ptr<PendingCollective> StartAllReduceSum(at::Tensor& tensor);
  // In place: `tensor` (contiguous, on device()) becomes rank `root`'s tensor on every rank.
  virtual absl::Status Broadcast(at::Tensor& tensor, int root) = 0;
  // Returns once every rank has called Barrier (or fails as above).
  virtual absl::Status Barrier() = 0;
  // Personalised exchange along dim 0: rows [o_q, o_q + send_rows[q]) of `input` go to rank q
  // (o_q = the sum of send_rows before q); returns what every rank sent this one, rank 0's rows
  // first, recv_rows[q] of them from rank q, with input's trailing shape and dtype. `input` is
  // contiguous and on device(), with sum(send_rows) rows. Both vectors have world_size entries,
  // and rank q's send_rows[r] must equal rank r's recv_rows[q] (ExchangeCounts finds them).
  virtual absl::StatusOr<at::Tensor> AllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                                              const std::vector<int64_t>& recv_rows) = 0;
};

// recv[q] = what rank q passes as send[rank()] (one small AllToAll): the counts another
// AllToAll needs.
absl::StatusOr<std::vector<int64_t>> ExchangeCounts(Communicator& comm, const std::vector<int64_t>& send);

// Joins the group `options` describes and returns once every rank has joined (full mesh
// connected). world_size == 1 needs no sockets: the result is a one-rank communicator whose
// collectives return at once. Errors: INVALID_ARGUMENT (options), FAILED_PRECONDITION (NCCL not
// compiled in, or no such CUDA device), UNAVAILABLE (coordinator unreachable, or not every
// rank joined within the timeout). Defined in c10d_backend.cc, beside the c10d backend it starts
// for world_size > 1 (dist.cc knows nothing of c10d).
absl::StatusOr<std::unique_ptr<Communicator>> Connect(const DistOptions& options);

// `inner`, its collectives' bytes added to `wire` (base/wire_counters.h) as the algorithms move
// them; `inner` itself when `wire` is null or the group is one rank.
std::unique_ptr<Communicator> CountWireBytes(std::unique_ptr<Communicator> inner,
                                             std::shared_ptr<base::WireCounters> wire);

// The one-rank group: rank 0 of 1 on `device`; every collective is a no-op.
std::unique_ptr<Communicator> MakeSoloCommunicator(CommBackend backend, c10::Device device);

// Consecutive runs of `tensors` (same dtype and device) of at most `bucket_bytes` each (a tensor
// larger than that gets a bucket of its own), as lists of indices into `tensors`. The same
// inputs give the same buckets on every rank.
std::vector<std::vector<size_t>> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                             int64_t bucket_bytes);

// Overwrites `params` (e.g. model->parameters()) on every rank with rank `root`'s values,
// bucketed. Call once after building the model, before the first step. The buckets travel on
// comm.device(), so a model on a GPU can use Gloo (the CPU) as well as NCCL.
absl::Status BroadcastParameters(Communicator& comm, const std::vector<at::Tensor>& params,
                                 int root = 0, int64_t bucket_bytes = kDefaultBucketBytes);

// Element-wise sum of `values` over all ranks (float64), e.g. {correct, count} for a weighted
// accuracy.
absl::StatusOr<std::vector<double>> AllReduceSum(Communicator& comm,
                                                 const std::vector<double>& values);

struct GradSyncOptions {
  int64_t bucket_bytes = kDefaultBucketBytes;  // per all-reduce call
  // Start each bucket's all-reduce during backward, as soon as every gradient in it is ready
  // (PyTorch DDP's scheme), instead of all of them after backward. See BeginBackward.
  bool overlap = false;
  // The dtype gradients cross the network in: float32 parameters' buckets are all-reduced as
  // float16 when set (PyTorch DDP's fp16 compression hook: each rank divides by the world size
  // first, so the sum cannot overflow; half the bytes, about 3 significant digits). Other
  // parameters, and kFloat, keep their own dtype.
  at::ScalarType wire_dtype = at::kFloat;
};

// Averages gradients over the ranks like PyTorch DDP, after backward() and before the optimizer
// step: the gradients are flattened into buckets in parameter order (fixed at construction, the
// same on every rank), each bucket is all-reduced once, divided by world_size and copied back.
// A parameter without a gradient on a rank contributes zeros and gets the averaged gradient.
// Keeps one flat buffer per bucket between steps, on the communicator's device (Gloo's is the
// CPU, also for a model on a GPU: gradients are staged there and back). Not thread-safe.
//
// With options.overlap, BeginBackward before backward() arms hooks on the parameters' gradient
// accumulators: when autograd has written the last gradient of a bucket, the bucket is filled and
// its all-reduce started, while backward goes on with the layers below. Buckets start strictly in
// descending index order (the last layers' gradients come first), so every rank starts the same
// collectives in the same order whatever order its autograd finishes them in; a bucket with a
// parameter that got no gradient (a relation absent from a rank's batch) starts, with zeros for
// it, in AllReduceMean, and so do the buckets after it in that order. The buckets' contents are
// the same as without overlap, so the averaged gradients are bit-identical.
class GradientSynchronizer {
 public:
  explicit GradientSynchronizer(std::vector<at::Tensor> params, GradSyncOptions options = {});
  ~GradientSynchronizer();

  // With options.overlap (else a no-op): the next backward pass's gradients are the ones to
  // average, starting on `comm` as they become ready. AllReduceMean finishes the step.
  void BeginBackward(Communicator& comm);
  // Errors as Communicator's. With world_size 1 the gradients are left as they are.
  absl::Status AllReduceMean(Communicator& comm);

  // Indices into the parameter list, one list per bucket (all-reduce call).
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }
  // How many buckets the last step started during backward (overlap), the rest after it.
  size_t started_in_backward() const { return started_in_backward_; }

 private:
  // Copies bucket b's gradients (zeros for a parameter without one) into its buffer on `comm`'s
  // device, in the wire dtype (divided by comm's world size when it is narrower than the
  // gradients).
  void Fill(size_t b, const Communicator& comm);
  at::ScalarType WireDtype(const at::Tensor& param) const;
  // Overlap: starts the buckets whose turn has come and whose gradients are all written.
  void StartReady();
  void OnGradientReady(size_t param);

  std::vector<at::Tensor> params_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<at::Tensor> buffers_;  // one flat tensor per bucket, allocated on first use
  GradSyncOptions options_;
  // Overlap: the accumulators carrying the hooks (kept alive: autograd holds them weakly), each
  // parameter's bucket, and the step's state under mu_.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::shared_ptr<GradientSynchronizer*> self_ = std::make_shared<GradientSynchronizer*>(this);  // hooks' token
  std::vector<size_t> bucket_of_;
  std::mutex mu_;
  Communicator* armed_ = nullptr;        // set by BeginBackward until AllReduceMean
  std::vector<size_t> waiting_;          // per bucket: parameters whose gradient is not written yet
  size_t started_ = 0;                   // buckets started, from the last index down
  std::vector<std::unique_ptr<PendingCollective>> pending_;  // per bucket
  absl::Status start_error_;             // a bucket that could not be filled or started
  size_t started_in_backward_ = 0;
};

}  // namespace fanout::trainer
