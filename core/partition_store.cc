#include "core/partition_store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>

#include "base/check.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/shape.h"

namespace fanout::core {
namespace {

// OK when the file at `path` holds `dtype` and `shape`, as found (`found_dtype`, `found_shape`).
absl::Status ExpectShape(const std::string& path, DType found_dtype, const std::vector<int64_t>& found_shape,
                         DType dtype, const std::vector<int64_t>& shape) {
  if (found_dtype != dtype || found_shape != shape) {
    return absl::DataLossError(base::StrCat(path, ": expected ", DTypeName(dtype), " [", base::StrJoin(shape, ", "),
                                            "], found ", DTypeName(found_dtype), " [", base::StrJoin(found_shape, ", "),
                                            "]; is the partition complete?"));
  }
  return absl::OkStatus();
}

absl::Status ExpectShape(const NpyArray& a, DType dtype, const std::vector<int64_t>& shape) {
  return ExpectShape(a.path(), a.dtype(), a.shape(), dtype, shape);
}

template <typename T>
void AddRows(void* dst, const void* src, int64_t n) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] + s[i]);
}

absl::Status AddInPlace(DType t, void* dst, const void* src, int64_t n) {
  switch (t) {
    case DType::kInt8: AddRows<int8_t>(dst, src, n); break;
    case DType::kUInt8: AddRows<uint8_t>(dst, src, n); break;
    case DType::kInt16: AddRows<int16_t>(dst, src, n); break;
    case DType::kInt32: AddRows<int32_t>(dst, src, n); break;
    case DType::kInt64: AddRows<int64_t>(dst, src, n); break;
    case DType::kFloat32: AddRows<float>(dst, src, n); break;
    case DType::kFloat64: AddRows<double>(dst, src, n); break;
    default:
      return absl::InvalidArgumentError(base::StrCat("cannot add to a ", DTypeName(t), " field; use assign"));
  }
  return absl::OkStatus();
}

