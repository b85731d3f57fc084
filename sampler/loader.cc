#include "sampler/loader.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/spawn.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/unique_fd.h"
#include "sampler/machine_rows.h"
#include "sampler/prefetcher.h"
#include "sampler/sampler_spec.h"
#include "sampler/shm_batch.h"

namespace fanout::sampler {

using base::StrCat;

namespace {

// Batches made by a pool of threads, each with its own MiniBatchSampler, at most `prefetch`
// ahead of the consumer (prefetcher.h).
// With LoaderOptions::features_ahead false the threads make the blocks only, and Next() fetches
// the features with a sampler of its own (the threads' samplers are busy with later batches).
class ThreadLoader final : public BatchLoader {
 public:
  ThreadLoader(const DistGraph* graph, const SamplerOptions& so, std::vector<int64_t> seeds, const LoaderOptions& lo) {
    features_.store(lo.fetch_features);
    const int threads = std::max(1, lo.num_threads);
    for (int i = 0; i < threads; ++i) samplers_.push_back(std::make_unique<MiniBatchSampler>(graph, so, seeds));
    if (!lo.features_ahead) fetcher_ = std::make_unique<MiniBatchSampler>(graph, so, std::vector<int64_t>{});
    prefetcher_ = std::make_unique<Prefetcher<MiniBatch>>(
        threads, samplers_[0]->steps_per_epoch(), lo.first_epoch, lo.num_epochs, lo.prefetch,
        [this](int w, int64_t epoch, int64_t step) {
          return fetcher_ != nullptr || !features_.load() ? samplers_[w]->SampleBlocks(epoch, step)
                                                          : samplers_[w]->Sample(epoch, step, &pool_);
        },
        lo.first_step);
  }
  int64_t steps_per_epoch() const override { return samplers_[0]->steps_per_epoch(); }
  int64_t feature_dim() const override { return samplers_[0]->feature_dim(); }
  absl::StatusOr<MiniBatch> Next() override {
    ASSIGN_OR_RETURN(MiniBatch mb, prefetcher_->Next());
    // Fetched when taken, into memory of their own rather than the pool's: when the consumer
    // lets go of them, they are handed back at once (evaluation's model lets go of its input
    // rows after its input layer has read them: GnnModel::Infer), not kept for the next batch.
    if (fetcher_ != nullptr && features_.load()) RETURN_IF_ERROR(fetcher_->FetchBatchFeatures(&mb, nullptr));
    return mb;
  }
  void FetchFeatures(bool on) override { features_.store(on); }

