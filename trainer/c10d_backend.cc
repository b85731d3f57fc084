#include "trainer/c10d_backend.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <utility>
#include <vector>
#ifdef FANOUT_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "base/rendezvous_store.h"
#include "base/status.h"
#include "base/strings.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace internal {
namespace {

using base::StoreClient;
using base::StoreServer;
using base::StrCat;

std::string ErrorText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

// c10d's view of fanout's rendezvous store (base/rendezvous_store.h): rank 0 owns the
// server, every rank a client. Errors are thrown as c10::Error, as c10d expects of a store.
class RendezvousStore final : public c10d::Store {
 public:
  // `host`, `port` and `token` are where `client` is connected, for clone().
  RendezvousStore(std::unique_ptr<StoreServer> server, std::unique_ptr<StoreClient> client,
                  std::chrono::milliseconds timeout, std::string host, int port, std::string token)
      : Store(timeout),
        server_(std::move(server)),
        client_(std::move(client)),
        host_(std::move(host)),
        port_(port),
        token_(std::move(token)) {}

#if FANOUT_LIBTORCH_2
  // Newer c10d gives a clone to a thread of its own (NCCL's watchdog): another connection to the
  // same server, owning nothing.
  c10::intrusive_ptr<c10d::Store> clone() override {
    return c10::make_intrusive<RendezvousStore>(nullptr, Value(StoreClient::Connect(host_, port_, token_, timeout_)),
                                                timeout_, host_, port_, token_);
  }
#endif

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    Check(client_->Set(key, Text(value)));
  }
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& current,
                                  const std::vector<uint8_t>& desired) override {
    return Bytes(Value(client_->CompareSet(key, Text(current), Text(desired))));
  }
  std::vector<uint8_t> get(const std::string& key) override { return Bytes(Value(client_->Get(key, timeout_))); }
  int64_t add(const std::string& key, int64_t value) override { return Value(client_->Add(key, value)); }
  bool deleteKey(const std::string& key) override { return Value(client_->Delete(key)); }
  bool check(const std::vector<std::string>& keys) override { return Value(client_->Check(keys)); }
  int64_t getNumKeys() override { return Value(client_->NumKeys()); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    Check(client_->Wait(keys, timeout));
  }

 private:
  static std::string Text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
  static std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
  static void Check(const absl::Status& s) { TORCH_CHECK(s.ok(), std::string(s.message())); }
  template <typename T>
  static T Value(absl::StatusOr<T> r) {
    Check(r.status());
    return *std::move(r);
  }

  std::unique_ptr<StoreServer> server_;  // rank 0 only; lives as long as the group's store
  std::unique_ptr<StoreClient> client_;
  std::string host_;
  int port_;
  std::string token_;
};