double ValueAt(const NpyArray& a, int64_t i) {
  double x;
  ConvertElements(a.dtype(), a.row(i), 1, &x);
  return x;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PartitionStore>> PartitionStore::Open(const PartitionConfig& config, int part_id,
                                                                     const StoreOptions& options) {
  if (part_id < 0 || part_id >= config.num_parts) {
    return absl::InvalidArgumentError(base::StrCat("partition ", part_id, " does not exist: the graph has ",
                                             config.num_parts, " (0..", config.num_parts - 1, ")"));
  }
  ASSIGN_OR_RETURN(RangePartitionBook nodes, config.NodeBook());
  ASSIGN_OR_RETURN(RangePartitionBook edges, config.EdgeBook());
  ASSIGN_OR_RETURN(TypeMap node_types, config.NodeTypes());
  ASSIGN_OR_RETURN(TypeMap edge_types, config.EdgeTypes());
  std::unique_ptr<PartitionStore> s(new PartitionStore(config, part_id, std::move(nodes), std::move(edges),
                                                       std::move(node_types), std::move(edge_types)));
  const int64_t n = s->num_inner_nodes(), m = s->num_inner_edges();
  auto map = [&](const char* file) { return NpyArray::Map(config.PartPath(part_id, file)); };
  ASSIGN_OR_RETURN(s->indptr_, map(PartFiles::kIndptr));
  ASSIGN_OR_RETURN(s->indices_, map(PartFiles::kIndices));
  // One run of n + 1 offsets per relation, sharing their ends (docs/architecture.md, "Typed graphs").
  const int64_t r = s->num_edge_types();
  // Offsets are edge positions: the config's edge ID width.
  RETURN_IF_ERROR(ExpectShape(s->indptr_, config.edge_id_dtype, {r * n + 1}));
  const IdView ip = IdView::Of(s->indptr_);
  RETURN_IF_ERROR(ExpectShape(s->indices_, config.node_id_dtype, {m}));
  // The out-edge index is mapped when first needed (LoadOutEdges); that its files are there is
  // checked now, so that a partition with a file missing fails when it opens.
  for (const char* f : {PartFiles::kOutIndptr, PartFiles::kOutIndices, PartFiles::kOutEids}) {
    const std::string path = config.PartPath(part_id, f);
    if (::access(path.c_str(), R_OK) != 0) {
      return absl::NotFoundError(base::StrCat(path, ": cannot read (", std::strerror(errno), "); is the partition complete?"));
    }
  }
  for (int t = 0; t < r; ++t) {
    // Relation t's in-edges are where the edge map puts them.
    const int64_t at = ip[t * n], end = ip[(t + 1) * n];
    const auto [b, e] = s->edge_type_range(t);
    if (at != b - s->edge_start() || end != e - s->edge_start()) {
      return absl::DataLossError(base::StrCat(s->indptr_.path(), ": relation ", s->edge_types().name(t), " spans [", at,
                                        ", ", end, "), the edge map says [", b - s->edge_start(), ", ",
                                        e - s->edge_start(), ")"));
    }
  }
  if (ip[r * n] != m) {
    return absl::DataLossError(base::StrCat(s->indptr_.path(), ": ends at ", ip[r * n],
                                      ", the edge map says ", m, " edges"));
  }
  auto load = [&](const std::vector<FieldSchema>& schemas, bool node,
                  std::map<std::string, std::unique_ptr<Field>>* out) -> absl::Status {
    for (const FieldSchema& f : schemas) {
      auto field = std::make_unique<Field>();
      field->schema = f;
      field->base = node ? s->node_start() : s->edge_start();
      field->end = node ? s->node_end() : s->edge_end();
      if (!f.node_type.empty()) {
        ASSIGN_OR_RETURN(const int t, s->node_types().TypeId(f.node_type));
        std::tie(field->base, field->end) = s->node_types().Range(t, part_id);
      }
      if (!f.edge_type.empty()) {  // a typed edge field: rows for one relation's edges
        ASSIGN_OR_RETURN(const int t, s->edge_types().TypeId(f.edge_type));
        std::tie(field->base, field->end) = s->edge_types().Range(t, part_id);
      }
      std::string path = config.PartPath(part_id, node ? PartFiles::NodeData(f.key()) : PartFiles::EdgeData(f.key()));
      std::vector<int64_t> shape{field->end - field->base};
      shape.insert(shape.end(), f.row_shape.begin(), f.row_shape.end());
      if (node && s->row_cache_) {
        ASSIGN_OR_RETURN(NpyFile file, OpenNpyFile(path));
        RETURN_IF_ERROR(ExpectShape(path, file.dtype, file.shape, f.dtype, shape));
        field->disk = std::make_unique<DiskRows>(std::move(file), s->row_cache_, static_cast<uint32_t>(out->size()));
      } else {
        // Node fields take pushes: map them copy-on-write (reads still share the page cache).
        ASSIGN_OR_RETURN(field->data, node ? NpyArray::MapCopyOnWrite(path) : NpyArray::Map(path));
        RETURN_IF_ERROR(ExpectShape(field->data, f.dtype, shape));
      }
      (*out)[f.key()] = std::move(field);
    }
    return absl::OkStatus();
  };
  if (options.row_cache_bytes >= 0) {
    s->row_cache_ = std::make_shared<RowCache>(options.row_cache_bytes, options.row_cache_policy);
  }
  RETURN_IF_ERROR(load(config.node_fields, true, &s->node_fields_));
  RETURN_IF_ERROR(load(config.edge_fields, false, &s->edge_fields_));
  return s;
}

RowCacheStats PartitionStore::row_cache_stats() const {
  RowCacheStats s;
  if (!row_cache_) return s;
  for (const auto& [key, f] : node_fields_) {
    if (!f->disk) continue;
    const RowCacheStats one = f->disk->stats();
    s.hits += one.hits;
    s.misses += one.misses;
    s.bytes_read += one.bytes_read;
    s.reads += one.reads;
    s.ring_reads += one.ring_reads;
    s.direct = s.direct || one.direct;
  }
  s.cached_bytes = row_cache_->charged_bytes();
  s.cached_rows = row_cache_->rows();
  return s;
}

absl::Status PartitionStore::CheckOwned(std::span<const int64_t> ids, const RangePartitionBook& book,
                                        const char* what) const {
  return book.CheckOwned(ids, part_id_, what);
}

absl::Status PartitionStore::CheckOwnedNodes(std::span<const int64_t> ids) const {
  return CheckOwned(ids, node_book_, "node");
}
absl::Status PartitionStore::CheckOwnedEdges(std::span<const int64_t> ids) const {
  return CheckOwned(ids, edge_book_, "edge");
}

absl::StatusOr<PartitionStore::Field*> PartitionStore::FindField(
    const std::map<std::string, std::unique_ptr<Field>>& fields, const std::string& kind,
    const std::string& name) const {
  auto it = fields.find(name);
  if (it != fields.end()) return it->second.get();
  std::vector<std::string> names;
  for (const auto& [k, v] : fields) names.push_back(k);
  return UnknownFieldError(kind, name, std::move(names));
}

absl::StatusOr<PartitionStore::Field*> PartitionStore::FindNodeField(const std::string& name) const {
  if (auto it = node_fields_.find(name); it != node_fields_.end()) return it->second.get();
  absl::ReaderMutexLock lock(&created_mu_);
  if (auto it = created_.find(name); it != created_.end()) return it->second.get();
  std::vector<std::string> names;
  for (const auto& [k, v] : node_fields_) names.push_back(k);
  for (const auto& [k, v] : created_) names.push_back(k);
  return UnknownFieldError("node", name, std::move(names));
}

absl::StatusOr<PartitionStore::MappedRows> PartitionStore::MappedNodeRows(const std::string& name) const {
  ASSIGN_OR_RETURN(Field * f, FindNodeField(name));
  MappedRows m;
  if (f->disk != nullptr || f->shared != nullptr || node_fields_.count(name) == 0) return m;
  m.rows = f->end > f->base ? f->data.row(0) : nullptr;
  m.base = f->base;
  m.end = f->end;
  m.row_bytes = f->data.row_bytes();
  return m;
}

absl::Status PartitionStore::CreateNodeField(const FieldSchema& schema, int64_t max_total_bytes, bool* created) {
  *created = false;
  const std::string key = schema.key();
  if (node_fields_.count(key) > 0) {
    return absl::AlreadyExistsError(base::StrCat("'", key, "' is a node field of the partition's files"));
  }
  // Rows for every node of the partition, or for its nodes of one type.
  int64_t base = node_start(), end = node_end();
  if (!schema.node_type.empty()) {
    ASSIGN_OR_RETURN(const int type, node_types_.TypeId(schema.node_type));
    std::tie(base, end) = node_types_.Range(type, part_id_);
  }
  std::vector<int64_t> shape = {end - base};
  shape.insert(shape.end(), schema.row_shape.begin(), schema.row_shape.end());
  int64_t bytes = static_cast<int64_t>(DTypeSize(schema.dtype));
  for (int64_t d : shape) {
    if (d < 0 || !CheckedMul(bytes, d, &bytes)) {
      return absl::InvalidArgumentError(base::StrCat("field '", key, "': shape [", base::StrJoin(shape, ", "),
                                               "] is not a size"));
    }
  }
  absl::MutexLock lock(&created_mu_);
  if (auto it = created_.find(key); it != created_.end()) {
    const FieldSchema& have = it->second->schema;
    if (have.dtype == schema.dtype && have.row_shape == schema.row_shape) return absl::OkStatus();
    return absl::AlreadyExistsError(base::StrCat("node field '", key, "' was created as ", DTypeName(have.dtype),
                                           " [", base::StrJoin(have.row_shape, ", "), "] per row, not ",
                                           DTypeName(schema.dtype), " [", base::StrJoin(schema.row_shape, ", "), "]"));
  }
  if (created_.size() >= kMaxCreatedFields) {
    return absl::ResourceExhaustedError(base::StrCat("node field '", key, "': this server holds ", created_.size(),
                                                     " created fields, the most it keeps"));
  }
  if (bytes > max_total_bytes - created_bytes_) {
    return absl::ResourceExhaustedError(base::StrCat(
        "node field '", key, "' needs ", bytes, " bytes for this partition's ", end - base,
        " nodes; created fields may take ", max_total_bytes, " bytes together and ", created_bytes_,
        " are taken (--max-created-bytes)"));
  }
  auto f = std::make_unique<Field>();
  f->schema = schema;
  f->base = base;
  f->end = end;
  // Zero-filled, in shared memory that a trainer on this machine maps (shared_rows.h); in the
  // heap where none can be made, or past kMaxSharedFields.
  absl::StatusOr<std::unique_ptr<SharedRows>> shm = absl::ResourceExhaustedError("too many shared fields");
  if (shared_fields_ < kMaxSharedFields) shm = SharedRows::Create(key, bytes);
  if (shm.ok()) {
    ++shared_fields_;
    f->shared = std::move(*shm);
    f->data = NpyArray::Wrap(schema.dtype, std::move(shape), f->shared->data(), f->shared);
  } else {
    f->data = NpyArray::Owned(schema.dtype, std::move(shape));
  }
  created_bytes_ += bytes;
  created_.emplace(key, std::move(f));
  *created = true;
  return absl::OkStatus();
}

absl::StatusOr<PartitionStore::CreatedShare> PartitionStore::CreatedFieldShare(const std::string& key) const {
  absl::ReaderMutexLock lock(&created_mu_);
  auto it = created_.find(key);
  if (it == created_.end() || it->second->shared == nullptr) {
    return absl::NotFoundError(base::StrCat("no created field '", key, "' in shared memory"));
  }
  return CreatedShare{.rows = it->second->shared->info(), .base = it->second->base, .end = it->second->end};
}

absl::Status PartitionStore::ApplySparseUpdate(const std::string& rows_field, const std::string& state_field,
                                               std::span<const int64_t> ids, const float* grads,
                                               const SparseOptimizerOptions& options) {
  RETURN_IF_ERROR(CheckSparseOptimizer(options));
  ASSIGN_OR_RETURN(Field * rows, FindNodeField(rows_field));
  ASSIGN_OR_RETURN(Field * state, FindNodeField(state_field));
  if (rows == state) return absl::InvalidArgumentError("the rows and their optimizer state must be two fields");
  for (const Field* f : {rows, state}) {
    if (node_fields_.count(f->schema.key()) > 0 || f->schema.dtype != DType::kFloat32 || f->data.row_elems() < 1) {
      return absl::InvalidArgumentError(base::StrCat("field '", f->schema.key(),
                                               "' is not a float32 field created by CreateNodeField"));
    }
  }
  const int64_t dim = rows->data.row_elems();
  if (state->data.row_elems() != SparseStateWidth(options.kind, dim) || state->base != rows->base ||
      state->end != rows->end) {
    return SparseStateWidthError(options.kind, dim, rows_field, state_field, state->data.row_elems());
  }
  RETURN_IF_ERROR(CheckOwnedNodes(ids));
  RETURN_IF_ERROR(CheckFieldRows(*rows, ids));
  RETURN_IF_ERROR(CheckSparseGradients(ids, rows->base, rows->end - rows->base, dim, grads));
  std::vector<int64_t> index(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) index[i] = ids[i] - rows->base;
  absl::MutexLock lock_rows(&rows->mu);
  absl::MutexLock lock_state(&state->mu);
  SparseUpdateAt(options, static_cast<int64_t>(ids.size()), dim, index.data(),
                 static_cast<float*>(rows->data.mutable_data()), static_cast<float*>(state->data.mutable_data()), grads);
  return absl::OkStatus();
}

absl::StatusOr<FieldSchema> PartitionStore::NodeFieldSchema(const std::string& name) const {
  ASSIGN_OR_RETURN(Field * f, FindNodeField(name));
  return f->schema;
}
absl::StatusOr<FieldSchema> PartitionStore::EdgeFieldSchema(const std::string& name) const {
  ASSIGN_OR_RETURN(Field * f, FindField(edge_fields_, "edge", name));
  return f->schema;
}

absl::Status PartitionStore::CheckFieldRows(const Field& f, std::span<const int64_t> ids) const {
  // A typed field has rows for its type's IDs only; an untyped one for every owned ID.
  const bool edge = !f.schema.edge_type.empty();
  if (!edge && f.schema.node_type.empty()) return absl::OkStatus();
  const TypeMap& types = edge ? edge_types_ : node_types_;
  for (int64_t id : ids) {
    if (id < f.base || id >= f.end) {
      return absl::InvalidArgumentError(base::StrCat(edge ? "edge " : "node ", id, " is of type ",
                                                     types.name(types.ToTypeWise(id).first), "; field '", f.schema.key(),
                                                     "' holds ", edge ? f.schema.edge_type : f.schema.node_type,
                                                     edge ? " edges" : " nodes", " only (this partition's: [", f.base,
                                                     ", ", f.end, "))"));
    }
  }
  return absl::OkStatus();
}

absl::Status PartitionStore::GatherRows(const Field& f, std::span<const int64_t> ids, std::string* out) const {
  out->resize(ids.size() * f.row_bytes());
  return GatherRowsAt(f, ids, {}, out->data());
}

absl::Status PartitionStore::GatherRowsAt(const Field& f, std::span<const int64_t> ids,
                                          std::span<const int64_t> dst_rows, char* out) const {
  const int64_t base = f.base;
  if (f.disk) {
    std::vector<int64_t> rows(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) rows[i] = ids[i] - base;
    return f.disk->Read(rows, dst_rows, out);
  }
  const size_t rb = f.data.row_bytes();
  absl::ReaderMutexLock lock(&f.mu);
  const char* rows = static_cast<const char*>(f.data.data());
  constexpr size_t kAhead = 8;  // rows are random: overlap their cache misses
  const size_t lines = (rb + 63) / 64;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kAhead < ids.size()) {
      const char* next = rows + static_cast<size_t>(ids[i + kAhead] - base) * rb;
      for (size_t c = 0; c < lines; ++c) __builtin_prefetch(next + 64 * c);
    }
    const size_t to = dst_rows.empty() ? i : static_cast<size_t>(dst_rows[i]);
    std::memcpy(out + to * rb, rows + static_cast<size_t>(ids[i] - base) * rb, rb);
  }
  return absl::OkStatus();
}

