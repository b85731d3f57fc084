// Link prediction (--task link) on a graph partitioned with --edge-split: the positives are the
// stored edges (each rank a contiguous slice of its partition's, RankEdgeSeeds), each with
// --negatives pairs (--negative-sampling: drawn per positive, shared by the batch, the batch's own
// destinations, or drawn in the trainer's partition); the model embeds every endpoint and the
// scorer (link_scorer.h, a submodule "scorer" of the model, so that it trains, synchronises and
// checkpoints with it) scores a pair from its two embeddings; the loss is --link-loss
// (link_loss.h). Evaluation embeds every node (full-graph inference) and scores
// link/{valid,test}_pos.npy against each positive's negatives (link/'s stored ones, or
// --eval-negatives drawn from --eval-seed): ROC-AUC, the metric, and MRR and Hits@K of each
// positive against its own negatives.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

#include "base/status.h"
#include "base/strings.h"
#include "core/dtype.h"
#include "core/npy.h"
#include "core/random.h"
#include "sampler/cache_choice.h"
#include "sampler/link_sampler.h"
#include "sampler/loader.h"
#include "trainer/link_loss.h"
#include "trainer/link_scorer.h"
#include "trainer/task.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

class LinkPrediction final : public Task {
 public:
  absl::Status Validate(const TrainOptions& o) const override {
    auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
    if (o.link.draw.negatives < 1 || o.link.draw.negatives > 1000) {
      return bad("--negatives must be in [1, 1000], got ", o.link.draw.negatives);
    }
    if (o.link.draw.edges_per_epoch < 0) {
      return bad("--edges-per-epoch must be >= 0 (0: all of a trainer's edges), got ", o.link.draw.edges_per_epoch);
    }
    if (o.link.embed_dim < 0) return bad("--embed-dim must be >= 0 (0: --hidden), got ", o.link.embed_dim);
    if (!o.link.draw.hard_negative_field.empty() &&
        (o.link.draw.negative_sampling == sampler::NegativeSampling::kJoint ||
         o.link.draw.negative_sampling == sampler::NegativeSampling::kInBatch)) {
      return bad("--hard-negative-field gives each positive its own negatives: use --negative-sampling uniform, "
                 "degree or local to fill them up, not ", sampler::NegativeSamplingName(o.link.draw.negative_sampling));
    }
    if (o.link.draw.hard_negative_field.empty() && o.link.draw.hard_negatives != 0) {
      return bad("--hard-negatives goes with --hard-negative-field");
    }
    if (o.link.draw.hard_negatives < 0 || o.link.draw.hard_negatives > o.link.draw.negatives) {
      return bad("--hard-negatives must be in [0, --negatives] (0: up to --negatives), got ",
                 o.link.draw.hard_negatives);
    }
    if (o.link.draw.negative_sampling == sampler::NegativeSampling::kInBatch && o.sampling.batch_size < 2) {
      return bad("--negative-sampling in-batch takes the other positives of a batch: --batch-size must be >= 2");
    }
    if (!(o.link.loss.temperature > 0) || !std::isfinite(o.link.loss.temperature)) {
      return bad("--loss-temperature must be a positive number, got ", o.link.loss.temperature);
    }
    const bool weighted = o.link.loss.kind == LinkLoss::kWeightedBce;
    if (weighted && o.link.loss_weight_field.empty() && o.sampling.edge.weight_field.empty()) {
      return bad("--link-loss weighted-bce weights each positive by an edge field: name it with --loss-weight-field "
                 "(or --edge-weight)");
    }
    if (!weighted && !o.link.loss_weight_field.empty()) {
      return bad("--loss-weight-field applies to --link-loss weighted-bce only");
    }
    if (o.link.eval_negatives < 0 || o.link.eval_negatives > 100000) {
      return bad("--eval-negatives must be in [0, 100000] (0: the partition's stored negatives), got ",
                 o.link.eval_negatives);
    }
    if (o.link.eval_negative_sampling != sampler::NegativeSampling::kUniform &&
        o.link.eval_negative_sampling != sampler::NegativeSampling::kJoint) {
      return bad("--eval-negative-sampling must be uniform or joint, got ",
                 sampler::NegativeSamplingName(o.link.eval_negative_sampling));
    }
    return absl::OkStatus();
  }
  std::optional<Metric> fixed_metric() const override { return Metric::kRocAuc; }