 private:
  std::atomic<bool> features_{true};  // FetchFeatures; read by the threads when they start a batch
  std::vector<std::unique_ptr<MiniBatchSampler>> samplers_;
  std::unique_ptr<MiniBatchSampler> fetcher_;  // features_ahead false: Next()'s
  BufferPool pool_;
  std::unique_ptr<Prefetcher<MiniBatch>> prefetcher_;  // last: its threads stop before the samplers go
};

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return "stopped";
}

// N fanout-sampler children; child i makes batches i, i + N, ... and sends each in one of its
// reusable memfds over a SOCK_SEQPACKET socket, at most `prefetch` ahead of the batches taken.
// When the trainer lets go of a batch (the last reference to its features), its slot goes back
// to the child, which then rewrites it instead of allocating a new file.
class ProcessLoader final : public BatchLoader {
 public:
  // `link` (optional): make link batches (LinkBatchSampler) over the positive edges `seeds`.
  static absl::StatusOr<std::unique_ptr<ProcessLoader>> Start(const DistGraph* graph, const DistGraphOptions& go,
                                                               const SamplerOptions& so, const SeedArray& seeds,
                                                               const LoaderOptions& lo,
                                                               const LinkSamplerOptions* link = nullptr) {
    if (lo.sampler_binary.empty() || access(lo.sampler_binary.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(StrCat("sampler program '", lo.sampler_binary,
                                                  "' is not an executable file (needed for --num-samplers ",
                                                  lo.num_samplers, ")"));
    }
    std::unique_ptr<ProcessLoader> l(new ProcessLoader(lo));
    // For the feature width, and the node batches' steps (the seeds are not copied for links).
    MiniBatchSampler probe(graph, so, link != nullptr ? std::vector<int64_t>{} : seeds.ToVector());
    l->steps_ = link != nullptr ? LinkStepsPerEpoch(*link, seeds.size()) : probe.steps_per_epoch();
    l->feature_dim_ = probe.feature_dim();
    l->total_ = l->steps_ * lo.num_epochs;
    l->consumed_ = std::min(lo.first_step, l->total_);  // batch g is (first_epoch + g / steps, g % steps)

    // The seed list (and the IDs of the trainer's feature cache after it) travels once, in a
    // memfd every child inherits; a range of seeds travels in the spec alone.
    base::UniqueFd seeds_fd(memfd_create("fanout-seeds", MFD_CLOEXEC));
    if (!seeds_fd.valid()) return absl::InternalError(StrCat("memfd_create: ", std::strerror(errno)));
    const std::vector<int64_t> no_ids;
    const std::vector<int64_t>& cached = so.cached_nodes != nullptr ? so.cached_nodes->ids() : no_ids;
    const std::span<const int64_t> listed = seeds.list();
    bool ok = ftruncate(seeds_fd.get(), static_cast<off_t>((listed.size() + cached.size()) * sizeof(int64_t))) == 0;
    size_t at = 0;
    for (const std::span<const int64_t> ids : {listed, std::span<const int64_t>(cached)}) {
      const size_t bytes = ids.size() * sizeof(int64_t);
      for (size_t done = 0; ok && done < bytes;) {
        ssize_t n = pwrite(seeds_fd.get(), reinterpret_cast<const char*>(ids.data()) + done, bytes - done, at + done);
        ok = n > 0;
        if (ok) done += static_cast<size_t>(n);
      }
      at += bytes;
    }
    if (!ok) return absl::InternalError(StrCat("writing the seed list for the samplers: ", std::strerror(errno)));

    SamplerSpec spec;
    spec.loader = lo;
    spec.loader.prefetch = std::max(1, lo.prefetch);
    spec.graph = go;
    spec.sampler = so;
    spec.num_seeds = seeds.size();
    spec.seed_range_first = seeds.is_range() ? seeds.first() : -1;
    spec.num_cached = static_cast<int64_t>(cached.size());
    // The rows this process reads in place: the halo cache's only when the children map this
    // process's (the same rows by construction, and checked: MapShared).
    if (lo.machine_rows && so.cached_nodes == nullptr) {
      l->machine_rows_ = MachineRows::Of(*graph, so.feature_field, /*with_cache=*/graph->shared_cache_fd() >= 0);
      if (l->machine_rows_ != nullptr) spec.machine_row_slots = l->machine_rows_->num_slots();
    }
    if (link != nullptr) {
      spec.is_link = true;
      spec.link = *link;
    }
    std::vector<std::string> common = {
        lo.sampler_binary, "--spec", WriteSamplerSpec(spec), "--socket-fd", "3", "--seeds-fd", "4",
    };
    // The trainer's halo cache in shared memory, mapped by every child instead of pulled again.
    const int cache_fd = graph->shared_cache_fd();
    if (cache_fd >= 0) common.insert(common.end(), {"--halo-cache-fd", "5"});
    // The trainer's wire counters (base/wire_counters.h): its samplers' calls count with its own.
    const int wire_fd = go.client.wire != nullptr ? go.client.wire->fd() : -1;
    if (wire_fd >= 0) common.insert(common.end(), {"--wire-counters-fd", "6"});
    absl::Status status;
    for (int i = 0; i < lo.num_samplers && status.ok(); ++i) {
      std::vector<std::string> args = common;
      args.push_back("--index");
      args.push_back(std::to_string(i));
      status = l->Spawn(args, seeds_fd.get(), cache_fd, wire_fd);
    }
    RETURN_IF_ERROR(status);
    return l;
  }

  ~ProcessLoader() override {
    // The child reads EOF and exits. shutdown, not only close: a batch the caller still holds
    // keeps the socket open (to send its slot back), and the child would wait for it until the
    // SIGTERM below, 2 s on every loader closed mid-epoch (a Python loop that breaks early,
    // every test). The held batch stays readable: its memory is the caller's mapping.
    for (Child& c : children_) {
      if (c.sock != nullptr) shutdown(c.sock->fd.get(), SHUT_WR);
      c.sock.reset();
    }
    // Up to 2 s for them to exit by themselves (printing their memory line on the way), then
    // SIGTERM.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (Child& c : children_) {
      while (c.pid > 0 && !c.reaped && std::chrono::steady_clock::now() < deadline) {
        if (waitpid(c.pid, nullptr, WNOHANG) == c.pid) {
          c.reaped = true;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      if (c.pid > 0 && !c.reaped) {
        kill(c.pid, SIGTERM);
        waitpid(c.pid, nullptr, 0);
      }
    }
  }

  int64_t steps_per_epoch() const override { return steps_; }
  int64_t feature_dim() const override { return feature_dim_; }

  absl::StatusOr<MiniBatch> Next() override { return Next(nullptr); }

  // The next batch, with a link batch's pairs in `pairs` (when given).
  absl::StatusOr<MiniBatch> Next(LinkPairs* pairs) {
    if (consumed_ >= total_) return absl::OutOfRangeError("no more batches: the last epoch is done");
    const int64_t g = consumed_;
    Child& c = children_[g % children_.size()];
    const std::string who = StrCat("sampler process ", g % children_.size(), " (pid ", c.pid, ")");
    const int sock = c.sock->fd.get();
    pollfd pfd{sock, POLLIN, 0};
    int r;
    do {
      r = poll(&pfd, 1, static_cast<int>(options_.batch_timeout_seconds * 1000));
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      return absl::DeadlineExceededError(StrCat(who, " made no batch in ", options_.batch_timeout_seconds, " s"));
    }
    int64_t index = -1, slot = -1;
    int received = -1;
    bool closed = false;
    absl::Status s = ReceiveMessage(sock, &index, &slot, &received, &closed);
    const base::UniqueFd fd(received);  // the batch file: closed on every path out of here
    if (!s.ok()) {
      // A process that died with our messages unread resets the socket rather than closing it:
      // either way, say how it ended when it has (it is gone or going once its socket is).
      int status = 0;
      if (closed || base::WaitForExit(c.pid, std::chrono::seconds(2)) == 1) {
        if (waitpid(c.pid, &status, 0) == c.pid) c.reaped = true;
      }
      if (c.reaped) {
        return absl::UnavailableError(StrCat(who, " ", DescribeExit(status), " before sending batch ", g));
      }
      if (closed) return absl::UnavailableError(StrCat(who, " closed its socket before sending batch ", g));
      return absl::Status(s.code(), StrCat(who, ": ", s.message()));
    }
    if (index != g) {
      return absl::InternalError(StrCat(who, " sent batch ", index, " when batch ", g, " was due"));
    }
    // The slot goes back when the batch's memory is let go, from whichever thread does it; the
    // channel outlives the loader while batches are held.
    std::shared_ptr<Channel> channel = c.sock;
    auto mb = ReadShmBatch(fd.get(), [channel, slot] { SendRelease(channel->fd.get(), slot); }, &mappings_, pairs);
    if (!mb.ok()) return absl::Status(mb.status().code(), StrCat(who, ": ", mb.status().message()));
    if (machine_rows_ != nullptr) {
      // The rows left out are copied in now, on the caller's time (a trainer counts it in its
      // wait): the features live in this process's reused buffers, the batch file holds only
      // the fetched rows.
      if (absl::Status s = machine_rows_->Complete(&*mb, &rows_pool_); !s.ok()) {
        return absl::Status(s.code(), StrCat(who, ": batch ", g, ": ", s.message()));
      }
    }
    // A credit that cannot be sent means the process is gone (it was killed after sending this
    // batch): the batch is whole, so hand it over; this process's next batch reports how it ended.
    SendTaken(sock);
    ++consumed_;
    return mb;
  }

  // Each process reads it before its next batch. A process that has gone reports so at its next
  // batch.
  void FetchFeatures(bool on) override {
    for (Child& c : children_) {
      if (c.sock != nullptr) SendFetchFeatures(c.sock->fd.get(), on);
    }
  }

 private:
  // The trainer's end of a sampler's socket; closed when the loader and every batch still held
  // have let go of it.
  struct Channel {
    base::UniqueFd fd;
    explicit Channel(int f) : fd(f) {}
  };
  struct Child {
    pid_t pid = -1;
    std::shared_ptr<Channel> sock;
    bool reaped = false;
  };
  // Each child keeps about prefetch + 2 batch files in use (those in flight and those held).
  explicit ProcessLoader(LoaderOptions lo)
      : options_(std::move(lo)),
        mappings_(static_cast<size_t>(std::max(1, options_.num_samplers) * (std::max(1, options_.prefetch) + 2)),
                  options_.writable_batches) {}

  absl::Status Spawn(const std::vector<std::string>& args, int seeds_fd, int cache_fd, int wire_fd) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      return absl::InternalError(StrCat("socketpair: ", std::strerror(errno)));
    }
    base::UniqueFd ours(pair[0]), theirs(pair[1]);
    // Dies with the trainer; fd 3 is its end of the socket, fd 4 the seeds, fd 5 the halo cache
    // when shared, fd 6 the wire counters when counted (sampler_main.cc).
    std::vector<base::ChildFd> fds = {base::ChildFd::Dup(3, theirs.get()), base::ChildFd::Dup(4, seeds_fd)};
    if (cache_fd >= 0) fds.push_back(base::ChildFd::Dup(5, cache_fd));
    if (wire_fd >= 0) fds.push_back(base::ChildFd::Dup(6, wire_fd));
    ASSIGN_OR_RETURN(const pid_t pid, base::SpawnChild({.argv = args, .fds = std::move(fds)}));
    theirs.reset();  // the child's end lives on in the child only
    children_.push_back(Child{pid, std::make_shared<Channel>(ours.release())});
    return absl::OkStatus();
  }