absl::Status PartitionStore::GatherNodeRows(const std::string& name, std::span<const int64_t> ids,
                                            std::string* out) const {
  ASSIGN_OR_RETURN(Field * f, FindNodeField(name));
  RETURN_IF_ERROR(CheckOwnedNodes(ids));
  RETURN_IF_ERROR(CheckFieldRows(*f, ids));
  return GatherRows(*f, ids, out);
}

absl::Status PartitionStore::GatherNodeRowsAt(const std::string& name, std::span<const int64_t> ids,
                                              std::span<const int64_t> dst_rows, char* out) const {
  FANOUT_CHECK(ids.size() == dst_rows.size());
  ASSIGN_OR_RETURN(Field * f, FindNodeField(name));
  RETURN_IF_ERROR(CheckOwnedNodes(ids));
  RETURN_IF_ERROR(CheckFieldRows(*f, ids));
  return GatherRowsAt(*f, ids, dst_rows, out);
}

absl::Status PartitionStore::GatherEdgeRowsAt(const std::string& name, std::span<const int64_t> ids,
                                              std::span<const int64_t> dst_rows, char* out) const {
  FANOUT_CHECK(ids.size() == dst_rows.size());
  ASSIGN_OR_RETURN(Field * f, FindField(edge_fields_, "edge", name));
  RETURN_IF_ERROR(CheckOwnedEdges(ids));
  RETURN_IF_ERROR(CheckFieldRows(*f, ids));
  return GatherRowsAt(*f, ids, dst_rows, out);
}

