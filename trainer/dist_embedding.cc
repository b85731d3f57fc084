#include "trainer/dist_embedding.h"

#include <ATen/Parallel.h>
#include <ATen/ops/from_blob.h>
#include <ATen/record_function.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <map>

#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "sampler/id_map.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using base::StrCat;

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
                                   " on the servers (--embed-featureless): ",
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
  ASSIGN_OR_RETURN(std::vector<at::Tensor> rows, LookupPieces(type, ids, {ids.size(0)}));
  return std::move(rows[0]);
}

absl::StatusOr<std::vector<at::Tensor>> DistEmbeddings::LookupPieces(int type, const at::Tensor& ids,
                                                                     const std::vector<int64_t>& lengths) {
  ASSIGN_OR_RETURN(std::vector<std::vector<at::Tensor>> pieces, LookupPieces({{type, ids, lengths}}));
  return std::move(pieces[0]);
}

absl::StatusOr<std::vector<std::vector<at::Tensor>>> DistEmbeddings::LookupPieces(
    const std::vector<PieceRequest>& requests) {
  return FinishLookup(StartLookup(requests));
}

std::unique_ptr<DistEmbeddings::PendingLookup> DistEmbeddings::StartLookup(std::vector<PieceRequest> requests) {
  RECORD_USER_SCOPE("fanout::embedding_lookup.start");
  auto p = std::make_unique<PendingLookup>();
  p->requests = std::move(requests);
  const size_t k = p->requests.size();
  p->ids.resize(k);
  p->rows.resize(k);
  for (size_t i = 0; i < k; ++i) {
    const PieceRequest& r = p->requests[i];
    if (!has(r.type)) {
      p->status = absl::InternalError(StrCat("node type ", r.type, " has no learnable embeddings"));
      return p;
    }
    p->ids[i] = r.ids.to(at::kCPU).to(at::kLong).contiguous();
    int64_t total = 0;
    for (int64_t len : r.lengths) total += len;
    if (total != p->ids[i].size(0)) {
      p->status = absl::InternalError(StrCat("pieces of ", total, " rows for ", p->ids[i].size(0), " IDs"));
      return p;
    }
    p->rows[i] = at::empty({p->ids[i].size(0), o_.dim}, at::kFloat);
  }
  // Each type's pull on a thread of its own (ServerFields is thread-safe; a thread touches only
  // its own ids and rows, allocated here).
  for (size_t i = 0; i < k; ++i) {
    p->pulls.push_back(std::async(std::launch::async, [this, schema = RowSchema(p->requests[i].type),
                                                       ids = p->ids[i].data_ptr<int64_t>(), n = p->ids[i].size(0),
                                                       out = static_cast<char*>(p->rows[i].data_ptr())] {
      return fields_->Pull(schema, std::span<const int64_t>(ids, n), out);
    }));
  }
  return p;
}

absl::StatusOr<std::vector<std::vector<at::Tensor>>> DistEmbeddings::FinishLookup(
    std::unique_ptr<PendingLookup> pending) {
  RECORD_USER_SCOPE("fanout::embedding_lookup");
  PendingLookup& p = *pending;
  for (std::future<absl::Status>& f : p.pulls) p.status.Update(f.get());
  RETURN_IF_ERROR(p.status);
  const size_t k = p.requests.size();
  std::vector<std::vector<at::Tensor>> out(k);
  const bool record = at::GradMode::is_enabled();
  for (size_t i = 0; i < k; ++i) {
    int64_t at = 0;
    for (int64_t len : p.requests[i].lengths) {
      at::Tensor piece = p.requests[i].lengths.size() == 1 ? p.rows[i] : p.rows[i].narrow(0, at, len);
      if (record) {
        piece.requires_grad_(true);  // a leaf: a view of rows, which needs no gradient
        looked_up_.push_back({p.ids[i].narrow(0, at, len), piece});
      }
      out[i].push_back(std::move(piece));
      at += len;
    }
  }
  return out;
}

