// fanout-sampler: one sampler process of a trainer. The trainer starts it (sampler/loader.cc)
// with a SOCK_SEQPACKET socket on --socket-fd, its seed list in a memfd on --seeds-fd and every
// setting in --spec (sampler/sampler_spec.h). It makes batches --index, --index + N, ... of the
// spec's epochs, each in a reusable shared-memory file whose descriptor it sends over the
// socket, at most `prefetch` ahead of the batches the trainer has taken; a file is rewritten
// once the trainer has let go of the batch in it. It exits when done, or as soon as the trainer
// closes the socket (or dies: parent-death signal). It is not meant to be started by hand.
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/cleanup/cleanup.h"
#include "base/cli.h"
#include "base/status.h"
#include "base/malloc_tuning.h"
#include "base/memory_report.h"
#include "base/strings.h"
#include "base/unique_fd.h"
#include "core/partition_config.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/machine_rows.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/sampler_priority.h"
#include "sampler/sampler_spec.h"
#include "sampler/shm_batch.h"

namespace {

using namespace fanout;
using base::StrCat;

// Sends `s` to the trainer, which reports it with this process's name. Exiting with the trainer's
// messages unread would reset the socket, and the trainer could see "connection reset" instead of
// the error just sent: reads until it closes (bounded).
void SendFailure(int socket_fd, const absl::Status& s) {
  sampler::SendError(socket_fd, -1, s).IgnoreError();
  shutdown(socket_fd, SHUT_WR);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5); std::chrono::steady_clock::now() < until;) {
    pollfd p{socket_fd, POLLIN, 0};
    if (poll(&p, 1, 100) < 0 && errno != EINTR) break;
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char drain[4096];
    const ssize_t n = recv(socket_fd, drain, sizeof(drain), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;  // closed, or gone
  }
}

// The seeds, then the IDs of the trainer's feature cache (sampler/sampler_spec.h), from the
// trainer's memfd (closed after, on every path).
absl::Status ReadSeeds(int seeds_fd, std::vector<int64_t>* seeds, std::vector<int64_t>* cached) {
  const base::UniqueFd seeds_file(seeds_fd);
  size_t at = 0;
  for (std::vector<int64_t>* ids : {seeds, cached}) {
    const size_t bytes = ids->size() * sizeof(int64_t);
    if (bytes > 0 && pread(seeds_file.get(), ids->data(), bytes, static_cast<off_t>(at)) != static_cast<ssize_t>(bytes)) {
      return absl::InternalError(
          StrCat("reading ", ids->size(), ids == seeds ? " seeds: " : " cached node IDs: ", std::strerror(errno)));
    }
    at += bytes;
  }
  return absl::OkStatus();
}

// Node batches over seed nodes, or (spec.is_link) link batches over positive edges, written into
// shared-memory batch files.
class BatchMaker {
 public:
  static absl::StatusOr<BatchMaker> Create(sampler::DistGraph* graph, const sampler::SamplerSpec& spec,
                                           std::vector<int64_t> seeds) {
    BatchMaker m;
    if (spec.is_link) {
      sampler::SeedArray edges = spec.seed_range_first >= 0
                                     ? sampler::SeedArray::Range(spec.seed_range_first, spec.num_seeds)
                                     : sampler::SeedArray(std::move(seeds));
      ASSIGN_OR_RETURN(m.links_, sampler::LinkBatchSampler::Create(graph, sampler::LinkOptionsOf(spec), std::move(edges)));
    } else {
      m.nodes_ = std::make_unique<sampler::MiniBatchSampler>(graph, spec.sampler, std::move(seeds));
    }
    return m;
  }
  int64_t steps_per_epoch() const { return links_ ? links_->steps_per_epoch() : nodes_->steps_per_epoch(); }
  void LeaveMachineRows(std::shared_ptr<const sampler::MachineRows> rows) {
    if (links_) {
      links_->LeaveMachineRows(std::move(rows));
    } else {
      nodes_->LeaveMachineRows(std::move(rows));
    }
  }

  // Batch (epoch, step) into `slot`, its features fetched without the rows the trainer's cache
  // holds or reads in place (the batch then says where each is); with `with_rows` false, none.
  absl::Status Make(int64_t epoch, int64_t step, bool with_rows, sampler::ShmSlot* slot) {
    absl::StatusOr<sampler::LinkMiniBatch> link_batch;
    absl::StatusOr<sampler::MiniBatch> node_batch;
    if (links_) {
      link_batch = links_->SampleBlocks(epoch, step);
      if (!link_batch.ok()) return link_batch.status();
    } else {
      node_batch = nodes_->SampleBlocks(epoch, step);
      if (!node_batch.ok()) return node_batch.status();
    }
    sampler::MiniBatch& mb = links_ ? link_batch->nodes : *node_batch;
    if (!with_rows) {
      return slot->Write(mb, 0, 0, core::DType::kFloat32, links_ ? &*link_batch : nullptr).status();
    }
    const std::span<const int64_t> wanted = links_ ? links_->FeatureRequest(&mb) : nodes_->FeatureRequest(&mb);
    const int64_t dim = links_ ? links_->feature_dim() : nodes_->feature_dim();
    const core::DType dtype = links_ ? links_->feature_dtype() : nodes_->feature_dtype();
    const core::FeatureCodec codec = links_ ? links_->feature_codec() : nodes_->feature_codec();
    ASSIGN_OR_RETURN(auto features, slot->Write(mb, static_cast<int64_t>(wanted.size()), dim, dtype,
                                                links_ ? &*link_batch : nullptr, codec));
    const auto fetch_start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(links_ ? links_->FetchFeatures(wanted, features) : nodes_->FetchFeatures(wanted, features));
    slot->SetFetchSeconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - fetch_start).count());
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<sampler::MiniBatchSampler> nodes_;
  std::unique_ptr<sampler::LinkBatchSampler> links_;
};