absl::Status PartitionStore::GatherEdgeRows(const std::string& name, std::span<const int64_t> ids,
                                            std::string* out) const {
  ASSIGN_OR_RETURN(Field * f, FindField(edge_fields_, "edge", name));
  RETURN_IF_ERROR(CheckOwnedEdges(ids));
  RETURN_IF_ERROR(CheckFieldRows(*f, ids));
  return GatherRows(*f, ids, out);
}

absl::Status PartitionStore::PushNodeRows(const std::string& name, std::span<const int64_t> ids,
                                          const void* data, size_t bytes, PushOp op) {
  ASSIGN_OR_RETURN(Field * f, FindNodeField(name));
  RETURN_IF_ERROR(CheckOwnedNodes(ids));
  RETURN_IF_ERROR(CheckFieldRows(*f, ids));
  if (f->disk) {
    return absl::FailedPreconditionError(base::StrCat("node field '", name, "' is read from disk (",
                                                      f->disk->path(), ", --feature-cache-mb): it takes no pushes"));
  }
  const size_t rb = f->data.row_bytes();
  if (bytes != ids.size() * rb) {
    return absl::InvalidArgumentError(base::StrCat("field '", name, "' rows are ", rb, " bytes (",
                                             DTypeName(f->schema.dtype), " x ", f->data.row_elems(), "); ",
                                             ids.size(), " IDs need ", ids.size() * rb, " bytes, got ", bytes));
  }
  if (op == PushOp::kAdd && (f->schema.dtype == DType::kBool || f->schema.dtype == DType::kFloat16)) {
    return absl::InvalidArgumentError(base::StrCat("cannot add to ", DTypeName(f->schema.dtype), " field '", name,
                                             "'; use assign"));
  }
  absl::MutexLock lock(&f->mu);
  char* base = static_cast<char*>(f->data.mutable_data());
  const char* src = static_cast<const char*>(data);
  for (size_t i = 0; i < ids.size(); ++i) {
    char* row = base + (ids[i] - f->base) * rb;
    if (op == PushOp::kAssign) {
      std::memcpy(row, src + i * rb, rb);
    } else {
      RETURN_IF_ERROR(AddInPlace(f->schema.dtype, row, src + i * rb, f->data.row_elems()));
    }
  }
  return absl::OkStatus();
}