  absl::StatusOr<int64_t> Prepare(JobContext& job) override {
    const TrainOptions& o = job.options();
    const core::PartitionConfig& config = job.config();
    // Positives: every stored edge (a typed graph: every stored edge of the relations the
    // partitioner split, config.link_etypes). Held-out pairs and their negatives: link/
    // (--edge-split), with each pair's relation when there are several.
    sizes_.train = config.edge_bounds.empty() ? 0 : config.edge_bounds.back();
    relations_ = sampler::LinkRelations(config);
    {
      const std::vector<int> types = sampler::LinkNegativeTypes(config);
      one_negative_type_ = std::all_of(types.begin(), types.end(), [&](int t) { return t == types[0]; });
    }
    if (config.typed()) {
      if (relations_.empty()) {
        return absl::FailedPreconditionError(StrCat(
            "--task link on a typed graph ('", config.graph_name, "') predicts the relations it was partitioned "
            "for: partition it with fanout-partition --edge-split TRAIN,VALID,TEST --link-etype REL[,REL...] (",
            config.base_dir, " has no link relation)"));
      }
      sizes_.train = 0;
      for (int relation : relations_) {
        for (const auto& [begin, end] : config.edge_type_ranges[relation]) sizes_.train += end - begin;
      }
    }
    // Only the held-out sets an evaluation will rank are read: a job without one (--eval-every 0
    // --no-test: embeddings trained for use elsewhere) needs no split.
    const bool drawn = o.link.eval_negatives > 0;  // else link/'s stored negatives
    for (auto [file, array] : {std::pair{"valid_pos", &val_pos_}, {"valid_neg", &val_neg_}, {"test_pos", &test_pos_},
                               {"test_neg", &test_neg_}}) {
      if (drawn && std::string_view(file).ends_with("_neg")) continue;
      if (std::string_view(file).starts_with("valid") ? o.eval.every <= 0 : !o.eval.test) continue;
      const std::string path = StrCat(config.base_dir, "/link/", file, ".npy");
      absl::StatusOr<core::NpyArray> a = core::NpyArray::Map(path);
      if (!a.ok()) {
        return absl::FailedPreconditionError(StrCat("--task link: cannot read ", path, " (", a.status().message(),
                                                    "); partition the graph with fanout-partition --edge-split, or train without evaluation: "
                                                    "--eval-every 0 --no-test"));
      }
      if (a->dtype() != core::DType::kInt64 || a->shape().size() != 2 || a->shape()[1] != 2) {
        return absl::InvalidArgumentError(StrCat(path, ": expected int64 [n, 2] node pairs"));
      }
      *array = std::move(*a);
    }
    // Several relations: each held-out pair's relation (an index into link_etypes), beside it.
    for (auto [file, pos, array] : {std::tuple{"valid_rel", &val_pos_, &val_rel_}, {"test_rel", &test_pos_, &test_rel_}}) {
      if (relations_.size() < 2 || pos->shape().size() != 2) continue;  // one relation, or a split not evaluated
      const std::string path = StrCat(config.base_dir, "/link/", file, ".npy");
      absl::StatusOr<core::NpyArray> a = core::NpyArray::Map(path);
      if (!a.ok()) {
        return absl::FailedPreconditionError(StrCat("--task link: cannot read ", path, " (", a.status().message(),
                                                    "): a partition split on several relations says which each "
                                                    "held-out pair is of; partition it again"));
      }
      if (a->dtype() != core::DType::kInt64 || a->shape().size() != 1 || a->rows() != pos->rows()) {
        return absl::InvalidArgumentError(StrCat(path, ": expected int64 [", pos->rows(), "], one relation per pair"));
      }
      const int64_t* r = a->data_as<int64_t>();
      for (int64_t i = 0; i < a->rows(); ++i) {
        if (r[i] < 0 || r[i] >= static_cast<int64_t>(relations_.size())) {
          return absl::InvalidArgumentError(StrCat(path, " row ", i, ": relation ", r[i], " is not an index into the ",
                                                   relations_.size(), " link_etypes"));
        }
      }
      *array = std::move(*a);
    }
    if (!drawn && (val_neg_.rows() % std::max<int64_t>(1, val_pos_.rows()) != 0 ||
                   test_neg_.rows() % std::max<int64_t>(1, test_pos_.rows()) != 0)) {
      return absl::InvalidArgumentError(
          StrCat(config.base_dir, "/link: the negatives are not a whole number per positive"));
    }
    if (o.link.loss.kind == LinkLoss::kWeightedBce) {  // the field exists and has one number per edge
      RETURN_IF_ERROR(PositiveWeights(job, {}, {}).status());
    }
    if (o.eval.every > 0) sizes_.val = val_pos_.rows();
    if (o.eval.test) sizes_.test = test_pos_.rows();
    if (sizes_.train < o.dist.world_size) {
      return absl::FailedPreconditionError(
          StrCat("the graph has ", sizes_.train, " edges, fewer than the ", o.dist.world_size, " trainers"));
    }
    return o.link.embed_dim > 0 ? o.link.embed_dim : o.model.hidden;  // the embedding width
  }

