#include "trainer/dist_embedding.h"

#include <ATen/ops/_unique2.h>
#include <ATen/ops/argsort.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "core/random.h"
#include "core/status.h"
#include "core/strings.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using core::StrCat;

DistEmbeddings::DistEmbeddings(const sampler::DistGraph& graph, sampler::ServerFields* fields, std::vector<int> types,
                               EmbeddingOptions options, int trainers_per_machine)
    : graph_(graph), fields_(fields), types_(std::move(types)), o_(std::move(options)), tpm_(trainers_per_machine) {}

bool DistEmbeddings::has(int type) const { return std::find(types_.begin(), types_.end(), type) != types_.end(); }

core::FieldSchema DistEmbeddings::RowSchema(int type) const {
  return core::FieldSchema{.name = o_.name, .dtype = core::DType::kFloat32, .row_shape = {o_.dim},
                           .node_type = graph_.node_types().name(type)};
}

core::FieldSchema DistEmbeddings::StateSchema(int type) const {
  return core::FieldSchema{.name = StrCat(o_.name, ".", SparseOptimizerName(o_.optimizer.kind)),
                           .dtype = core::DType::kFloat32,
                           .row_shape = {core::SparseStateWidth(o_.optimizer.kind, o_.dim)},
                           .node_type = graph_.node_types().name(type)};
}

int DistEmbeddings::OwnerRank(int64_t id) const {
  return graph_.node_book().PartOf(id) * tpm_ + static_cast<int>(id % tpm_);
}

absl::StatusOr<std::unique_ptr<DistEmbeddings>> DistEmbeddings::Create(const sampler::DistGraph& graph,
                                                                       sampler::ServerFields* fields,
                                                                       std::vector<int> types,
                                                                       const EmbeddingOptions& options,
                                                                       Communicator& comm, int trainers_per_machine) {
  if (options.dim < 1) return absl::InvalidArgumentError(StrCat("--embed-featureless ", options.dim, ": must be >= 1"));
  if (absl::Status s = core::CheckSparseOptimizer(options.optimizer); !s.ok()) {
    return absl::InvalidArgumentError(StrCat("sparse optimizer: ", s.message()));
  }
  std::unique_ptr<DistEmbeddings> e(
      new DistEmbeddings(graph, fields, std::move(types), options, trainers_per_machine));
  for (int t : e->types_) {
    for (const core::FieldSchema& schema : {e->RowSchema(t), e->StateSchema(t)}) {
      absl::StatusOr<bool> made = fields->Create(schema);
      if (!made.ok()) {
        return absl::Status(made.status().code(),
                            StrCat("creating the learnable embeddings of node type ", graph.node_types().name(t),
                                   " on the servers (--embed-featureless; the servers need --allow-push): ",
                                   made.status().message()));
      }
    }
  }
  RETURN_IF_ERROR(e->Initialise(comm.rank()));
  absl::Status s = comm.Barrier();
  if (!s.ok()) return absl::Status(s.code(), StrCat("waiting for every trainer's initial embeddings: ", s.message()));
  return e;
}

std::vector<int64_t> DistEmbeddings::OwnedIds(int type, int rank) const {
  const auto [begin, end] = graph_.node_types().Range(type, rank / tpm_);
  std::vector<int64_t> ids;
  for (int64_t v = begin; v < end; ++v) {
    if (v % tpm_ == rank % tpm_) ids.push_back(v);
  }
  return ids;
}

absl::Status DistEmbeddings::Initialise(int rank) {
  for (int t : types_) {
    const std::vector<int64_t> ids = OwnedIds(t, rank);
    std::vector<float> rows(ids.size() * o_.dim);
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint64_t row = core::SplitMix64(o_.seed ^ core::SplitMix64(static_cast<uint64_t>(ids[i])));
      for (int64_t k = 0; k < o_.dim; ++k) {
        const double u = static_cast<double>(core::SplitMix64(row + static_cast<uint64_t>(k)) >> 11) * 0x1.0p-53;
        rows[i * o_.dim + k] = static_cast<float>((2 * u - 1) * o_.init_scale);
      }
    }
    if (ids.empty()) continue;
    RETURN_IF_ERROR(fields_->Push(RowSchema(t), ids, reinterpret_cast<const char*>(rows.data()), core::PushOp::kAssign));
    // The state starts at zero even on servers that kept the fields of an earlier job.
    const std::vector<float> state(ids.size() * core::SparseStateWidth(o_.optimizer.kind, o_.dim), 0.0f);
    RETURN_IF_ERROR(
        fields_->Push(StateSchema(t), ids, reinterpret_cast<const char*>(state.data()), core::PushOp::kAssign));
  }
  return absl::OkStatus();
}

absl::Status DistEmbeddings::Snapshot(int rank) {
  ASSIGN_OR_RETURN(snapshot_, PullOwned(rank));
  return absl::OkStatus();
}