namespace {

// The fewest rows a thread of the sparse update takes (below, a thread costs more than it saves).
constexpr int64_t kMinUpdatePiece = 8192;

// Rows of `dim` floats summed by ID, grouped by a key of each ID: `ids` and `rows` (row i of
// ids[i]) with the IDs of key 0 first, then key 1, ..., `count[k]` of key k; within a key, the
// IDs in order of first appearance, each row the sum of its occurrences in order (so the result
// depends only on the input's order). Host loops with one hash probe per occurrence: on a step's
// ~50K rows, a few milliseconds where sorting with torch's unique took tens.
struct GroupedRows {
  std::vector<int64_t> ids;
  std::vector<float> rows;
  std::vector<int64_t> count;
};

template <typename Key>
GroupedRows SumRowsById(const std::vector<std::pair<const int64_t*, const float*>>& chunks,
                        const std::vector<int64_t>& sizes, int64_t dim, int keys, Key key_of, float scale) {
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  // Pass 1, IDs only: each occurrence's distinct slot (slots are numbered in order of first
  // appearance, so an occurrence is its ID's first exactly when its slot is the next new one).
  sampler::IdMap map;
  map.Reset(static_cast<size_t>(total));
  std::vector<int64_t> slot_of(static_cast<size_t>(total));
  int64_t r = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const int64_t* ids = chunks[c].first;
    for (int64_t i = 0; i < sizes[c]; ++i, ++r) slot_of[r] = map.Insert(ids[i]);
  }
  // Each distinct ID's place in the output, grouped by key.
  const std::vector<int64_t>& distinct = map.ids();
  const size_t n = distinct.size();
  GroupedRows out;
  out.count.assign(keys, 0);
  std::vector<int64_t> place(n);
  for (size_t i = 0; i < n; ++i) {
    place[i] = key_of(distinct[i]);
    ++out.count[place[i]];
  }
  std::vector<int64_t> at(keys, 0);
  for (int k = 1; k < keys; ++k) at[k] = at[k - 1] + out.count[k - 1];
  out.ids.resize(n);
  for (size_t i = 0; i < n; ++i) {
    place[i] = at[place[i]]++;
    out.ids[place[i]] = distinct[i];
  }
  // Pass 2, rows: each occurrence copied or added straight to its place (one pass over the
  // rows, where summing first and grouping after copied them twice), then scaled.
  out.rows.resize(n * dim);
  r = 0;
  int64_t next_new = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const float* rows = chunks[c].second;
    for (int64_t i = 0; i < sizes[c]; ++i, ++r) {
      const float* row = rows + i * dim;
      float* to = out.rows.data() + place[slot_of[r]] * dim;
      if (slot_of[r] == next_new) {
        ++next_new;
        std::memcpy(to, row, static_cast<size_t>(dim) * sizeof(float));
      } else {
        for (int64_t d = 0; d < dim; ++d) to[d] += row[d];
      }
    }
  }
  if (scale != 1.0f) {
    for (float& v : out.rows) v *= scale;
  }
  return out;
}

at::Tensor HostTensor(const std::vector<int64_t>& v) {
  return at::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())}, at::kLong);
}
at::Tensor HostTensor(const std::vector<float>& v, int64_t dim) {
  return at::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size()) / dim, dim}, at::kFloat);
}

}  // namespace

bool DistEmbeddings::Mapped(int part) const {
  for (int t : types_) {
    if (!fields_->Mapped(RowSchema(t), part) || !fields_->Mapped(StateSchema(t), part)) return false;
  }
  return !types_.empty();
}