  SplitSizes sizes() const override { return sizes_; }

  absl::Status AddModules(JobContext& job, GnnModel& model, const ModelOptions& mo) override {
    const TrainOptions& o = job.options();
    // DistMult keeps a row per edge type (one on a graph of one type) and scores each pair with
    // its link relation's.
    const core::PartitionConfig& config = job.config();
    const int64_t relations = config.typed() ? static_cast<int64_t>(config.edge_types.size()) : 1;
    const int64_t relation = relations_.empty() ? 0 : relations_[0];
    return CatchTorch("building the link scorer", [&] {
      scorer_ = model.register_module(
          "scorer", std::make_shared<LinkScorer>(o.link.scorer, mo.num_classes,
                                                 core::SplitMix64(o.sampling.seed ^ 0x5c0e), relations, relation));
    });
  }

  absl::StatusOr<std::vector<int64_t>> PresampleInputs(JobContext& job, int64_t steps, int64_t* steps_done) override {
    ASSIGN_OR_RETURN(const sampler::LinkSamplerOptions lo, TrainingSampler(job));
    const int64_t epoch_steps = sampler::LinkStepsPerEpoch(lo, lo.draw.edges_per_epoch);
    *steps_done = steps > 0 ? std::min(steps, epoch_steps) : epoch_steps;
    return sampler::PresampleLinkSeeds(&job.graph(), lo, RankEdges(job), *steps_done);
  }

  absl::Status StartTraining(JobContext& job, int64_t first_epoch, int64_t first_step) override {
    const TrainOptions& o = job.options();
    ASSIGN_OR_RETURN(const sampler::LinkSamplerOptions lo, TrainingSampler(job));
    // Link batches are made by sampler processes (--num-samplers N) or threads of this process;
    // either makes the same batches.
    ASSIGN_OR_RETURN(loader_, sampler::MakeLinkBatchLoader(&job.graph(), o.graph, lo, RankEdges(job),
                                                           TrainingLoaderOptions(o, first_epoch, first_step)));
    if (job.lead()) {
      const std::vector<std::string>& names = job.config().link_etypes;
      job.Log(StrCat("fanout-train: link prediction",
                     names.empty() ? "" : StrCat(names.size() == 1 ? " of relation " : " of relations ", base::StrJoin(names, ", ")), ": ",
                     lo.draw.edges_per_epoch, " positive edges per trainer per epoch, ",
                     o.link.draw.negatives, " negative(s) each (",
                     o.link.draw.hard_negative_field.empty()
                         ? ""
                         : StrCat("hard ones from edge field '", o.link.draw.hard_negative_field, "' first, then "),
                     sampler::NegativeSamplingName(o.link.draw.negative_sampling), "); ", ScorerKindName(o.link.scorer),
                     " scorer; ", LinkLossName(o.link.loss.kind),
                     " loss; seed edges excluded from their blocks in both directions; batches made by ",
                     o.loader.num_samplers > 0 ? StrCat(o.loader.num_samplers, " sampler process(es)")
                                               : StrCat(o.loader.num_threads, " thread(s)"),
                     ", ", o.loader.prefetch, " ahead"));
    }
    return absl::OkStatus();
  }

  int64_t steps_per_epoch() const override { return loader_->steps_per_epoch(); }
  void FinishTraining() override { loader_.reset(); }

