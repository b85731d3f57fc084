// Job::Setup in steps (job.h): everything between the options and the first step.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "sampler/cache_choice.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "trainer/job.h"
#include "kernels/kernels.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using base::StrCat;

namespace {

// What typed graphs train with so far (issue 29): node classification on a target type with
// sampled evaluation; refused, naming the flag, where a typed path is not built yet.
absl::Status CheckTypedSupport(const TrainOptions& o, const core::PartitionConfig& config) {
  auto no = [&](const char* what) {
    return absl::UnimplementedError(StrCat(what, " on a typed graph ('", config.graph_name, "': ",
                                           config.node_types.size(), " node types, ", config.edge_types.size(),
                                           " edge types) is not built yet"));
  };
  if (o.device_cache.bytes > 0) return no("--gpu-cache-bytes (the device feature cache)");
  if (o.embed.dim > 0 && !o.checkpoint.load_model.empty()) {
    return no("--load-model with --embed-featureless (best.pt holds the model, not the embeddings; --resume reads "
              "them from last.rank<r>.pt)");
  }
  return absl::OkStatus();
}

// Which copies of the compute run on the CPU: fanout's fused kernels' instruction set, and the
// BLAS's own choice where it says (OpenBLAS's DYNAMIC_ARCH picks its kernels at load time).
std::string ComputeLibraries() {
  std::string text = StrCat("fused CPU kernels ", kernels::IsaName(kernels::ActiveIsa()));
  using CoreName = char* (*)();
  if (auto core = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename")); core != nullptr) {
    text += StrCat(", OpenBLAS ", core());
  }
  return text;
}

}  // namespace

Job::~Job() {
  task_.reset();
  // This trainer's and its samplers' bytes to and from other machines, for fanout-launch's
  // summary per machine (base/wire_counters.h).
  if (o_.graph.client.wire != nullptr) {
    std::fprintf(stderr, "%s\n", base::WireLine(o_.graph.client.wire->Read()).c_str());
  }
}

absl::Status Job::Setup() {
  RETURN_IF_ERROR(kernels::IsaFromEnvironment().status());  // a bad FANOUT_KERNEL_ISA stops the job here
  ASSIGN_OR_RETURN(core::PartitionConfig config, core::LoadPartitionConfig(o_.part_config));
  RETURN_IF_ERROR(OpenGraph(config));
  ModelOptions mo = o_.model;  // its dimensions come from the graph
  RETURN_IF_ERROR(PrepareInput(config, &mo));
  RETURN_IF_ERROR(CheckEdgeFields());
  const int64_t in_dim = mo.in_dim;
  ASSIGN_OR_RETURN(mo.num_classes, task_->Prepare(*this));
  sizes_ = task_->sizes();
  mo.num_layers = static_cast<int64_t>(o_.sampling.fanouts.size());
  RETURN_IF_ERROR(ValidateModelOptions(mo));
  if (graph_->graph().awaits_cache()) RETURN_IF_ERROR(BuildRowCache());
  if (o_.device_cache.bytes > 0) RETURN_IF_ERROR(BuildFeatureCache());
  RETURN_IF_ERROR(BuildModelAndJoin(config, mo));
  RETURN_IF_ERROR(OpenOutputs());
  if (lead()) LogSetup(config, mo, in_dim);
  if (o_.graph.client.wire != nullptr) wire_mark_ = o_.graph.client.wire->Read();  // epochs count from here
  return absl::OkStatus();
}

absl::Status Job::OpenGraph(const core::PartitionConfig& config) {
  if (o_.dist.world_size != config.num_parts * o_.trainers_per_machine) {
    return absl::InvalidArgumentError(StrCat(
        "world size ", o_.dist.world_size, " != ", config.num_parts, " partitions (machines) x ",
        o_.trainers_per_machine, " trainers per machine; partition config ", o_.part_config));
  }
  ASSIGN_OR_RETURN(device_, ParseDevice(o_.device));
  uploader_ = std::make_unique<DeviceUploader>(device_);
  RETURN_IF_ERROR(SetIntraOpThreads(o_.intra_op_threads));
  // With sampler processes the trainer pulls the halo cache once, into shared memory, and its
  // samplers map that one copy (sampler/loader.cc) instead of each pulling its own.
  // Bytes to and from other machines, counted by kind by every client of this trainer and of its
  // sampler processes, and by its communicator (base/wire_counters.h).
  ASSIGN_OR_RETURN(o_.graph.client.wire, base::WireCounters::Create());
  sampler::DistGraphOptions own = o_.graph;
  own.cache_in_shared_memory = o_.loader.num_samplers > 0;
  // A machine that stops answering ends this trainer (and the launcher the job) within the
  // timeout, naming it, instead of a collective or a call waiting out its own timeout.
  const int rank = o_.dist.rank;
  ASSIGN_OR_RETURN(graph_, sampler::JobGraph::Open(config, o_.part_config, std::move(own), o_.reachability,
                                                   [rank](const std::string& message) {
                                                     std::fprintf(stderr, "fanout-train: rank %d: error: %s\n", rank,
                                                                  message.c_str());
                                                     std::fflush(nullptr);
                                                     std::_Exit(1);
                                                   }));
  return absl::OkStatus();
}