absl::Status PartitionStore::Degrees(std::span<const int64_t> ids, EdgeDir dir, int64_t* out) const {
  RETURN_IF_ERROR(CheckOwnedNodes(ids));
  if (dir == EdgeDir::kOut) RETURN_IF_ERROR(LoadOutEdges());
  const IdView p = IdView::Of(dir == EdgeDir::kIn ? indptr_ : out_.indptr);
  const int runs = dir == EdgeDir::kIn ? num_edge_types() : 1;
  const int64_t n = num_inner_nodes();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t l = ids[i] - node_start();
    out[i] = 0;
    for (int r = 0; r < runs; ++r) out[i] += p[r * n + l + 1] - p[r * n + l];
  }
  return absl::OkStatus();
}

absl::Status PartitionStore::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) const {
  RETURN_IF_ERROR(CheckOwnedEdges(eids));
  const IdView p = IdView::Of(indptr_), idx = IdView::Of(indices_);
  const int64_t n = num_inner_nodes();
  // Rows are (relation, node), one run of n per relation.
  const int64_t rows = num_edge_types() * n;
  for (size_t i = 0; i < eids.size(); ++i) {
    int64_t pos = eids[i] - edge_start();
    src[i] = idx[pos];
    // The row whose range holds pos: the last indptr entry <= pos (rows may be empty).
    int64_t lo = 0, hi = rows + 1;  // the first entry > pos is in [lo, hi)
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (p[mid] <= pos) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const int64_t row = lo - 1;
    dst[i] = node_start() + row % n;
  }
  return absl::OkStatus();
}