// Makes batches index, index + N, ... of the spec's epochs and hands each to the trainer, at most
// sampler::BatchesAhead of those it has taken. Reusable batch files: a free one is rewritten;
// when the trainer holds them all, another is opened. OK also when the trainer stops early.
absl::Status ServeBatches(int socket_fd, const sampler::SamplerSpec& spec, int index, BatchMaker& maker) {
  const int64_t steps = maker.steps_per_epoch(), total = steps * spec.loader.num_epochs;
  const int n = spec.loader.num_samplers;
  std::vector<sampler::ShmSlot> slots;
  std::vector<int64_t> free_slots;
  int64_t outstanding = 0;
  size_t last_bytes = 0;
  bool features = spec.loader.fetch_features;
  // One message from the trainer; false when it has stopped.
  auto take = [&](int64_t message) {
    if (message == sampler::kBatchTaken) {
      --outstanding;
    } else if (message == sampler::kFetchFeatures || message == sampler::kSkipFeatures) {
      features = message == sampler::kFetchFeatures;
    } else if (message >= 0 && message < static_cast<int64_t>(slots.size())) {
      free_slots.push_back(message);
    }
    return message != -1;
  };
  sampler::SamplerPriority priority(spec.loader.sampler_nice);
  // Batch g is (first_epoch + g / steps, g % steps); this process makes those with g % N = index,
  // from the spec's first step on (a trainer resuming inside an epoch).
  const int64_t first = spec.loader.first_step + ((index - spec.loader.first_step) % n + n) % n;
  for (int64_t g = first; g < total; g += n) {
    const auto wait_start = std::chrono::steady_clock::now();
    while (outstanding >= sampler::BatchesAhead(spec.loader.prefetch, last_bytes)) {
      if (!take(sampler::ReadTrainerMessage(socket_fd))) return absl::OkStatus();  // the trainer stopped
    }
    // What arrived meanwhile, so that a change of features reaches this batch.
    for (int64_t m; (m = sampler::ReadTrainerMessage(socket_fd, /*wait=*/false)) != sampler::kNoMessage;) {
      if (!take(m)) return absl::OkStatus();
    }
    if (free_slots.empty()) {
      free_slots.push_back(static_cast<int64_t>(slots.size()));
      slots.emplace_back();
    }
    const int64_t slot = free_slots.back();
    free_slots.pop_back();
    const int64_t epoch = spec.loader.first_epoch + g / steps, step = g % steps;
    const auto make_start = std::chrono::steady_clock::now();
    if (absl::Status s = maker.Make(epoch, step, features, &slots[slot]); !s.ok()) {
      return absl::Status(s.code(), StrCat("epoch ", epoch, " step ", step, ": ", s.message()));
    }
    if (!sampler::SendBatch(socket_fd, g, slot, slots[slot].fd()).ok()) return absl::OkStatus();  // the trainer has gone
    ++outstanding;
    last_bytes = slots[slot].bytes();
    const auto made = std::chrono::steady_clock::now();
    if (priority.AfterBatch(std::chrono::duration<double>(make_start - wait_start).count(),
                            std::chrono::duration<double>(made - make_start).count())) {
      errno = 0;
      if (nice(priority.nice()) == -1 && errno != 0) {  // not fatal: sampling goes on at the trainer's priority
        std::fprintf(stderr, "fanout-sampler: nice(%d): %s; sampling at the trainer's priority (sampler process %d)\n",
                     priority.nice(), std::strerror(errno), index);
      }
    }
  }
  // Stay until the trainer has taken everything (or closes), so our exit is never mistaken for a
  // failure while batches are still queued.
  while (sampler::ReadTrainerMessage(socket_fd) != -1) {
  }
  return absl::OkStatus();
}

// With the machine's features read from disk (fanout-launch --features-from-disk-mb), what this
// process's row cache did, as the servers print theirs.
void ReportRowCache(const sampler::DistGraph& graph, int64_t cache_bytes, core::CachePolicy policy, int index) {
  const core::PartitionStore* local = graph.local_store();
  if (local == nullptr || cache_bytes < 0) return;
  const core::RowCacheStats c = local->row_cache_stats();
  std::fprintf(stderr,
               "fanout-sampler: row cache (%s, %lld MiB): hit rate %.3f; %s (sampler process %d)\n",
               core::CachePolicyName(policy), static_cast<long long>(cache_bytes >> 20), c.hit_rate(),
               c.DescribeReads().c_str(), index);
}

