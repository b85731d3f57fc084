#include "trainer/dist.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/ip_config.h"
#include "base/job_env.h"
#include "base/status.h"
#include "base/strings.h"
#include "trainer/comm_util.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// The world of one: nothing to exchange.
class SoloCommunicator final : public Communicator {
 public:
  SoloCommunicator(CommBackend backend, c10::Device device) : backend_(backend), device_(device) {}
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  CommBackend backend() const override { return backend_; }
  c10::Device device() const override { return device_; }
  absl::Status AllReduceSum(at::Tensor&) override { return absl::OkStatus(); }
  absl::Status Broadcast(at::Tensor&, int root) override {
    return root == 0 ? absl::OkStatus()
                     : absl::InvalidArgumentError(
                           StrCat("broadcast root ", root, " is not a rank in [0, 1)"));
  }
  absl::Status Barrier() override { return absl::OkStatus(); }
  absl::StatusOr<at::Tensor> AllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                                      const std::vector<int64_t>& recv_rows) override {
    RETURN_IF_ERROR(internal::CheckAllToAll(input, send_rows, recv_rows, 1, device_));
    if (send_rows[0] != recv_rows[0]) {
      return absl::InvalidArgumentError(StrCat("all-to-all: rank 0 sends itself ", send_rows[0], " rows but expects ",
                                               recv_rows[0]));
    }
    return input.clone();
  }

 private:
  const CommBackend backend_;
  const c10::Device device_;
};

// Another communicator whose collectives' bytes are added to the job's wire counters, as the
// algorithms move them: a ring all-reduce of B bytes over N ranks sends and receives 2 (N - 1) / N
// B on each rank; a broadcast's root sends B to each other rank, which receives B once; an
// all-to-all moves exactly the rows for other ranks. (With several trainers a machine, the bytes
// between trainers of one machine count too: an upper bound on what crosses its link.)
class CountingCommunicator final : public Communicator {
 public:
  CountingCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<base::WireCounters> wire)
      : inner_(std::move(inner)), wire_(std::move(wire)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  CommBackend backend() const override { return inner_->backend(); }
  c10::Device device() const override { return inner_->device(); }
  absl::Status AllReduceSum(at::Tensor& tensor) override {
    CountRing(tensor);
    return inner_->AllReduceSum(tensor);
  }
  std::unique_ptr<PendingCollective> StartAllReduceSum(at::Tensor& tensor) override {
    CountRing(tensor);
    return inner_->StartAllReduceSum(tensor);
  }
  absl::Status Broadcast(at::Tensor& tensor, int root) override {
    const int64_t b = static_cast<int64_t>(tensor.nbytes());
    wire_->Add(base::WireKind::kCollectives, rank() == root ? b * (world_size() - 1) : 0, rank() == root ? 0 : b);
    return inner_->Broadcast(tensor, root);
  }
  absl::Status Barrier() override { return inner_->Barrier(); }
  absl::StatusOr<at::Tensor> AllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                                      const std::vector<int64_t>& recv_rows) override {
    const int64_t row = input.dim() == 0 || input.size(0) == 0 ? 0 : static_cast<int64_t>(input.nbytes()) / input.size(0);
    int64_t sent = 0, received = 0;
    for (int q = 0; q < world_size() && q < static_cast<int>(send_rows.size()) && q < static_cast<int>(recv_rows.size());
         ++q) {
      if (q == rank()) continue;
      sent += send_rows[q] * row;
      received += recv_rows[q] * row;
    }
    wire_->Add(base::WireKind::kCollectives, sent, received);
    return inner_->AllToAll(input, send_rows, recv_rows);
  }

 private:
  void CountRing(const at::Tensor& tensor) {
    const int n = world_size();
    const int64_t b = static_cast<int64_t>(tensor.nbytes()) * 2 * (n - 1) / std::max(1, n);
    wire_->Add(base::WireKind::kCollectives, b, b);
  }
  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<base::WireCounters> wire_;
};

absl::StatusOr<int> EnvInt(const char* name, const char* value) {
  const char* end = value + std::strlen(value);
  int out = 0;
  auto [ptr, ec] = std::from_chars(value, end, out);
  if (ec != std::errc() || ptr != end || ptr == value) {
    return absl::InvalidArgumentError(StrCat(name, "='", value, "' is not an integer"));
  }
  return out;
}

int64_t BucketNumel(const std::vector<at::Tensor>& tensors, const std::vector<size_t>& bucket) {
  int64_t n = 0;
  for (size_t i : bucket) n += tensors[i].numel();
  return n;
}

}  // namespace