  LoaderOptions options_;
  BatchMappings mappings_;
  std::shared_ptr<const MachineRows> machine_rows_;  // LoaderOptions::machine_rows, when there are any
  BufferPool rows_pool_{2};                          // the completed batches' feature rows
  std::vector<Child> children_;
  int64_t steps_ = 0, total_ = 0, feature_dim_ = 0;
  int64_t consumed_ = 0;
};

// Link batches from sampler processes: each one's pairs travel with it in the batch file.
class LinkProcessLoader final : public LinkBatchSource {
 public:
  explicit LinkProcessLoader(std::unique_ptr<ProcessLoader> processes) : processes_(std::move(processes)) {}
  int64_t steps_per_epoch() const override { return processes_->steps_per_epoch(); }
  absl::StatusOr<LinkMiniBatch> Next() override {
    LinkMiniBatch b;
    ASSIGN_OR_RETURN(b.nodes, processes_->Next(&b));
    b.epoch = b.nodes.epoch;
    b.step = b.nodes.step;
    return b;
  }

 private:
  std::unique_ptr<ProcessLoader> processes_;
};

// The checks every loader's options get.
absl::Status ValidateLoaderOptions(const LoaderOptions& options) {
  if (options.num_samplers < 0) {
    return absl::InvalidArgumentError(StrCat("--num-samplers must be >= 0, got ", options.num_samplers));
  }
  if (options.num_epochs < 0) return absl::InvalidArgumentError("the number of epochs must be >= 0");
  // With prefetch 0 no batch may ever be made ahead of the consumer: it would wait forever.
  if (options.prefetch < 1)
    return absl::InvalidArgumentError(StrCat("--prefetch must be >= 1, got ", options.prefetch));
  if (options.sampler_nice < 0 || options.sampler_nice > 19) {
    return absl::InvalidArgumentError(StrCat("--sampler-nice must be in [0, 19], got ", options.sampler_nice));
  }
  if (options.num_samplers == 0 && options.num_threads < 1) {
    return absl::InvalidArgumentError(
        StrCat("--sampler-threads must be >= 1, got ", options.num_threads));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinkBatchSource>> MakeLinkProcessLoader(const DistGraph* graph,
                                                                        const DistGraphOptions& graph_options,
                                                                        const LinkSamplerOptions& link,
                                                                        SeedArray edges,
                                                                        const LoaderOptions& options) {
  RETURN_IF_ERROR(ValidateLoaderOptions(options));
  if (options.num_samplers < 1) {
    return absl::InvalidArgumentError("link batches from sampler processes need --num-samplers >= 1");
  }
  // Fails here, in the trainer, on what the processes would fail on (bad options, edge IDs, a
  // graph too small for negatives), before any is started.
  RETURN_IF_ERROR(ValidateLinkSamplerOptions(link, *graph, edges));
  ASSIGN_OR_RETURN(auto processes,
                   ProcessLoader::Start(graph, graph_options, NodeOptionsOf(link), edges, options, &link));
  return std::unique_ptr<LinkBatchSource>(new LinkProcessLoader(std::move(processes)));
}

absl::StatusOr<std::unique_ptr<LinkBatchSource>> MakeLinkBatchLoader(const DistGraph* graph,
                                                                      const DistGraphOptions& graph_options,
                                                                      const LinkSamplerOptions& link,
                                                                      SeedArray edges,
                                                                      const LoaderOptions& options) {
  if (options.num_samplers > 0) return MakeLinkProcessLoader(graph, graph_options, link, std::move(edges), options);
  RETURN_IF_ERROR(ValidateLoaderOptions(options));
  ASSIGN_OR_RETURN(auto l, LinkBatchLoader::Create(graph, link, edges, options.num_threads, options.prefetch,
                                                   options.first_epoch, options.num_epochs, options.first_step));
  return std::unique_ptr<LinkBatchSource>(std::move(l));
}

absl::StatusOr<std::unique_ptr<BatchLoader>> MakeBatchLoader(const DistGraph* graph,
                                                             const DistGraphOptions& graph_options,
                                                             const SamplerOptions& sampler_options,
                                                             std::vector<int64_t> seeds,
                                                             const LoaderOptions& options) {
  RETURN_IF_ERROR(ValidateSamplerOptions(sampler_options, *graph));
  RETURN_IF_ERROR(ValidateLoaderOptions(options));
  if (options.num_samplers == 0) {
    return std::unique_ptr<BatchLoader>(new ThreadLoader(graph, sampler_options, std::move(seeds), options));
  }
  ASSIGN_OR_RETURN(auto l, ProcessLoader::Start(graph, graph_options, sampler_options, SeedArray(std::move(seeds)), options));
  return std::unique_ptr<BatchLoader>(std::move(l));
}

}  // namespace fanout::sampler