absl::Status DistEmbeddings::Restore(Communicator& comm) {
  RETURN_IF_ERROR(PushOwned(snapshot_));
  return comm.Barrier();
}

absl::StatusOr<std::vector<DistEmbeddings::Saved>> DistEmbeddings::PullOwned(int rank) {
  std::vector<Saved> saved(types_.size());
  const int64_t sw = core::SparseStateWidth(o_.optimizer.kind, o_.dim);
  for (size_t i = 0; i < types_.size(); ++i) {
    Saved& s = saved[i];
    s.ids = OwnedIds(types_[i], rank);
    s.rows.resize(s.ids.size() * o_.dim);
    s.state.resize(s.ids.size() * sw);
    if (s.ids.empty()) continue;
    RETURN_IF_ERROR(fields_->Pull(RowSchema(types_[i]), s.ids, reinterpret_cast<char*>(s.rows.data())));
    RETURN_IF_ERROR(fields_->Pull(StateSchema(types_[i]), s.ids, reinterpret_cast<char*>(s.state.data())));
  }
  return saved;
}

absl::Status DistEmbeddings::PushOwned(const std::vector<Saved>& saved) {
  for (size_t i = 0; i < saved.size(); ++i) {
    const Saved& s = saved[i];
    if (s.ids.empty()) continue;
    RETURN_IF_ERROR(
        fields_->Push(RowSchema(types_[i]), s.ids, reinterpret_cast<const char*>(s.rows.data()), core::PushOp::kAssign));
    RETURN_IF_ERROR(fields_->Push(StateSchema(types_[i]), s.ids, reinterpret_cast<const char*>(s.state.data()),
                                  core::PushOp::kAssign));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, at::Tensor>>> DistEmbeddings::Tables(int rank) {
  ASSIGN_OR_RETURN(std::vector<Saved> saved, PullOwned(rank));
  std::vector<std::pair<std::string, at::Tensor>> out;
  const int64_t sw = core::SparseStateWidth(o_.optimizer.kind, o_.dim);
  for (size_t i = 0; i < types_.size(); ++i) {
    const std::string type = graph_.node_types().name(types_[i]);
    const int64_t n = static_cast<int64_t>(saved[i].ids.size());
    out.emplace_back(type + ".ids", at::tensor(saved[i].ids, at::kLong));
    out.emplace_back(type + ".rows", at::tensor(saved[i].rows, at::kFloat).view({n, o_.dim}));
    out.emplace_back(type + ".state", at::tensor(saved[i].state, at::kFloat).view({n, sw}));
  }
  return out;
}

absl::Status DistEmbeddings::Load(const std::vector<std::pair<std::string, at::Tensor>>& tables, int rank) {
  std::map<std::string, at::Tensor> by_name(tables.begin(), tables.end());
  const int64_t sw = core::SparseStateWidth(o_.optimizer.kind, o_.dim);
  std::vector<Saved> saved(types_.size());
  for (size_t i = 0; i < types_.size(); ++i) {
    const std::string type = graph_.node_types().name(types_[i]);
    Saved& s = saved[i];
    s.ids = OwnedIds(types_[i], rank);
    const int64_t n = static_cast<int64_t>(s.ids.size());
    auto get = [&](const std::string& what, at::ScalarType dtype, std::vector<int64_t> shape) -> absl::StatusOr<at::Tensor> {
      auto it = by_name.find(type + "." + what);
      if (it == by_name.end()) {
        return absl::InvalidArgumentError(StrCat("it holds no embeddings '", type, ".", what,
                                                 "' (written without --embed-featureless?)"));
      }
      const at::Tensor& t = it->second;
      if (t.scalar_type() != dtype || t.sizes() != at::IntArrayRef(shape)) {
        return absl::InvalidArgumentError(StrCat("its embeddings '", type, ".", what, "' are ", t.scalar_type(), " ",
                                                 t.sizes(), "; this job's are ", dtype, " ", at::IntArrayRef(shape),
                                                 " (--embed-featureless, --sparse-optimizer and the trainers per "
                                                 "machine must be the checkpoint's)"));
      }
      return t.contiguous();
    };
    ASSIGN_OR_RETURN(const at::Tensor ids, get("ids", at::kLong, {n}));
    if (!std::equal(s.ids.begin(), s.ids.end(), ids.data_ptr<int64_t>())) {
      return absl::InvalidArgumentError(StrCat("its ", type, " embeddings are another rank's rows"));
    }
    ASSIGN_OR_RETURN(const at::Tensor rows, get("rows", at::kFloat, {n, o_.dim}));
    ASSIGN_OR_RETURN(const at::Tensor state, get("state", at::kFloat, {n, sw}));
    s.rows.assign(rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
    s.state.assign(state.data_ptr<float>(), state.data_ptr<float>() + state.numel());
  }
  return PushOwned(saved);
}

absl::StatusOr<at::Tensor> DistEmbeddings::Lookup(int type, const at::Tensor& ids) {
  if (!has(type)) return absl::InternalError(StrCat("node type ", type, " has no learnable embeddings"));
  const at::Tensor cpu_ids = ids.to(at::kCPU).to(at::kLong).contiguous();
  const int64_t n = cpu_ids.size(0);
  at::Tensor rows = at::empty({n, o_.dim}, at::kFloat);
  RETURN_IF_ERROR(fields_->Pull(RowSchema(type), std::span<const int64_t>(cpu_ids.data_ptr<int64_t>(), n),
                                static_cast<char*>(rows.data_ptr())));
  if (at::GradMode::is_enabled()) {
    rows.requires_grad_(true);
    looked_up_.push_back({cpu_ids, rows});
  }
  return rows;
}

absl::Status DistEmbeddings::Step(Communicator& comm, int64_t* touched) {
  if (touched != nullptr) *touched = 0;
  const int w = comm.world_size();
  std::vector<Looked> looked = std::move(looked_up_);
  looked_up_.clear();
  // This rank's rows and gradients, duplicates summed, ordered by owner.
  at::Tensor ids, grads;
  std::vector<int64_t> send(w, 0);
  RETURN_IF_ERROR(CatchTorch("collecting embedding gradients", [&] {
    std::vector<at::Tensor> all_ids, all_grads;
    for (const Looked& l : looked) {
      all_ids.push_back(l.ids);
      all_grads.push_back(l.rows.grad().defined() ? l.rows.grad() : at::zeros_like(l.rows));
    }
    if (all_ids.empty()) {
      ids = at::empty({0}, at::kLong);
      grads = at::empty({0, o_.dim}, at::kFloat);
    } else {
      const auto [uniq, inverse, counts] = at::_unique2(at::cat(all_ids), /*sorted=*/true, /*return_inverse=*/true);
      ids = uniq;
      grads = at::zeros({uniq.size(0), o_.dim}, at::kFloat).index_add_(0, inverse, at::cat(all_grads).detach());
    }
    at::Tensor owner = at::empty({ids.size(0)}, at::kLong);
    const int64_t* id = ids.data_ptr<int64_t>();
    int64_t* own = owner.data_ptr<int64_t>();
    for (int64_t i = 0; i < ids.size(0); ++i) {
      own[i] = OwnerRank(id[i]);
      ++send[own[i]];
    }
    const at::Tensor order = at::argsort(owner);
    ids = ids.index_select(0, order).contiguous();
    grads = grads.index_select(0, order).contiguous();
  }));
  ASSIGN_OR_RETURN(std::vector<int64_t> recv, ExchangeCounts(comm, send));
  const c10::Device dev = comm.device();
  ASSIGN_OR_RETURN(at::Tensor got_ids, comm.AllToAll(ids.to(dev), send, recv));
  ASSIGN_OR_RETURN(at::Tensor got_grads, comm.AllToAll(grads.to(dev), send, recv));
  // The rows this rank owns: every rank's gradients summed, averaged over the ranks.
  at::Tensor mine, mine_grads;
  RETURN_IF_ERROR(CatchTorch("summing embedding gradients", [&] {
    got_ids = got_ids.to(at::kCPU);
    got_grads = got_grads.to(at::kCPU);
    const auto [uniq, inverse, counts] = at::_unique2(got_ids, /*sorted=*/true, /*return_inverse=*/true);
    mine = uniq.contiguous();
    mine_grads = at::zeros({uniq.size(0), o_.dim}, at::kFloat).index_add_(0, inverse, got_grads);
    mine_grads.div_(static_cast<double>(w));
  }));
  // Type by type, the servers apply the step where the rows live.
  const core::TypeMap& types = graph_.node_types();
  const int64_t n = mine.size(0);
  const int64_t* mid = mine.data_ptr<int64_t>();
  const float* mg = mine_grads.data_ptr<float>();
  // Each row's type once, then one request per type.
  std::vector<std::vector<int64_t>> tids(types.num_types());
  std::vector<std::vector<float>> g(types.num_types());
  for (int64_t i = 0; i < n; ++i) {
    const int t = types.ToTypeWise(mid[i]).first;
    tids[t].push_back(mid[i]);
    g[t].insert(g[t].end(), mg + i * o_.dim, mg + (i + 1) * o_.dim);
  }
  for (int t : types_) {
    if (tids[t].empty()) continue;
    RETURN_IF_ERROR(fields_->SparseUpdate(RowSchema(t), StateSchema(t), tids[t], g[t].data(), o_.optimizer));
  }
  if (touched != nullptr) *touched = n;
  // Nobody reads a row for the next step before its owner has written it.
  return comm.Barrier();
}

}  // namespace fanout::trainer