// Everything after the flags: any failure goes to the trainer too.
absl::Status Run(sampler::SamplerSpec spec, int index, int socket_fd, int seeds_fd, int halo_cache_fd,
                 int wire_fd) {
  // A range of seeds (spec.seed_range_first) is not in the memfd.
  std::vector<int64_t> seeds(spec.seed_range_first >= 0 ? 0 : spec.num_seeds), cached(spec.num_cached);
  RETURN_IF_ERROR(ReadSeeds(seeds_fd, &seeds, &cached));
  ASSIGN_OR_RETURN(const core::PartitionConfig config, core::LoadPartitionConfig(spec.loader.part_config_path));
  spec.graph.shared_cache_fd = halo_cache_fd;
  if (wire_fd >= 0) {  // the trainer's page: this process's calls count with the trainer's
    ASSIGN_OR_RETURN(spec.graph.client.wire, base::WireCounters::Map(wire_fd));
  }
  auto graph = sampler::DistGraph::Open(config, spec.graph);
  if (halo_cache_fd >= 0) ::close(halo_cache_fd);  // mapped (or failed): the descriptor is done
  if (!graph.ok()) return graph.status();
  absl::Cleanup report_cache = [&] {
    ReportRowCache(**graph, spec.graph.local_row_cache_bytes, spec.graph.local_row_cache_policy, index);
    if (const std::string r = (*graph)->HaloCacheReport(); !r.empty()) {
      std::fprintf(stderr, "fanout-sampler: %s (sampler process %d)\n", r.c_str(), index);
    }
  };
  if (!cached.empty()) spec.sampler.cached_nodes = sampler::IndexNodes(std::move(cached), (*graph)->num_nodes());
  RETURN_IF_ERROR(sampler::ValidateSamplerOptions(spec.sampler, **graph));
  ASSIGN_OR_RETURN(BatchMaker maker, BatchMaker::Create(graph->get(), spec, std::move(seeds)));
  if (spec.machine_row_slots > 0) {
    // The trainer's rows of the same field from the same graph options: the same slots.
    const std::string& field = spec.sampler.feature_field;
    std::shared_ptr<const sampler::MachineRows> rows =
        sampler::MachineRows::Of(**graph, field, /*with_cache=*/halo_cache_fd >= 0);
    const int64_t found = rows != nullptr ? rows->num_slots() : 0;
    if (found != spec.machine_row_slots) {
      return absl::FailedPreconditionError(StrCat("the trainer reads ", spec.machine_row_slots, " rows of '", field,
                                                  "' in place, this process finds ", found,
                                                  " (its partition's mapped rows and the halo cache)"));
    }
    maker.LeaveMachineRows(std::move(rows));
  }
  return ServeBatches(socket_fd, spec, index, maker);
}

}  // namespace

int main(int argc, char** argv) {
  fanout::base::KeepLargeAllocations();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::signal(SIGPIPE, SIG_IGN);
  std::string spec_json;
  int index = 0, socket_fd = -1, seeds_fd = -1, halo_cache_fd = -1, wire_fd = -1;
  base::ArgParser args("fanout-sampler", "(started by fanout-train with --num-samplers N)");
  args.SetDescription("A sampler process of a fanout trainer: makes every N-th mini-batch and hands it to\n"
                      "the trainer in shared memory. The trainer starts it; see docs/sampling.md.\n\n");
  args.AddString("spec", &spec_json, "everything else, as the trainer wrote it (sampler/sampler_spec.h)");
  args.AddInt("index", &index, "this sampler's index among the trainer's samplers");
  args.AddInt("socket-fd", &socket_fd, "the socket to the trainer");
  args.AddInt("seeds-fd", &seeds_fd, "memfd holding the trainer's seeds (int64)");
  args.AddInt("halo-cache-fd", &halo_cache_fd, "memfd holding the trainer's halo row cache, mapped instead of pulled", -1);
  args.AddInt("wire-counters-fd", &wire_fd, "memfd holding the trainer's wire counters, which this process's calls add to",
              -1);
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (socket_fd < 0 || seeds_fd < 0) {
    return args.Fail(absl::InvalidArgumentError("--socket-fd and --seeds-fd are required (the trainer starts this)"));
  }
  auto spec = sampler::ReadSamplerSpec(spec_json);
  if (!spec.ok()) return args.Fail(spec.status());
  base::MemoryReportAtExit memory("sampler");  // its line reaches fanout-launch through the trainer's stderr
  if (index < 0 || index >= spec->loader.num_samplers) {
    return args.Fail(absl::InvalidArgumentError(
        StrCat("--index must be in [0, ", spec->loader.num_samplers, ") (the spec's num_samplers), got ", index)));
  }
  if (spec->loader.samplers_ignore_sigterm) std::signal(SIGTERM, SIG_IGN);  // the trainer ends this process
  if (absl::Status s = Run(*std::move(spec), index, socket_fd, seeds_fd, halo_cache_fd, wire_fd); !s.ok()) {
    SendFailure(socket_fd, s);
    return args.Fail(s);
  }
  return 0;
}