absl::Status Job::PrepareInput(const core::PartitionConfig& config, ModelOptions* mo) {
  if (config.typed()) {
    RETURN_IF_ERROR(CheckTypedSupport(o_, config));
    mo->num_relations = static_cast<int64_t>(config.edge_types.size());
    mo->num_node_types = static_cast<int64_t>(config.node_types.size());
  } else if (o_.embed.dim <= 0 && !o_.target_ntype.empty()) {
    return absl::InvalidArgumentError(StrCat("--target-ntype: graph '", config.graph_name, "' has one node type"));
  }
  ASSIGN_OR_RETURN(input_, MakeModelInput(graph_->graph(), {.feature_field = o_.sampling.feature_field,
                                                            .embed = o_.embed,
                                                            .seed = o_.sampling.seed,
                                                            .fields = &graph_->fields(),
                                                            .trainers_per_machine = o_.trainers_per_machine}));
  // The one-type graph's learnable rows replace its features: the batches carry none.
  if (!config.typed() && o_.embed.dim > 0) o_.sampling.feature_field = "";
  mo->in_dim = input_->width();
  return absl::OkStatus();
}

absl::Status Job::CheckEdgeFields() const {
  const sampler::SamplerOptions& so = o_.sampling;
  for (const auto& [flag, field] : {std::pair{"--edge-weight", &sampler::EdgeDataOptions::weight_field},
                                     {"--edge-feature", &sampler::EdgeDataOptions::feature_field}}) {
    if (so.edge.*field == "") continue;
    sampler::SamplerOptions check;
    check.fanouts = so.fanouts;
    check.feature_field = "";
    check.label_field = "";
    check.edge.*field = so.edge.*field;
    if (absl::Status s = sampler::ValidateSamplerOptions(check, graph_->graph()); !s.ok()) {
      return absl::InvalidArgumentError(StrCat(flag, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

// The model first (a scripted one that does not fit the graph fails here, before any peer
// waits), then join the other trainers and start from rank 0's parameters.
absl::Status Job::BuildModelAndJoin(const core::PartitionConfig& config, const ModelOptions& mo) {
  const sampler::SamplerOptions& so = o_.sampling;
  ASSIGN_OR_RETURN(model_, MakeModel(mo, so.seed));
  RETURN_IF_ERROR(task_->AddModules(*this, *model_, mo));
  if (std::shared_ptr<torch::nn::Module> input = input_->module()) model_->register_module("input", input);
  DistOptions d = o_.dist;
  d.backend = o_.dist_backend.value_or(device_.is_cuda() ? CommBackend::kNccl : CommBackend::kGloo);
  d.cuda_device = device_.is_cuda() ? device_.index() : 0;
  ASSIGN_OR_RETURN(comm_, Connect(d));
  comm_ = CountWireBytes(std::move(comm_), o_.graph.client.wire);
  RETURN_IF_ERROR(CatchTorch("moving the model", [&] { model_->to(device_); }));
  RETURN_IF_ERROR(BroadcastParameters(*comm_, model_->parameters()));
  RETURN_IF_ERROR(input_->Join(*comm_));
  opt_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(), torch::optim::AdamOptions(o_.lr).weight_decay(o_.weight_decay));
  sync_ = std::make_unique<GradientSynchronizer>(model_->parameters(),
                                                 GradSyncOptions{.overlap = o_.overlap_allreduce,
                                                                 .wire_dtype = o_.allreduce_float16 ? at::kHalf
                                                                                                    : at::kFloat});
  return absl::OkStatus();
}

absl::Status Job::OpenOutputs() {
  if (lead() && !o_.output.metrics_file.empty()) {
    metrics_.open(o_.output.metrics_file, o_.checkpoint.resume || o_.restart_count > 0 ? std::ios::app : std::ios::trunc);
    if (!metrics_)
      return absl::PermissionDeniedError(StrCat("cannot write metrics file ", o_.output.metrics_file));
  }
  if (lead() && !o_.output.tensorboard_dir.empty()) {
    absl::StatusOr<std::unique_ptr<base::EventFileWriter>> tb = base::EventFileWriter::Open(o_.output.tensorboard_dir);
    if (!tb.ok()) return absl::Status(tb.status().code(), StrCat("--tensorboard-dir: ", tb.status().message()));
    tensorboard_ = std::move(*tb);
  }
  if (!o_.checkpoint.dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o_.checkpoint.dir, ec);
    if (ec)
      return absl::PermissionDeniedError(
          StrCat("cannot create checkpoint folder ", o_.checkpoint.dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// The lead's lines about the job it is about to train.
void Job::LogSetup(const core::PartitionConfig& config, const ModelOptions& mo, int64_t in_dim) const {
  const sampler::SamplerOptions& so = o_.sampling;
  Log(StrCat("fanout-train: graph '", config.graph_name, "' (", config.num_nodes, " nodes, ",
             config.num_parts, " partitions), ", o_.dist.world_size, " trainer(s); ",
             mo.model == ModelKind::kScripted ? StrCat("scripted model ", mo.script_path, ",")
                                              : StrCat(ModelKindName(mo.model), " ", mo.num_layers, " layers, hidden ", mo.hidden, ","),
             " ",
             in_dim, " -> ", mo.num_classes, " classes; fanouts ", base::StrJoin(so.fanouts, ","),
             ", batch ", so.batch_size, "; train/val/test ", sizes_.train, "/", sizes_.val, "/",
             sizes_.test, "; ", o_.loader.num_samplers, " sampler process(es) per trainer; ",
             o_.intra_op_threads, " intra-op thread(s); device ", o_.device, "; ", ComputeLibraries()));
  if (const std::string input = input_->Describe(); !input.empty()) Log(StrCat("fanout-train: model input: ", input));
  if (!so.relation_fanouts.empty()) {
    std::vector<std::string> per;
    for (size_t r = 0; r < config.edge_types.size(); ++r) {
      std::vector<int64_t> f;
      for (const auto& layer : so.relation_fanouts) f.push_back(layer[r]);
      per.push_back(StrCat(config.edge_types[r].ToString(), " ", base::StrJoin(f, ",")));
    }
    Log(StrCat("fanout-train: fanouts per relation: ", base::StrJoin(per, "; ")));
  }
  if (!so.edge.weight_field.empty()) {
    Log(StrCat("fanout-train: messages weighted by edge field '", so.edge.weight_field, "'"));
  }
  if (!so.edge.feature_field.empty()) {
    Log(StrCat("fanout-train: edge field '", so.edge.feature_field, "' in every block as block[\"edge_feat\"]"));
  }
  if (feature_cache_ != nullptr) {
    Log(StrCat("fanout-train: device feature cache: ", feature_cache_->size(), " of ", config.num_nodes,
               " nodes' rows of '", so.feature_field, "' (", feature_cache_->bytes() >> 20, " MiB: ", cache_choice_, ") on ",
               o_.device));
  }
  if (const sampler::RowCache* cache = graph_->graph().row_cache()) {
    const int64_t local = graph_->graph().cached_local_rows();
    Log(StrCat("fanout-train: feature cache: ", static_cast<int64_t>(cache->size()) - local,
               o_.graph.cache_from_counts ? " remote rows" : " halo rows",
               local > 0 ? StrCat(" and ", local, " most-read local rows (the local features are on disk)") : "",
               " of '", cache->field(), "' (", cache->bytes() >> 20, " MiB",
               row_cache_choice_.empty() ? "" : ": " + row_cache_choice_, ") in the trainer",
               cache->fd() >= 0 ? ", in shared memory that its sampler processes map" : ""));
  }
}

absl::StatusOr<const std::vector<int64_t>*> Job::Presampled(int64_t steps, std::string* how) {
  // The batches training will draw, without their data: only which nodes they take. Both caches
  // asking for the same steps share one presampling.
  if (steps != presampled_steps_) {
    const auto t0 = Clock::now();
    int64_t done = 0;
    ASSIGN_OR_RETURN(presampled_, task_->PresampleInputs(*this, steps, &done));
    presampled_steps_ = steps;
    presampled_how_ = StrCat("this trainer's first ", done, " batches, presampled in ",
                             static_cast<int64_t>(Since(t0) * 1000), " ms");
  }
  *how = presampled_how_;
  return &presampled_;
}

absl::Status Job::BuildRowCache() {
  std::string how;
  ASSIGN_OR_RETURN(const std::vector<int64_t>* counts,
                   Presampled(o_.row_cache_presample_steps, &how));
  RETURN_IF_ERROR(graph_->mutable_graph()->BuildCacheFromCounts(*counts));
  row_cache_choice_ = StrCat("the rows most taken by ", how, "; then the halo by its edges into the partition");
  return absl::OkStatus();
}

absl::Status Job::BuildFeatureCache() {
  FeatureCacheOptions fo;
  fo.field = o_.sampling.feature_field;
  fo.max_bytes = o_.device_cache.bytes;
  if (o_.device_cache.presample) {
    std::string how;
    ASSIGN_OR_RETURN(const std::vector<int64_t>* counts,
                     Presampled(o_.device_cache.presample_steps, &how));
    fo.counts = *counts;
    cache_choice_ = StrCat("the nodes most taken by ", how, "; then the most in-edges");
  } else {
    cache_choice_ = "the nodes with the most in-edges";
  }
  ASSIGN_OR_RETURN(feature_cache_, FeatureCache::Build(graph_->graph(), fo, device_));
  return absl::OkStatus();
}

}  // namespace fanout::trainer