  // The model embeds every endpoint of the batch's pairs; the scorer scores each positive and
  // its negatives ([n] and [n, k]), and --link-loss turns them into the loss.
  absl::StatusOr<StepLoss> Step(JobContext& job, int64_t epoch, int64_t step, Breakdown& t) override {
    const TrainOptions& o = job.options();
    auto t0 = Clock::now();
    ASSIGN_OR_RETURN(sampler::LinkMiniBatch lb, loader_->Next());
    RETURN_IF_ERROR(CheckBatchOrder("link loader", lb.epoch, lb.step, epoch, step));
    t.wait += Since(t0);
    ASSIGN_OR_RETURN(BatchTensors bt, job.StepTensors(lb.nodes, epoch, step, /*labels=*/false, t));
    t0 = Clock::now();
    // Each positive's link relation, found once (several relations only).
    const std::vector<int> pair_rel = PairRelations(job, lb.eids);
    std::vector<float> weights;
    if (o.link.loss.kind == LinkLoss::kWeightedBce) {
      ASSIGN_OR_RETURN(weights, PositiveWeights(job, lb.eids, pair_rel));
    }
    StepLoss s;
    ASSIGN_OR_RETURN(const at::Tensor x, job.ModelInput(bt, lb.nodes));
    RETURN_IF_ERROR(CatchTorch("forward", [&] {
      const at::Tensor h = job.model().Forward(bt.blocks, x);
      // The pairs' endpoints (and weights), copied like the batch (without blocking the host).
      std::vector<at::Tensor> host = {at::tensor(lb.pos_src, at::kLong), at::tensor(lb.pos_dst, at::kLong),
                                      at::tensor(lb.neg_src, at::kLong), at::tensor(lb.neg_dst, at::kLong)};
      // Several link relations under distmult: each positive's edge type, its relation vector.
      const bool typed_pairs = relations_.size() > 1 && scorer_->kind() == ScorerKind::kDistMult;
      if (typed_pairs) {
        std::vector<int64_t> types(pair_rel.size());
        for (size_t i = 0; i < pair_rel.size(); ++i) types[i] = relations_[pair_rel[i]];
        host.push_back(at::tensor(types, at::kLong));
      }
      if (!weights.empty()) host.push_back(at::tensor(weights, at::kFloat));
      const std::vector<at::Tensor> ends = job.uploader().Upload(host);
      const at::Tensor rel = typed_pairs ? ends[4] : at::Tensor();
      const int64_t n = static_cast<int64_t>(lb.pos_src.size());
      const int64_t k = n > 0 ? static_cast<int64_t>(lb.neg_dst.size()) / n : 0;
      const at::Tensor src = h.index_select(0, ends[0]);
      const at::Tensor pos = scorer_->Score(src, h.index_select(0, ends[1]), rel);
      // Joint negatives are the same k nodes for every positive (row 0's) when the link
      // relations share one destination type: every source against them, not n * k gathered pairs.
      const at::Tensor neg =
          o.link.draw.negative_sampling == sampler::NegativeSampling::kJoint && k > 0 && one_negative_type_
              ? scorer_->ScoreAll(src, h.index_select(0, ends[3].narrow(0, 0, k)), rel)
              : scorer_->Score(h.index_select(0, ends[2]), h.index_select(0, ends[3]),
                               typed_pairs ? rel.repeat_interleave(k) : rel)
                    .view({n, k});
      s.loss = LinkLossOf(o.link.loss, pos, neg, weights.empty() ? at::Tensor() : ends.back());
      s.correct = pos.gt(0).sum() + neg.le(0).sum();
      s.n = static_cast<double>(n + n * k);
    }));
    t.forward += Since(t0);
    return s;
  }