// One c10d process group (Gloo or NCCL) plus the store it rendezvoused through.
template <typename Group>
class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(const DistOptions& options, c10::Device device,
                   c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group)
      : rank_(options.rank),
        world_size_(options.world_size),
        backend_(options.backend),
        device_(device),
        timeout_(options.timeout),
        store_(std::move(store)),
        group_(std::move(group)) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  CommBackend backend() const override { return backend_; }
  c10::Device device() const override { return device_; }

  absl::Status AllReduceSum(at::Tensor& tensor) override {
    return Run("all-reduce", tensor, [&](std::vector<at::Tensor>& tensors) {
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      opts.timeout = timeout_;
      return group_->allreduce(tensors, opts);
    });
  }

  std::unique_ptr<PendingCollective> StartAllReduceSum(at::Tensor& tensor) override {
    if (absl::Status s = Check("all-reduce", tensor); !s.ok()) return FinishedCollective(std::move(s));
    try {
      std::vector<at::Tensor> tensors{tensor};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      opts.timeout = timeout_;
      return std::make_unique<Pending>(this, group_->allreduce(tensors, opts));
    } catch (const std::exception& e) {
      return FinishedCollective(Fail("all-reduce", e));
    }
  }

  absl::Status Broadcast(at::Tensor& tensor, int root) override {
    if (root < 0 || root >= world_size_) {
      return absl::InvalidArgumentError(
          StrCat("broadcast root ", root, " is not a rank in [0, ", world_size_, ")"));
    }
    return Run("broadcast", tensor, [&](std::vector<at::Tensor>& tensors) {
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      opts.rootTensor = 0;
      opts.timeout = timeout_;
      return group_->broadcast(tensors, opts);
    });
  }

  absl::StatusOr<at::Tensor> AllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                                      const std::vector<int64_t>& recv_rows) override {
    RETURN_IF_ERROR(CheckAllToAll(input, send_rows, recv_rows, world_size_, device_));
    int64_t rows = 0;
    for (int64_t n : recv_rows) rows += n;
    std::vector<int64_t> shape = input.sizes().vec();
    shape[0] = rows;
    at::Tensor output;
    try {
      output = at::empty(shape, input.options());
    } catch (const std::exception& e) {
      return absl::ResourceExhaustedError(StrCat("all-to-all: cannot allocate ", rows, " rows: ", ErrorText(e)));
    }
    at::Tensor in = input;
    std::vector<int64_t> send = send_rows, recv = recv_rows;
    RETURN_IF_ERROR(Run("all-to-all", output, [&](std::vector<at::Tensor>& tensors) {
      c10d::AllToAllOptions opts;
      opts.timeout = timeout_;
      return group_->alltoall_base(tensors[0], in, recv, send, opts);
    }));
    return output;
  }

  // A one-element all-reduce, read back on the host: the same code and the same timeout for
  // both backends (c10d's NCCL barrier guesses devices from ranks).
  absl::Status Barrier() override {
    at::Tensor one = at::ones({1}, at::TensorOptions().dtype(at::kFloat).device(device_));
    if (absl::Status s = AllReduceSum(one); !s.ok()) return s;
    try {
      one.item<float>();
    } catch (const std::exception& e) {
      return Fail("barrier", e);
    }
    return absl::OkStatus();
  }

 private:
  // A started collective: Wait bounds the wait by the timeout, as Run does.
  class Pending final : public PendingCollective {
   public:
    Pending(C10dCommunicator* comm, c10::intrusive_ptr<c10d::Work> work) : comm_(comm), work_(std::move(work)) {}
    ~Pending() override {
      if (work_) Wait().IgnoreError();
    }
    absl::Status Wait() override {
      if (!work_) return absl::OkStatus();
      c10::intrusive_ptr<c10d::Work> work = std::move(work_);
      try {
        work->wait(comm_->timeout_);
      } catch (const std::exception& e) {
        return comm_->Fail("all-reduce", e);
      }
      return absl::OkStatus();
    }

   private:
    C10dCommunicator* comm_;
    c10::intrusive_ptr<c10d::Work> work_;
  };

  // OK, or why `op` cannot run on `tensor` (a failed group, or a tensor it cannot take).
  absl::Status Check(std::string_view op, const at::Tensor& tensor) const {
    if (!failed_.ok()) {
      return absl::FailedPreconditionError(
          StrCat(op, " on a process group that already failed: ", failed_.message()));
    }
    if (!tensor.defined() || !tensor.is_contiguous() || tensor.device() != device_) {
      return absl::InvalidArgumentError(
          StrCat(op, ": the tensor must be defined, contiguous and on ", device_.str(), ", it is ",
                 tensor.defined() ? tensor.device().str() : "undefined",
                 tensor.defined() && !tensor.is_contiguous() ? " (not contiguous)" : ""));
    }
    return absl::OkStatus();
  }

  template <typename Issue>
  absl::Status Run(std::string_view op, at::Tensor& tensor, Issue&& issue) {
    RETURN_IF_ERROR(Check(op, tensor));
    try {
      std::vector<at::Tensor> tensors{tensor};
      auto work = issue(tensors);
      // The backend bounds the operation itself; bounding the wait as well keeps a call from
      // blocking past the timeout whatever the backend does.
      work->wait(timeout_);
    } catch (const std::exception& e) {
      return Fail(op, e);
    }
    return absl::OkStatus();
  }

  absl::Status Fail(std::string_view op, const std::exception& e) {
    failed_ = absl::UnavailableError(StrCat(CommBackendName(backend_), " ", op, " failed on rank ",
                                            rank_, " of ", world_size_,
                                            " (a peer exited, or did not take part within the ",
                                            timeout_.count(), " ms timeout): ", ErrorText(e)));
    return failed_;
  }

  const int rank_;
  const int world_size_;
  const CommBackend backend_;
  const c10::Device device_;
  const std::chrono::milliseconds timeout_;
  absl::Status failed_;  // the first failure; the group is unusable after it
  // Destroyed in reverse order: the group before the store it rendezvoused through.
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Group> group_;
};

absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(
    const DistOptions& o, const c10::intrusive_ptr<c10d::Store>& store,
    const std::string& local_address) {
  auto opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(local_address));
  // The constructor connects the full mesh through the store, bounded by the store's timeout.
  auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.world_size, opts);
  return std::unique_ptr<Communicator>(new C10dCommunicator<c10d::ProcessGroupGloo>(
      o, c10::Device(c10::kCPU), store, std::move(group)));
}