absl::StatusOr<CommBackend> ParseCommBackend(std::string_view name) {
  if (name == "gloo") return CommBackend::kGloo;
  if (name == "nccl") return CommBackend::kNccl;
  return absl::InvalidArgumentError(StrCat("unknown backend '", name, "': expected gloo or nccl"));
}

std::string_view CommBackendName(CommBackend backend) {
  return backend == CommBackend::kNccl ? "nccl" : "gloo";
}

bool NcclCompiledIn() {
#ifdef FANOUT_WITH_NCCL
  return true;
#else
  return false;
#endif
}

absl::Status ValidateDistOptions(const DistOptions& o) {
  if (o.world_size < 1) {
    return absl::InvalidArgumentError(StrCat("world size ", o.world_size, " is not >= 1"));
  }
  if (o.rank < 0 || o.rank >= o.world_size) {
    return absl::InvalidArgumentError(
        StrCat("rank ", o.rank, " is not in [0, world size ", o.world_size, ")"));
  }
  if (o.timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        StrCat("communication timeout ", o.timeout.count(), " ms is not positive"));
  }
  if (o.world_size > 1) {
    ASSIGN_OR_RETURN(internal::Endpoint ep, internal::ParseEndpoint(o.coordinator));
    if (ep.port == 0 && o.rank != 0) {
      return absl::InvalidArgumentError(StrCat("coordinator '", o.coordinator, "': rank ", o.rank,
                                               " needs the port rank 0 listens on"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DistOptions> DistOptionsFromEnv(DistOptions base) {
  ASSIGN_OR_RETURN(const base::JobEnv job, base::JobEnv::FromEnvironment());
  const bool rank = job.rank >= 0, world = job.world_size >= 0, coordinator = !job.coordinator.empty();
  if (!rank && !world && !coordinator) {
    // Started by another launcher (torchrun, a Slurm or Kubernetes wrapper): torchrun's names.
    // torchrun's own store already listens on MASTER_PORT, so fanout's rendezvous takes the
    // next port.
    auto set = [](const std::string& v) { return v.empty() ? nullptr : v.c_str(); };
    const char* t_rank = set(job.foreign.rank);
    const char* t_world = set(job.foreign.world_size);
    const char* addr = set(job.foreign.master_addr);
    const char* port = set(job.foreign.master_port);
    if (t_rank == nullptr && t_world == nullptr) return base;
    if (t_rank == nullptr || t_world == nullptr || addr == nullptr || port == nullptr) {
      return absl::InvalidArgumentError(StrCat(
          "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT must be set together (or fanout's FANOUT_RANK, "
          "FANOUT_WORLD_SIZE, FANOUT_COORDINATOR); missing:",
          t_rank == nullptr ? " RANK" : "", t_world == nullptr ? " WORLD_SIZE" : "", addr == nullptr ? " MASTER_ADDR" : "",
          port == nullptr ? " MASTER_PORT" : ""));
    }
    ASSIGN_OR_RETURN(base.rank, EnvInt("RANK", t_rank));
    ASSIGN_OR_RETURN(base.world_size, EnvInt("WORLD_SIZE", t_world));
    ASSIGN_OR_RETURN(const int master_port, EnvInt("MASTER_PORT", port));
    if (master_port < 1 || master_port >= 65535) {
      return absl::InvalidArgumentError(StrCat("MASTER_PORT=", port, ": expected a port in [1, 65534]"));
    }
    base.coordinator = base::HostPort(addr, master_port + 1);
    RETURN_IF_ERROR(ValidateDistOptions(base));
    return base;
  }
  if (!rank || !world || !coordinator) {
    return absl::InvalidArgumentError(StrCat(
        "FANOUT_RANK, FANOUT_WORLD_SIZE and FANOUT_COORDINATOR must be set together; missing:",
        !rank ? " FANOUT_RANK" : "", !world ? " FANOUT_WORLD_SIZE" : "", !coordinator ? " FANOUT_COORDINATOR" : ""));
  }
  base.rank = job.rank;
  base.world_size = job.world_size;
  base.coordinator = job.coordinator;
  RETURN_IF_ERROR(ValidateDistOptions(base));
  return base;
}

std::unique_ptr<Communicator> CountWireBytes(std::unique_ptr<Communicator> inner,
                                             std::shared_ptr<base::WireCounters> wire) {
  if (wire == nullptr || inner->world_size() == 1) return inner;
  return std::make_unique<CountingCommunicator>(std::move(inner), std::move(wire));
}

std::unique_ptr<Communicator> MakeSoloCommunicator(CommBackend backend, c10::Device device) {
  return std::make_unique<SoloCommunicator>(backend, device);
}

std::vector<std::vector<size_t>> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                             int64_t bucket_bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const int64_t size = t.numel() * static_cast<int64_t>(t.element_size());
    const bool joins = !buckets.empty() && bytes + size <= bucket_bytes &&
                       tensors[buckets.back().front()].scalar_type() == t.scalar_type() &&
                       tensors[buckets.back().front()].device() == t.device();
    if (!joins) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += size;
  }
  return buckets;
}

absl::Status BroadcastParameters(Communicator& comm, const std::vector<at::Tensor>& params,
                                 int root, int64_t bucket_bytes) {
  if (root < 0 || root >= comm.world_size()) {
    return absl::InvalidArgumentError(
        StrCat("broadcast root ", root, " is not a rank in [0, ", comm.world_size(), ")"));
  }
  if (comm.world_size() == 1) return absl::OkStatus();
  try {
    at::NoGradGuard no_grad;
    for (const std::vector<size_t>& bucket : PlanBuckets(params, bucket_bytes)) {
      std::vector<at::Tensor> flat;
      flat.reserve(bucket.size());
      for (size_t i : bucket) flat.push_back(params[i].reshape({-1}));
      // On the communicator's device: Gloo's is the CPU, also for a model on a GPU.
      at::Tensor buffer = at::cat(flat).to(comm.device());
      RETURN_IF_ERROR(comm.Broadcast(buffer, root));
      int64_t offset = 0;
      for (size_t i : bucket) {
        const at::Tensor& p = params[i];
        p.copy_(buffer.narrow(0, offset, p.numel()).view_as(p));
        offset += p.numel();
      }
    }
  } catch (const c10::Error& e) {
    return TorchErrorToStatus("broadcasting parameters", e);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ExchangeCounts(Communicator& comm, const std::vector<int64_t>& send) {
  const int w = comm.world_size();
  if (static_cast<int>(send.size()) != w) {
    return absl::InvalidArgumentError(StrCat("exchanging counts: ", send.size(), " counts for ", w, " ranks"));
  }
  if (w == 1) return send;
  const std::vector<int64_t> one(w, 1);
  at::Tensor t;
  RETURN_IF_ERROR(CatchTorch("exchanging counts", [&] { t = at::tensor(send, at::kLong).to(comm.device()); }));
  ASSIGN_OR_RETURN(at::Tensor got, comm.AllToAll(t, one, one));
  got = got.cpu();
  return std::vector<int64_t>(got.data_ptr<int64_t>(), got.data_ptr<int64_t>() + w);
}

absl::StatusOr<std::vector<double>> AllReduceSum(Communicator& comm,
                                                 const std::vector<double>& values) {
  if (values.empty() || comm.world_size() == 1) return values;
  try {
    at::Tensor t = at::tensor(at::ArrayRef<double>(values), at::kDouble).to(comm.device());
    RETURN_IF_ERROR(comm.AllReduceSum(t));
    t = t.cpu();
    const double* sums = t.data_ptr<double>();
    return std::vector<double>(sums, sums + values.size());
  } catch (const c10::Error& e) {
    return TorchErrorToStatus("summing metrics over ranks", e);
  }
}

namespace {

class DoneCollective final : public PendingCollective {
 public:
  explicit DoneCollective(absl::Status status) : status_(std::move(status)) {}
  absl::Status Wait() override { return status_; }

 private:
  absl::Status status_;
};

}  // namespace

std::unique_ptr<PendingCollective> FinishedCollective(absl::Status status) {
  return std::make_unique<DoneCollective>(std::move(status));
}

std::unique_ptr<PendingCollective> Communicator::StartAllReduceSum(at::Tensor& tensor) {
  return FinishedCollective(AllReduceSum(tensor));
}

GradientSynchronizer::GradientSynchronizer(std::vector<at::Tensor> params, GradSyncOptions options)
    : params_(std::move(params)), buckets_(PlanBuckets(params_, options.bucket_bytes)), options_(options) {
  buffers_.resize(buckets_.size());
  pending_.resize(buckets_.size());
  if (!options_.overlap) return;
  bucket_of_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t i : buckets_[b]) bucket_of_[i] = b;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad() || !params_[i].is_leaf()) continue;  // never gets a gradient: zeros
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params_[i]);
    // The hook outlives this object if a graph holding the accumulator does: it checks the token.
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [self = std::weak_ptr<GradientSynchronizer*>(self_), i](const torch::autograd::variable_list& outputs,
                                                               const torch::autograd::variable_list&) {
          if (std::shared_ptr<GradientSynchronizer*> s = self.lock()) (*s)->OnGradientReady(i);
          return outputs;
        }));
    accumulators_.push_back(std::move(acc));
  }
}