PartitionStore::Adjacency PartitionStore::Neighbors(int64_t gid, EdgeDir dir, int etype) const {
  FANOUT_DCHECK(etype >= 0 ? dir == EdgeDir::kIn && etype < num_edge_types() : num_edge_types() == 1 || dir == EdgeDir::kOut);
  const int64_t l = IndexRow(gid, etype);
  Adjacency a;
  if (dir == EdgeDir::kIn) {
    const IdView p = IdView::Of(indptr_);
    const int64_t at = p[l];
    a.nbrs = IdView::Of(indices_, at);
    a.first_eid = edge_start() + at;
    a.degree = p[l + 1] - at;
  } else {
    FANOUT_DCHECK(out_edges_loaded());
    const IdView p = IdView::Of(out_.indptr);
    const int64_t at = p[l];
    a.nbrs = IdView::Of(out_.indices, at);
    a.eids = IdView::Of(out_.eids, at);
    a.degree = p[l + 1] - at;
  }
  return a;
}

absl::Status PartitionStore::LoadOutEdges() const {
  absl::call_once(out_once_, [this] {
    out_status_ = [this]() -> absl::Status {
      auto map = [&](const char* file) { return NpyArray::Map(config_.PartPath(part_id_, file)); };
      OutEdges o;
      ASSIGN_OR_RETURN(o.indptr, map(PartFiles::kOutIndptr));
      ASSIGN_OR_RETURN(o.indices, map(PartFiles::kOutIndices));
      ASSIGN_OR_RETURN(o.eids, map(PartFiles::kOutEids));
      const int64_t n = num_inner_nodes();
      RETURN_IF_ERROR(ExpectShape(o.indptr, config_.edge_id_dtype, {n + 1}));
      const int64_t out_m = IdView::Of(o.indptr)[n];
      RETURN_IF_ERROR(ExpectShape(o.indices, config_.node_id_dtype, {out_m}));
      RETURN_IF_ERROR(ExpectShape(o.eids, config_.edge_id_dtype, {out_m}));
      out_ = std::move(o);
      return absl::OkStatus();
    }();
    if (out_status_.ok()) out_loaded_.store(true, std::memory_order_release);
  });
  return out_status_;
}

absl::StatusOr<std::shared_ptr<const std::vector<double>>> PartitionStore::EdgeWeights(
    const std::string& name) const {
  absl::MutexLock lock(&weights_mu_);
  if (auto it = weights_.find(name); it != weights_.end()) return it->second;
  ASSIGN_OR_RETURN(Field * f, FindField(edge_fields_, "edge", name));
  if (f->data.row_elems() != 1) {
    return absl::InvalidArgumentError(base::StrCat("edge field '", name, "' cannot weight sampling: it must hold one ",
                                             "number per edge"));
  }
  auto w = std::make_shared<std::vector<double>>(num_inner_edges());
  for (int64_t i = 0; i < num_inner_edges(); ++i) {
    double x = ValueAt(f->data, i);
    if (!(x >= 0) || !std::isfinite(x)) {
      return absl::InvalidArgumentError(base::StrCat("edge field '", name, "': edge ", edge_start() + i,
                                               " has weight ", x, "; weights must be finite and >= 0"));
    }
    (*w)[i] = x;
  }
  weights_[name] = w;
  return std::shared_ptr<const std::vector<double>>(w);
}

}  // namespace fanout::core