#ifdef FANOUT_WITH_NCCL
absl::StatusOr<std::unique_ptr<Communicator>> ConnectNccl(
    const DistOptions& o, const c10::intrusive_ptr<c10d::Store>& store) {
  const int count = static_cast<int>(c10::cuda::device_count());
  if (o.cuda_device < 0 || o.cuda_device >= count) {
    return absl::FailedPreconditionError(StrCat("rank ", o.rank, ": CUDA device ", o.cuda_device,
                                                " does not exist (", count, " visible)"));
  }
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(o.cuda_device));
  // Without blocking wait, c10d's NCCL wait() only orders streams and a dead peer hangs the GPU
  // stream; with it, wait() blocks up to the timeout and aborts the communicator past it.
  // (NCCL_* is the LibTorch 1.x name, TORCH_NCCL_* the 2.x one.) A user's setting is kept.
  // fanout-train sets both before any thread starts; this covers other callers of Connect.
  setenv("NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = o.timeout;
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, o.rank, o.world_size, opts);
  auto comm = std::unique_ptr<Communicator>(new C10dCommunicator<c10d::ProcessGroupNCCL>(
      o, c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(o.cuda_device)), store,
      std::move(group)));
  // NCCL creates its communicator at the first collective; make that happen here, so that
  // Connect returns only once every rank has joined, as with Gloo.
  if (absl::Status s = comm->Barrier(); !s.ok()) return s;
  return comm;
}
#endif

}  // namespace

absl::StatusOr<std::string> LocalAddressTowards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port == 0 ? 9 : port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        StrCat("cannot resolve coordinator host '", host, "': ", gai_strerror(rc)));
  }
  std::string error = "no usable address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    char text[INET6_ADDRSTRLEN] = {};
    const bool ok =
        connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(
            local.ss_family,
            local.ss_family == AF_INET
                ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr),
            text, sizeof(text)) != nullptr;
    if (!ok) error = std::strerror(errno);
    close(fd);
    if (ok) {
      freeaddrinfo(found);
      return std::string(text);
    }
  }
  freeaddrinfo(found);
  return absl::UnavailableError(
      StrCat("no local address routes to coordinator host '", host, "': ", error));
}

absl::StatusOr<std::unique_ptr<Communicator>> ConnectC10d(const DistOptions& o,
                                                          const Endpoint& coordinator) {
  std::string local_address = o.local_address;
  if (local_address.empty() && o.backend == CommBackend::kGloo) {
    ASSIGN_OR_RETURN(local_address, LocalAddressTowards(coordinator.host, coordinator.port));
  }
  const std::string where = StrCat("rank ", o.rank, " of ", o.world_size, " joining through ",
                                   coordinator.host, ":", coordinator.port);
  std::unique_ptr<StoreServer> server;
  int port = coordinator.port;
  if (o.rank == 0) {
    // Machine 0's address only (FANOUT_COORDINATOR's host), and the job's token when it has one.
    ASSIGN_OR_RETURN(server, StoreServer::Start(coordinator.host, coordinator.port, o.auth_token));
    port = server->port();
    if (o.on_coordinator_listening) o.on_coordinator_listening(port);
  }
  absl::StatusOr<std::unique_ptr<StoreClient>> client =
      StoreClient::Connect(coordinator.host, port, o.auth_token, o.timeout);
  if (!client.ok()) {
    return absl::Status(client.status().code(), StrCat(where, ": ", client.status().message()));
  }
  try {
    auto tcp_store = c10::make_intrusive<RendezvousStore>(std::move(server), std::move(*client), o.timeout,
                                                          coordinator.host, port, o.auth_token);
    auto store =
        c10::make_intrusive<c10d::PrefixStore>(std::string(CommBackendName(o.backend)), tcp_store);
    switch (o.backend) {
      case CommBackend::kGloo:
        return ConnectGloo(o, store, local_address);
      case CommBackend::kNccl:
#ifdef FANOUT_WITH_NCCL
        return ConnectNccl(o, store);
#else
        break;
#endif
    }
    return absl::FailedPreconditionError("this build has no NCCL backend");
  } catch (const std::exception& e) {
    return absl::UnavailableError(StrCat(where, ": not every rank joined within ",
                                         o.timeout.count(),
                                         " ms, or the coordinator is "
                                         "unreachable: ",
                                         ErrorText(e)));
  }
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<Communicator>> Connect(const DistOptions& options) {
  RETURN_IF_ERROR(ValidateDistOptions(options));
  if (options.backend == CommBackend::kNccl && !NcclCompiledIn()) {
    return absl::FailedPreconditionError(
        "the nccl backend is not compiled in: this build uses a CPU-only LibTorch (build "
        "against a CUDA LibTorch, docs/training.md, or train with --device cpu)");
  }
  if (options.world_size == 1) {
    c10::Device device(c10::kCPU);
    if (options.backend == CommBackend::kNccl) {
      if (options.cuda_device < 0 || options.cuda_device >= CudaDeviceCount()) {
        return absl::FailedPreconditionError(base::StrCat("CUDA device ", options.cuda_device,
                                                    " does not exist (", CudaDeviceCount(),
                                                    " visible)"));
      }
      device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(options.cuda_device));
    }
    return MakeSoloCommunicator(options.backend, device);
  }
  ASSIGN_OR_RETURN(internal::Endpoint coordinator, internal::ParseEndpoint(options.coordinator));
  return internal::ConnectC10d(options, coordinator);
}

}  // namespace fanout::trainer