  // ROC-AUC over the split's pairs, returned; MRR and Hits@K against each positive's own
  // negatives, over all pairs and per link relation, kept for EvaluationDetail/EvaluationMetrics.
  absl::StatusOr<double> Evaluate(JobContext& job, Split split, int64_t) override {
    const TrainOptions& o = job.options();
    const core::NpyArray& pos = split == Split::kTest ? test_pos_ : val_pos_;
    const core::NpyArray& neg = split == Split::kTest ? test_neg_ : val_neg_;
    const core::NpyArray& rel = split == Split::kTest ? test_rel_ : val_rel_;
    Communicator& comm = job.comm();
    ASSIGN_OR_RETURN(InferenceResult r, InferAllNodes(job.model(), job.graph(), comm, job.Inference()));
    job.model().train();
    // This rank's slice of the positives [lo, hi), with their negatives: link/'s (k per
    // positive), drawn per positive, or drawn once for the split (joint: k nodes per relation).
    const int world = comm.world_size(), rank = comm.rank();
    const bool drawn = o.link.eval_negatives > 0;
    const bool joint = drawn && o.link.eval_negative_sampling == sampler::NegativeSampling::kJoint;
    const int64_t n = pos.rows();
    const int64_t k = drawn ? o.link.eval_negatives : n > 0 ? neg.rows() / n : 1;
    const int64_t lo = n * rank / world, hi = n * (rank + 1) / world, m = hi - lo;
    const int num_rel = std::max<int>(1, static_cast<int>(relations_.size()));
    const int64_t* p = pos.data_as<int64_t>();
    // Each pair's link relation (0 with one relation).
    std::vector<int64_t> pair_rel(m, 0);
    if (rel.shape().size() == 1 && rel.rows() == n && n > 0) std::copy(rel.data_as<int64_t>() + lo, rel.data_as<int64_t>() + hi, pair_rel.begin());
    std::vector<int64_t> ids(p + 2 * lo, p + 2 * hi);
    if (!drawn) {
      const int64_t* q = neg.data_as<int64_t>();
      ids.insert(ids.end(), q + 2 * lo * k, q + 2 * hi * k);
    } else {
      const std::vector<int64_t> dst = sampler::DrawEvalNegatives(
          job.graph(), {p + 2 * lo, p + 2 * hi}, pair_rel, lo, k, joint, o.link.eval_seed, static_cast<uint64_t>(split));
      ids.insert(ids.end(), dst.begin(), dst.end());  // the destinations only: sources are the positives'
    }
    ASSIGN_OR_RETURN(at::Tensor rows, FetchNodeRows(comm, job.graph().node_book(), o.trainers_per_machine, r, ids));
    at::Tensor pos_score, neg_score;
    RETURN_IF_ERROR(CatchTorch("link evaluation", [&] {
      at::NoGradGuard no_grad;  // (the scorer has no dropout: no eval mode needed)
      const at::Tensor all = rows.to(job.device());
      const at::Tensor pairs = all.narrow(0, 0, 2 * m).view({m, 2, all.size(1)});
      const at::Tensor link_rel = at::tensor(pair_rel, at::kLong);
      // distmult's row of each pair: its relation's edge type.
      at::Tensor type;
      if (relations_.size() > 1 && scorer_->kind() == ScorerKind::kDistMult) {
        type = at::tensor(std::vector<int64_t>(relations_.begin(), relations_.end()), at::kLong)
                   .index_select(0, link_rel)
                   .to(job.device());
      }
      const at::Tensor each_type = type.defined() ? type.repeat_interleave(k) : type;
      pos_score = scorer_->Score(pairs.select(1, 0), pairs.select(1, 1), type);
      if (joint && num_rel == 1) {
        neg_score = scorer_->ScoreAll(pairs.select(1, 0), all.narrow(0, 2 * m, k), type);
      } else if (joint) {  // positive i against its relation's k: rows rel_i * k + j of the drawn ones
        const at::Tensor at_row = (link_rel.unsqueeze(1) * k + at::arange(k, at::kLong).unsqueeze(0)).flatten();
        const at::Tensor sources = pairs.select(1, 0).repeat_interleave(k, 0);
        neg_score = scorer_->Score(sources, all.narrow(0, 2 * m, num_rel * k).index_select(0, at_row.to(job.device())),
                                   each_type)
                        .view({m, k});
      } else if (drawn) {
        const at::Tensor sources = pairs.select(1, 0).repeat_interleave(k, 0);  // drawn for the positive's source
        neg_score = scorer_->Score(sources, all.narrow(0, 2 * m, m * k), each_type).view({m, k});
      } else {
        const at::Tensor negs = all.narrow(0, 2 * m, 2 * m * k).view({m * k, 2, all.size(1)});
        neg_score = scorer_->Score(negs.select(1, 0), negs.select(1, 1), each_type).reshape({m, k});
      }
    }));
    // ROC-AUC over all pairs, on the raw scores.
    MetricAccumulator auc(Metric::kRocAuc, 2);
    RETURN_IF_ERROR(CatchTorch("link evaluation", [&] {
      auc.AddBinaryScores(at::cat({pos_score, neg_score.flatten()}),
                          at::cat({at::ones({m}, at::kLong), at::zeros({m * k}, at::kLong)}));
    }));
    ASSIGN_OR_RETURN(double roc_auc, auc.Reduce(comm));
    // Rankings over all pairs, then per relation (with several), summed over the ranks at once.
    const std::vector<int64_t> ks = {1, 10, 50, 100};
    std::vector<double> v;
    RETURN_IF_ERROR(CatchTorch("link evaluation", [&] {
      const at::Tensor pos_cpu = pos_score.cpu(), neg_cpu = neg_score.cpu();
      const at::Tensor link_rel = at::tensor(pair_rel, at::kLong);
      for (int g = -1; g < (num_rel > 1 ? num_rel : 0); ++g) {
        RankingSums sums;
        if (g < 0) {
          AddRankings(pos_cpu, neg_cpu, ks, &sums);
        } else {
          const at::Tensor mine = link_rel.eq(g).nonzero().flatten();
          AddRankings(pos_cpu.index_select(0, mine), neg_cpu.index_select(0, mine), ks, &sums);
        }
        sums.hits.resize(ks.size(), 0);
        v.insert(v.end(), {sums.reciprocal_rank, sums.count});
        v.insert(v.end(), sums.hits.begin(), sums.hits.end());
      }
    }));
    ASSIGN_OR_RETURN(v, AllReduceSum(comm, v));
    const size_t stride = 2 + ks.size();
    metrics_ = nlohmann::json::object();
    // "mrr X, hits@1 Y, ..." of group g (-1: all pairs) with its metrics file keys.
    auto figures = [&](int g, const std::string& suffix) {
      const double* f = v.data() + (g + 1) * stride;
      const double count = std::max(1.0, f[1]);
      metrics_[StrCat("mrr", suffix)] = f[0] / count;
      std::string text = StrCat("mrr ", Fixed4(f[0] / count));
      for (size_t i = 0; i < ks.size(); ++i) {
        metrics_[StrCat("hits@", ks[i], suffix)] = f[2 + i] / count;
        if (k >= ks[i]) text += StrCat(", hits@", ks[i], " ", Fixed4(f[2 + i] / count));
      }
      return text;
    };
    detail_ = figures(-1, "");
    detail_ += StrCat(" over ", k, " negative(s) each");
    if (drawn) detail_ += joint ? " (joint, drawn)" : " (drawn)";
    const std::vector<std::string>& names = job.config().link_etypes;
    if (names.size() == 1) detail_ += StrCat(" of relation ", names[0]);
    for (int g = 0; num_rel > 1 && g < num_rel; ++g) {
      const double pairs = v[(g + 1) * stride + 1];
      detail_ += StrCat(g == 0 ? "; per relation: " : "; ", names[g], " ", figures(g, StrCat("[", names[g], "]")),
                        " (", static_cast<int64_t>(pairs), " pairs)");
    }
    return roc_auc;
  }

