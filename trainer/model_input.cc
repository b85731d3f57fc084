#include "trainer/model_input.h"

#include "base/status.h"
#include "base/strings.h"
#include "core/sparse_optim.h"
#include "core/random.h"
#include "trainer/typed_input.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// The batch's features, as the sampler fetched them.
class FeatureInput final : public ModelInput {
 public:
  explicit FeatureInput(int64_t width) : width_(width) {}
  int64_t width() const override { return width_; }
  absl::StatusOr<at::Tensor> Forward(const BatchTensors& bt, const sampler::MiniBatch&) override { return bt.features; }
  bool transforms() const override { return false; }
  std::string Describe() const override { return ""; }

 private:
  int64_t width_;
};

// A typed graph's input layer (or the one-type graph's learnable rows), with the learnable rows
// of its featureless types once the trainers have joined.
class TypedModelInput final : public ModelInput {
 public:
  TypedModelInput(std::shared_ptr<TypedInput> input, const sampler::DistGraph& graph, ModelInputOptions o)
      : input_(std::move(input)), graph_(graph), o_(std::move(o)) {}

  int64_t width() const override { return input_->width(); }
  std::shared_ptr<torch::nn::Module> module() const override { return input_; }

  absl::Status Join(Communicator& comm) override {
    if (o_.embed.dim <= 0 || input_->featureless().empty()) return absl::OkStatus();
    if (o_.fields == nullptr) return absl::InternalError("learnable rows need the job's created fields");
    EmbeddingOptions eo = o_.embed;
    eo.seed = core::SplitMix64(o_.seed ^ 0xe3bedull);
    ASSIGN_OR_RETURN(embeddings_, DistEmbeddings::Create(graph_, o_.fields, input_->featureless(), eo, comm,
                                                         o_.trainers_per_machine));
    return absl::OkStatus();
  }

  absl::StatusOr<at::Tensor> Forward(const BatchTensors& bt, const sampler::MiniBatch& mb) override {
    return input_->Forward(bt, mb, embeddings_.get());
  }
  absl::Status Step(Communicator& comm) override {
    return embeddings_ == nullptr ? absl::OkStatus() : embeddings_->Step(comm);
  }

  bool has_sparse_rows() const override { return embeddings_ != nullptr; }
  absl::Status Snapshot(int rank) override { return embeddings_ == nullptr ? absl::OkStatus() : embeddings_->Snapshot(rank); }
  absl::Status Restore(Communicator& comm) override {
    return embeddings_ == nullptr ? absl::OkStatus() : embeddings_->Restore(comm);
  }
  absl::StatusOr<SparseTables> Save(int rank) override {
    if (embeddings_ == nullptr) return SparseTables{};
    return embeddings_->Tables(rank);
  }
  absl::Status Load(const SparseTables& tables, int rank) override {
    return embeddings_ == nullptr ? absl::OkStatus() : embeddings_->Load(tables, rank);
  }

  // What the model reads from each node type (or the one type's learnable rows).
  std::string Describe() const override {
    const core::TypeMap& types = graph_.node_types();
    auto names = [&](const std::vector<int>& ts) {
      std::vector<std::string> n;
      for (int t : ts) n.push_back(types.name(t));
      return base::StrJoin(n, ", ");
    };
    std::vector<std::string> parts;
    if (!input_->featured().empty()) {
      parts.push_back(StrCat(names(input_->featured()), " features",
                             o_.embed.dim > 0 ? StrCat(" projected to ", input_->width()) : std::string()));
    }
    if (!input_->featureless().empty()) {
      parts.push_back(StrCat(names(input_->featureless()), " nodes:",
                             embeddings_ != nullptr
                                 ? StrCat(" learnable rows of ", o_.embed.dim, " on the servers (sparse ",
                                          core::SparseOptimizerName(o_.embed.optimizer.kind), ", lr ",
                                          o_.embed.optimizer.lr,
                                          embeddings_->Mapped(graph_.machine_id())
                                              ? "; this machine's rows mapped from its server's shared memory"
                                              : "",
                                          ")")
                                 : std::string(" zeros (no --embed-featureless)")));
    }
    return base::StrJoin(parts, "; ");
  }

 private:
  std::shared_ptr<TypedInput> input_;
  const sampler::DistGraph& graph_;
  ModelInputOptions o_;
  std::unique_ptr<DistEmbeddings> embeddings_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ModelInput>> MakeModelInput(const sampler::DistGraph& graph,
                                                           const ModelInputOptions& o) {
  const core::PartitionConfig& config = graph.config();
  if (config.typed()) {
    ASSIGN_OR_RETURN(std::shared_ptr<TypedInput> input, TypedInput::Make(graph, o.feature_field, o.embed.dim, o.seed));
    return std::make_unique<TypedModelInput>(std::move(input), graph, o);
  }
  if (o.embed.dim > 0) {
    // A graph without features (or told to ignore them with --feature-field ''): every node gets
    // a learnable row, the one node type's table.
    if (!o.feature_field.empty() && graph.NodeFieldSchema(o.feature_field).ok()) {
      return absl::InvalidArgumentError(StrCat("--embed-featureless: graph '", config.graph_name, "' has features '",
                                               o.feature_field, "'; learnable rows are for nodes without features "
                                               "(--feature-field '' trains them in place of the features)"));
    }
    ASSIGN_OR_RETURN(std::shared_ptr<TypedInput> input, TypedInput::Make(graph, "", o.embed.dim, o.seed));
    return std::make_unique<TypedModelInput>(std::move(input), graph, o);
  }
  ASSIGN_OR_RETURN(core::FieldSchema feat, graph.NodeFieldSchema(o.feature_field));
  return std::make_unique<FeatureInput>(feat.decoded_elems());
}

}  // namespace fanout::trainer