GradientSynchronizer::~GradientSynchronizer() {
  self_.reset();  // the hooks do nothing from here on
  // A step left unfinished (its backward failed): its collectives must end before the buffers.
  for (std::unique_ptr<PendingCollective>& p : pending_) {
    if (p != nullptr) p->Wait().IgnoreError();
  }
}

void GradientSynchronizer::BeginBackward(Communicator& comm) {
  if (!options_.overlap || comm.world_size() == 1) return;
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = &comm;
  waiting_.assign(buckets_.size(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) waiting_[b] = buckets_[b].size();
  started_ = 0;
  start_error_ = absl::OkStatus();
}

void GradientSynchronizer::OnGradientReady(size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  if (armed_ == nullptr) return;  // a backward pass outside a training step
  size_t& w = waiting_[bucket_of_[param]];
  if (w > 0) --w;
  StartReady();
}

at::ScalarType GradientSynchronizer::WireDtype(const at::Tensor& param) const {
  return param.scalar_type() == at::kFloat ? options_.wire_dtype : param.scalar_type();
}

void GradientSynchronizer::Fill(size_t b, const Communicator& comm) {
  const c10::Device device = comm.device();
  const std::vector<size_t>& bucket = buckets_[b];
  at::Tensor& buffer = buffers_[b];
  if (!buffer.defined()) {
    const at::Tensor& first = params_[bucket.front()];
    buffer = at::empty({BucketNumel(params_, bucket)}, at::TensorOptions().dtype(WireDtype(first)).device(device));
  }
  const bool narrowed = buffer.scalar_type() != params_[bucket.front()].scalar_type();
  int64_t offset = 0;
  for (size_t i : bucket) {
    const at::Tensor& grad = params_[i].grad();
    at::Tensor slice = buffer.narrow(0, offset, params_[i].numel());
    if (grad.defined()) {
      // A narrower wire dtype: each rank's share of the mean, so the sum stays in range.
      slice.copy_(narrowed ? grad.reshape({-1}) / comm.world_size() : grad.reshape({-1}));
    } else {
      slice.zero_();
    }
    offset += params_[i].numel();
  }
}

// Under mu_. Bucket B - 1 - started_ is next; it starts once no gradient of it is outstanding.
void GradientSynchronizer::StartReady() {
  while (started_ < buckets_.size() && start_error_.ok()) {
    const size_t b = buckets_.size() - 1 - started_;
    if (waiting_[b] > 0) return;
    try {
      at::NoGradGuard no_grad;
      Fill(b, *armed_);
      pending_[b] = armed_->StartAllReduceSum(buffers_[b]);
    } catch (const c10::Error& e) {
      start_error_ = TorchErrorToStatus("starting a gradient all-reduce", e);
      return;
    }
    ++started_;
  }
}

absl::Status GradientSynchronizer::AllReduceMean(Communicator& comm) {
  RECORD_USER_SCOPE("fanout::gradient_allreduce");
  if (comm.world_size() == 1) return absl::OkStatus();
  try {
    at::NoGradGuard no_grad;
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_in_backward_ = armed_ != nullptr ? started_ : 0;
      if (armed_ != nullptr) {
        // What backward did not start: buckets with a parameter that got no gradient, and the
        // ones after them in starting order.
        std::fill(waiting_.begin(), waiting_.end(), 0);
        StartReady();
        armed_ = nullptr;
      } else {
        // Not overlapped: every bucket now, in the same (descending) order.
        for (size_t k = 0; k < buckets_.size(); ++k) {
          const size_t b = buckets_.size() - 1 - k;
          Fill(b, comm);
          pending_[b] = comm.StartAllReduceSum(buffers_[b]);
        }
      }
      RETURN_IF_ERROR(start_error_);
    }
    absl::Status status;
    for (size_t k = 0; k < buckets_.size(); ++k) {
      const size_t b = buckets_.size() - 1 - k;
      if (pending_[b] != nullptr) status.Update(pending_[b]->Wait());
      pending_[b].reset();
    }
    RETURN_IF_ERROR(status);
    for (size_t b = 0; b < buckets_.size(); ++b) {
      at::Tensor& buffer = buffers_[b];
      if (buffer.scalar_type() == params_[buckets_[b].front()].scalar_type()) buffer.div_(comm.world_size());
      int64_t offset = 0;
      for (size_t i : buckets_[b]) {
        at::Tensor& p = params_[i];
        const at::Tensor mean = buffer.narrow(0, offset, p.numel()).view_as(p);
        if (p.grad().defined()) {
          p.mutable_grad().copy_(mean);
        } else {
          p.mutable_grad() = mean.clone();
        }
        offset += p.numel();
      }
    }
  } catch (const c10::Error& e) {
    return TorchErrorToStatus("averaging gradients", e);
  }
  return absl::OkStatus();
}

}  // namespace fanout::trainer