  std::string EvaluationDetail() const override { return detail_; }
  nlohmann::json EvaluationMetrics() const override { return metrics_; }
  std::string NoTestReason() const override { return "link/test_pos.npy holds no pairs"; }

  void DescribeTraining(nlohmann::json& training) const override {
    training["task"] = "link";
    training["scorer"] = std::string(ScorerKindName(scorer_->kind()));
  }

  // weighted-bce: each positive edge's weight, one number of --loss-weight-field (or
  // --edge-weight's field) per edge, as float32; on a typed graph each link relation's field of
  // that name (SRC:REL:DST/NAME; every link relation must have one; `pair_rel`: PairRelations).
  // With no edges, only checks the fields.
  absl::StatusOr<std::vector<float>> PositiveWeights(JobContext& job, const std::vector<int64_t>& eids,
                                                     const std::vector<int>& pair_rel) const {
    const TrainOptions& o = job.options();
    const std::string& field =
        o.link.loss_weight_field.empty() ? o.sampling.edge.weight_field : o.link.loss_weight_field;
    std::vector<std::string> keys = {field};
    if (!relations_.empty()) {
      keys.clear();
      for (int r : relations_) keys.push_back(job.config().edge_types[r].ToString() + "/" + field);
    }
    std::vector<core::FieldSchema> schemas;
    for (const std::string& key : keys) {
      absl::StatusOr<core::FieldSchema> f = job.graph().EdgeFieldSchema(key);
      if (!f.ok()) {
        return absl::NotFoundError(StrCat("--link-loss weighted-bce weighs every positive: ", f.status().message()));
      }
      if (f->row_elems() != 1) {
        return absl::InvalidArgumentError(StrCat("--link-loss weighted-bce: edge field '", key,
                                                 "' must hold one number per edge; it has ", f->row_elems()));
      }
      schemas.push_back(*std::move(f));
    }
    std::vector<float> w(eids.size());
    for (size_t k = 0; k < keys.size(); ++k) {  // each link relation's positives together
      std::vector<int64_t> mine, ids;
      for (size_t i = 0; i < eids.size(); ++i) {
        if (keys.size() == 1 || pair_rel[i] == static_cast<int>(k)) {
          mine.push_back(static_cast<int64_t>(i));
          ids.push_back(eids[i]);
        }
      }
      if (ids.empty()) continue;
      std::vector<char> raw(ids.size() * schemas[k].row_bytes());
      RETURN_IF_ERROR(job.graph().PullEdgeRows(keys[k], ids, raw.data()));
      std::vector<float> part(ids.size());
      core::ConvertElements(schemas[k].dtype, raw.data(), part.size(), part.data());
      for (size_t m = 0; m < mine.size(); ++m) w[mine[m]] = part[m];
    }
    return w;
  }
  bool WritesPredictions() const override { return false; }