absl::Status DistEmbeddings::Step(Communicator& comm, int64_t* touched) {
  RECORD_USER_SCOPE("fanout::embedding_update");
  if (touched != nullptr) *touched = 0;
  const int w = comm.world_size();
  std::vector<Looked> looked = std::move(looked_up_);
  looked_up_.clear();
  // This rank's rows and gradients, duplicates summed, grouped by owner.
  GroupedRows local;
  RETURN_IF_ERROR(CatchTorch("collecting embedding gradients", [&] {
    RECORD_USER_SCOPE("fanout::embedding_update.sum_local");
    std::vector<at::Tensor> grads;  // kept alive for the chunks
    std::vector<std::pair<const int64_t*, const float*>> chunks;
    std::vector<int64_t> sizes;
    for (const Looked& l : looked) {
      grads.push_back((l.rows.grad().defined() ? l.rows.grad() : at::zeros_like(l.rows)).to(at::kCPU).contiguous());
      chunks.push_back({l.ids.data_ptr<int64_t>(), grads.back().data_ptr<float>()});
      sizes.push_back(l.ids.size(0));
    }
    local = SumRowsById(chunks, sizes, o_.dim, w, [this](int64_t id) { return OwnerRank(id); }, 1.0f);
  }));
  absl::StatusOr<at::Tensor> got_ids, got_grads;
  {
    RECORD_USER_SCOPE("fanout::embedding_update.exchange");
    ASSIGN_OR_RETURN(std::vector<int64_t> recv, ExchangeCounts(comm, local.count));
    const c10::Device dev = comm.device();
    got_ids = comm.AllToAll(HostTensor(local.ids).to(dev), local.count, recv);
    if (got_ids.ok()) {
      at::Tensor rows = HostTensor(local.rows, o_.dim).to(dev);
      // bfloat16 crosses as its 16-bit pattern, viewed as float16, which every backend moves
      // (Gloo in LibTorch 1.13 has no bfloat16 all-to-all); nothing adds them on the way.
      if (o_.grads_bfloat16) rows = rows.to(at::kBFloat16).view(at::kHalf);
      got_grads = comm.AllToAll(rows, local.count, recv);
      if (got_grads.ok() && o_.grads_bfloat16) got_grads = got_grads->view(at::kBFloat16).to(at::kFloat);
    }
  }
  RETURN_IF_ERROR(got_ids.status());
  RETURN_IF_ERROR(got_grads.status());
  // The rows this rank owns: every rank's gradients summed, averaged over the ranks, grouped by
  // node type (one request per type).
  const core::TypeMap& types = graph_.node_types();
  GroupedRows mine;
  RETURN_IF_ERROR(CatchTorch("summing embedding gradients", [&] {
    RECORD_USER_SCOPE("fanout::embedding_update.sum_owned");
    const at::Tensor ids = got_ids->to(at::kCPU).contiguous();
    const at::Tensor grads = got_grads->to(at::kCPU).contiguous();
    mine = SumRowsById({{ids.data_ptr<int64_t>(), grads.data_ptr<float>()}}, {ids.size(0)}, o_.dim,
                       types.num_types(), [&types](int64_t id) { return types.ToTypeWise(id).first; },
                       1.0f / static_cast<float>(w));
  }));
  // The servers apply the step where the rows live (or this process, where it maps them): one
  // request per type, in flight together, and a type's rows in pieces over the trainer's
  // intra-op threads where it has several (the rows are distinct, so pieces never share one).
  {
    RECORD_USER_SCOPE("fanout::embedding_update.servers");
    const int64_t threads = std::max(1, at::get_num_threads());
    const int64_t piece = std::max<int64_t>(kMinUpdatePiece, (static_cast<int64_t>(mine.ids.size()) + threads - 1) / threads);
    std::vector<std::function<absl::Status()>> updates;
    int64_t at = 0;
    for (int t = 0; t < types.num_types(); ++t) {
      const int64_t n = mine.count[t];
      if (n > 0 && !has(t)) return absl::InternalError(StrCat("embedding gradients for node type ", types.name(t)));
      for (int64_t b = 0; b < n; b += piece) {
        const int64_t len = std::min(piece, n - b);
        updates.push_back([this, t, len, ids = mine.ids.data() + at + b, grads = mine.rows.data() + (at + b) * o_.dim] {
          return fields_->SparseUpdate(RowSchema(t), StateSchema(t), std::span<const int64_t>(ids, len), grads,
                                       o_.optimizer);
        });
      }
      at += n;
    }
    std::vector<std::future<absl::Status>> others;
    for (size_t i = 1; i < updates.size(); ++i) others.push_back(std::async(std::launch::async, updates[i]));
    absl::Status status = updates.empty() ? absl::OkStatus() : updates[0]();
    for (std::future<absl::Status>& f : others) status.Update(f.get());
    RETURN_IF_ERROR(status);
  }
  if (touched != nullptr) *touched = static_cast<int64_t>(mine.ids.size());
  // Nobody reads a row for the next step before its owner has written it.
  return [&] {
    RECORD_USER_SCOPE("fanout::embedding_update.barrier");
    return comm.Barrier();
  }();
}

}  // namespace fanout::trainer