  // Each positive edge's link relation (an index into relations_) with several link relations;
  // empty otherwise (the stored edges trained on are the link relations' alone).
  std::vector<int> PairRelations(JobContext& job, const std::vector<int64_t>& eids) const {
    if (relations_.size() < 2) return {};
    std::vector<int> out(eids.size());
    for (size_t i = 0; i < eids.size(); ++i) out[i] = std::max(0, sampler::LinkRelationOf(job.config(), relations_, eids[i]));
    return out;
  }

 private:
  // This rank's positives: the edges its slice of its partition stores.
  static sampler::SeedArray RankEdges(const JobContext& job) {
    return sampler::RankEdgeSeeds(job.config(), job.options().trainers_per_machine, job.options().dist.rank);
  }

  // The training batches' sampler. Every rank takes as many positives an epoch as the smallest
  // rank's share (--edges-per-epoch at most), so that the ranks step together and no collective
  // waits on a rank that has run out; the shares follow from the partition config alone.
  static absl::StatusOr<sampler::LinkSamplerOptions> TrainingSampler(const JobContext& job) {
    const TrainOptions& o = job.options();
    sampler::LinkSamplerOptions lo;
    lo.sampling = o.sampling;
    lo.sampling.rank = o.dist.rank;
    if (job.feature_cache() != nullptr) lo.sampling.cached_nodes = job.feature_cache()->nodes();
    lo.draw = o.link.draw;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (int r = 0; r < o.dist.world_size; ++r) {
      fewest = std::min(fewest, sampler::RankEdgeCount(job.config(), o.trainers_per_machine, r));
    }
    lo.draw.edges_per_epoch = o.link.draw.edges_per_epoch > 0 ? std::min(fewest, o.link.draw.edges_per_epoch) : fewest;
    if (lo.draw.edges_per_epoch < 1) {
      return absl::FailedPreconditionError("--task link: a trainer's partition stores no edges to train on");
    }
    return lo;
  }

  SplitSizes sizes_;
  std::vector<int> relations_;  // sampler::LinkRelations: the link relations' edge types
  bool one_negative_type_ = true;  // every link relation's negatives are of one node type
  core::NpyArray val_pos_, val_neg_, test_pos_, test_neg_, val_rel_, test_rel_;
  std::shared_ptr<LinkScorer> scorer_;
  std::unique_ptr<sampler::LinkBatchSource> loader_;
  std::string detail_;
  nlohmann::json metrics_ = nlohmann::json::object();
};

}  // namespace

std::unique_ptr<Task> MakeLinkPredictionTask() { return std::make_unique<LinkPrediction>(); }

}  // namespace fanout::trainer
