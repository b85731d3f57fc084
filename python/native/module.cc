// fanout._native: the Python data plane's native half (python/fanout/distributed is the other).
// It wraps what fanout-train itself uses, with no LibTorch: the graph view (sampler::DistGraph),
// the training-set split (SplitSeeds), and the batch loaders (sampler threads, or fanout-sampler
// processes handing batches over in shared memory). Arrays cross as NumPy arrays that borrow the
// batch's memory (the buffer protocol, no copy); the Python side wraps them with
// torch.from_numpy, again without a copy, so any PyTorch the user has will do.
//
// Errors: every absl::Status that is not OK becomes fanout.FanoutError (a RuntimeError) whose
// message starts with the status code's name; the loader's end is StopIteration. Calls that
// wait (on servers or sampler processes) release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/heartbeat.h"
#include "base/job_env.h"
#include "base/malloc_tuning.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "core/sampling.h"
#include "core/sparse_optim.h"
#include "core/type_map.h"
#include "python/native/kernels.h"
#include "sampler/cache_choice.h"
#include "sampler/dist_graph.h"
#include "sampler/job_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/loader.h"
#include "sampler/minibatch.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/sampler_spec.h"
#include "sampler/seed_split.h"

namespace py = pybind11;

namespace fanout::python {
namespace {

using base::StrCat;

// Raised for every error status; the Python class is fanout.FanoutError.
struct StatusError : std::runtime_error {
  explicit StatusError(const absl::Status& s)
      : std::runtime_error(StrCat(absl::StatusCodeToString(s.code()), ": ", s.message())) {}
};

void Check(const absl::Status& s) {
  if (!s.ok()) throw StatusError(s);
}
template <typename T>
T Take(absl::StatusOr<T> v) {
  Check(v.status());
  return std::move(*v);
}

// A NumPy array over `n` rows of `row_shape` of dtype `dtype` at `data`, kept alive by `owner`
// (no copy). A null `data` with n = 0 gets NumPy's own empty buffer.
py::array Borrow(std::shared_ptr<const void> owner, const void* data, core::DType dtype, std::vector<int64_t> shape) {
  auto* keep = new std::shared_ptr<const void>(std::move(owner));
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  py::dtype dt(std::string(core::DTypeName(dtype)));
  return py::array(dt, std::move(shape), {}, const_cast<void*>(data), base);
}

template <typename T>
py::array BorrowArray(const sampler::Array<T>& a) {
  return Borrow(a.Share(), a.data(), core::DTypeOf<T>(), {static_cast<int64_t>(a.size())});
}

// A vector handed to NumPy without a copy.
template <typename T>
py::array Adopt(std::vector<T> v) {
  auto owned = std::make_shared<std::vector<T>>(std::move(v));
  const void* data = owned->data();
  const auto n = static_cast<int64_t>(owned->size());
  return Borrow(std::move(owned), data, core::DTypeOf<T>(), {n});
}

// IDs from any integer array-like, as int64 C-contiguous (a copy only when the input is not).
std::vector<int64_t> Ids(const py::array& ids, const char* what) {
  if (ids.size() > 0 && ids.dtype().kind() != 'i' && ids.dtype().kind() != 'u') {
    throw py::type_error(StrCat(what, ": expected integer IDs, got dtype ", std::string(py::str(ids.dtype()))));
  }
  auto a = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(ids);
  if (!a) throw py::type_error(StrCat(what, ": expected a 1-D array of integer IDs"));
  if (a.ndim() != 1) throw py::value_error(StrCat(what, ": expected a 1-D array of IDs, got ", a.ndim(), " dimensions"));
  return std::vector<int64_t>(a.data(), a.data() + a.size());
}

// A typed block's layout for Python's HeteroBlock (fanout.distributed.hetero): its sources
// grouped by node type and its edges by relation, each group in input order (a counting sort:
// one pass to count, one to place), and each edge's endpoints as their index among the sources of
// their type (destinations are a prefix of the sources, so among the destinations of theirs too).
// Returns (by_type [N], type_counts [T], type_dst_counts [T], local [N]: each source's index among
// its type's, by_relation [E], relation_counts [R], relation_src [E], relation_dst [E]), the last
// three in by_relation's order.
py::tuple TypedBlockLayout(const py::array& src_types_in, int64_t num_types, int64_t num_dst,
                           const py::array& indices_in, const py::array& dst_in, const py::array& etype_in,
                           int64_t num_relations) {
  using Int64s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  const auto src_types = Int64s::ensure(src_types_in), indices = Int64s::ensure(indices_in),
             dst = Int64s::ensure(dst_in), etype = Int64s::ensure(etype_in);
  if (!src_types || !indices || !dst || !etype) throw py::type_error("typed_block_layout: expected integer arrays");
  const int64_t n = src_types.size(), e = indices.size();
  if (dst.size() != e || etype.size() != e) {
    throw py::value_error(StrCat("typed_block_layout: ", e, " edge sources but ", dst.size(), " destinations and ",
                                 etype.size(), " edge types"));
  }
  if (num_types < 1 || num_relations < 1 || num_dst < 0 || num_dst > n) {
    throw py::value_error(StrCat("typed_block_layout: ", num_types, " node types, ", num_relations,
                                 " relations and ", num_dst, " destinations of ", n, " sources"));
  }
  const int64_t *t = src_types.data(), *src = indices.data(), *d = dst.data(), *r = etype.data();
  std::vector<int64_t> by_type(n), type_counts(num_types, 0), type_dst_counts(num_types, 0), local(n);
  std::vector<int64_t> by_rel(e), rel_counts(num_relations, 0), rel_src(e), rel_dst(e);
  std::string bad;
  {
    py::gil_scoped_release nogil;
    for (int64_t i = 0; i < n && bad.empty(); ++i) {
      if (t[i] < 0 || t[i] >= num_types) {
        bad = StrCat("source ", i, " has node type ", t[i], " of ", num_types);
        break;
      }
      ++type_counts[t[i]];
      if (i < num_dst) ++type_dst_counts[t[i]];
    }
    for (int64_t j = 0; j < e && bad.empty(); ++j) {
      if (r[j] < 0 || r[j] >= num_relations) {
        bad = StrCat("edge ", j, " has relation ", r[j], " of ", num_relations);
      } else if (src[j] < 0 || src[j] >= n || d[j] < 0 || d[j] >= num_dst) {
        bad = StrCat("edge ", j, " joins source ", src[j], " to destination ", d[j], " of ", n, " / ", num_dst);
      } else {
        ++rel_counts[r[j]];
      }
    }
    if (bad.empty()) {
      std::vector<int64_t> next(num_types, 0);
      for (int64_t k = 1; k < num_types; ++k) next[k] = next[k - 1] + type_counts[k - 1];
      std::vector<int64_t> first(next);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = next[t[i]]++;
        by_type[at] = i;
        local[i] = at - first[t[i]];
      }
      std::vector<int64_t> slot(num_relations, 0);
      for (int64_t k = 1; k < num_relations; ++k) slot[k] = slot[k - 1] + rel_counts[k - 1];
      for (int64_t j = 0; j < e; ++j) {
        const int64_t at = slot[r[j]]++;
        by_rel[at] = j;
        rel_src[at] = local[src[j]];
        rel_dst[at] = local[d[j]];
      }
    }
  }
  if (!bad.empty()) throw py::value_error(StrCat("typed_block_layout: ", bad));
  return py::make_tuple(Adopt(std::move(by_type)), Adopt(std::move(type_counts)), Adopt(std::move(type_dst_counts)),
                        Adopt(std::move(local)), Adopt(std::move(by_rel)), Adopt(std::move(rel_counts)),
                        Adopt(std::move(rel_src)), Adopt(std::move(rel_dst)));
}

py::dict Schema(const core::FieldSchema& f) {
  py::dict d;
  d["name"] = f.name;
  d["dtype"] = std::string(core::DTypeName(f.dtype));
  d["row_shape"] = f.row_shape;
  d["node_type"] = f.node_type;  // "" for a field of every node
  d["edge_type"] = f.edge_type;  // "" for a field of every edge
  d["key"] = f.key();            // the name fanout's calls take: TYPE/NAME for a typed field
  d["codec"] = std::string(core::FeatureCodecName(f.codec));  // "" or how the rows are compressed
  return d;
}

// A graph's node or edge types (core::TypeMap) for the Python side, vectorised: fanout's IDs
// to (type, type-wise ID) and back, the one implementation of the rule (type-wise IDs number a
// type's nodes partition by partition). Out-of-range IDs are IndexError naming the ID.
class TypeMapView {
 public:
  TypeMapView(core::TypeMap map, std::string kind) : map_(std::move(map)), kind_(std::move(kind)) {}

  const std::vector<std::string>& names() const { return map_.names(); }
  int64_t Count(int type) const { return map_.count(CheckType(type)); }
  std::pair<int64_t, int64_t> TypeWiseRange(int type, int part) const {
    if (part < 0 || part >= map_.num_parts()) {
      throw py::index_error(StrCat("partition ", part, " is not in 0..", map_.num_parts() - 1));
    }
    return map_.TypeWiseRange(CheckType(type), part);
  }

  py::array ToHomogeneous(int type, const py::array& typewise) const {
    CheckType(type);
    std::vector<int64_t> ids = Ids(typewise, StrCat(kind_, " IDs").c_str());
    for (int64_t& id : ids) {
      if (id < 0 || id >= map_.count(type)) {
        throw py::index_error(StrCat(kind_, " ID ", id, " of type '", map_.name(type), "' is out of range (it has ",
                                     map_.count(type), ")"));
      }
      id = map_.ToHomogeneous(type, id);
    }
    return Adopt(std::move(ids));
  }

  py::tuple ToTypeWise(const py::array& homogeneous) const {
    std::vector<int64_t> ids = Ids(homogeneous, StrCat(kind_, " IDs").c_str());
    const int64_t total = Total();
    std::vector<int64_t> types(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= total) {
        throw py::index_error(StrCat(kind_, " ID ", ids[i], " is out of range (the graph has ", total, ")"));
      }
      std::tie(types[i], ids[i]) = map_.ToTypeWise(ids[i]);
    }
    return py::make_tuple(Adopt(std::move(types)), Adopt(std::move(ids)));
  }

 private:
  int CheckType(int type) const {
    if (type < 0 || type >= map_.num_types()) {
      throw py::index_error(StrCat(kind_, " type ", type, " is not in 0..", map_.num_types() - 1));
    }
    return type;
  }
  int64_t Total() const {
    int64_t n = 0;
    for (int t = 0; t < map_.num_types(); ++t) n += map_.count(t);
    return n;
  }

  core::TypeMap map_;
  std::string kind_;
};

// Errors of the caller's arguments as Python's ValueError, the rest as FanoutError.
void CheckArgs(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kInvalidArgument) throw py::value_error(std::string(s.message()));
  Check(s);
}
template <typename T>
T TakeArgs(absl::StatusOr<T> v) {
  CheckArgs(v.status());
  return std::move(*v);
}

// The graph as one trainer process sees it, plus the servers for writes: sampler::JobGraph (the
// library's handle on the graph, tested in C++) with NumPy at its edges.
class Graph {
 public:
  // No halo cache in graph(), which the script's own reads go through; sampler processes map
  // the one CachingGraph holds (ProcessGraphOptions).
  Graph(const std::string& part_config, int machine_id, const std::string& servers,
        const std::string& ip_config, int num_servers, double deadline_seconds,
        bool read_local_files, double unreachable_timeout) {
    sampler::JobGraphOptions o{.part_config = part_config,
                               .machine_id = machine_id,
                               .servers = servers,
                               .ip_config = ip_config,
                               .num_servers = num_servers,
                               .deadline_seconds = deadline_seconds,
                               .read_local_files = read_local_files,
                               .unreachable_timeout_seconds = unreachable_timeout};
    // A machine that stops answering (a cut link) ends this process within the timeout, naming
    // it, as it ends fanout-train (rpc/reachability.h): a script blocked in a collective or a
    // loader waiting on a reply would otherwise wait out minutes of timeouts, silent.
    o.on_unreachable = [](const std::string& message) {
      std::fprintf(stderr, "fanout: error: %s (fanout.distributed.initialize(unreachable_timeout_seconds=...))\n",
                   message.c_str());
      std::fflush(nullptr);
      std::_Exit(1);
    };
    {
      py::gil_scoped_release nogil;
      job_ = TakeArgs(sampler::JobGraph::Open(o));
    }
    node_types_ = std::make_shared<TypeMapView>(Take(config().NodeTypes()), "node");
    edge_types_ = std::make_shared<TypeMapView>(Take(config().EdgeTypes()), "edge");
  }

  const sampler::DistGraph& graph() const { return job_->graph(); }
  void StopWatching() {
    py::gil_scoped_release nogil;  // the watch's threads are joined
    job_->StopWatching();
  }
  const sampler::DistGraphOptions& options() const { return job_->options(); }
  // Call without the GIL.
  const sampler::DistGraph& CachingGraph(const sampler::DistGraphOptions& go) { return *Take(job_->CachingGraph(go)); }
  const std::string& part_config_path() const { return job_->part_config_path(); }
  const core::PartitionConfig& config() const { return job_->config(); }
  // The node and edge types as TypeMaps (made once, at construction).
  std::shared_ptr<TypeMapView> node_types() const { return node_types_; }
  std::shared_ptr<TypeMapView> edge_types() const { return edge_types_; }

  std::vector<std::pair<int64_t, int64_t>> Ranges(const std::vector<int64_t>& bounds) const {
    std::vector<std::pair<int64_t, int64_t>> r;
    for (size_t p = 0; p + 1 < bounds.size(); ++p) r.emplace_back(bounds[p], bounds[p + 1]);
    return r;
  }

  bool CreateNodeField(const std::string& name, const std::string& dtype_name, const std::vector<int64_t>& row_shape,
                       const std::string& node_type) {
    const core::DType dtype = Take(core::DTypeFromName(dtype_name));
    const core::FieldSchema schema{.name = name, .dtype = dtype, .row_shape = row_shape, .node_type = node_type};
    py::gil_scoped_release nogil;
    return TakeArgs(job_->CreateNodeField(schema));
  }

  py::array PullNodeRows(const std::string& field, const py::array& ids_in) {
    const core::FieldSchema schema = Take(job_->NodeSchema(field));
    std::vector<int64_t> ids = Ids(ids_in, "node IDs");
    std::vector<int64_t> shape = {static_cast<int64_t>(ids.size())};
    shape.insert(shape.end(), schema.row_shape.begin(), schema.row_shape.end());
    std::shared_ptr<char[]> buffer = base::AllocateHandedOut(ids.size() * schema.row_bytes());
    {
      py::gil_scoped_release nogil;
      Check(job_->PullNodeRows(field, ids, buffer.get()));
    }
    const void* data = buffer.get();
    return Borrow(std::move(buffer), data, schema.dtype, std::move(shape));
  }

  // Rows of `values` (C order, the field's dtype, one row per ID) written to every server of
  // each ID's partition, so that whichever server later answers a read has them. Refused
  // (PERMISSION_DENIED) for the partition's own fields by servers started without --allow-push.
  void PushNodeRows(const std::string& field, const py::array& ids_in, const py::array& values, bool add) {
    const core::FieldSchema schema = Take(job_->NodeSchema(field));
    std::vector<int64_t> ids = Ids(ids_in, "node IDs");
    py::dtype want(std::string(core::DTypeName(schema.dtype)));
    py::array v = py::array::ensure(values, py::array::c_style);
    if (!v || !v.dtype().is(want)) {
      throw py::type_error(StrCat("rows for field '", field, "' must be ", core::DTypeName(schema.dtype), ", got ",
                                  v ? std::string(py::str(v.dtype())) : "not an array"));
    }
    const char* bytes = static_cast<const char*>(v.data());
    const size_t nbytes = static_cast<size_t>(v.nbytes());
    py::gil_scoped_release nogil;
    CheckArgs(job_->PushNodeRows(field, ids, bytes, nbytes, add));
  }

  // DistEmbedding's SparseAdam/SparseAdagrad step (sampler::JobGraph::SparseUpdate).
  void SparseUpdate(const std::string& field, const std::string& state_field, const py::array& ids_in,
                    const py::array& grads_in, const std::string& kind, double lr, double beta1, double beta2,
                    double eps) {
    std::vector<int64_t> ids = Ids(ids_in, "node IDs");
    auto g = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(grads_in);
    if (!g) throw py::value_error("sparse_update: gradients must be a float32 array");
    const core::SparseOptimizerOptions o{.kind = TakeArgs(core::ParseSparseOptimizer(kind)), .lr = lr,
                                         .beta1 = beta1, .beta2 = beta2, .eps = eps};
    const float* grads = g.data();
    const size_t n = static_cast<size_t>(g.size());
    py::gil_scoped_release nogil;
    CheckArgs(job_->SparseUpdate(field, state_field, ids, grads, n, o));
  }

  py::array WholeNodeField(const std::string& field) {
    const core::FieldSchema schema = Take(job_->graph().NodeFieldSchema(field));
    std::string bytes;
    {
      py::gil_scoped_release nogil;
      bytes = Take(job_->graph().PullWholeNodeField(field));
    }
    // A typed field has a row per node of its type (type-wise ID order), not per graph node.
    std::vector<int64_t> shape = {static_cast<int64_t>(bytes.size() / std::max<size_t>(1, schema.row_bytes()))};
    shape.insert(shape.end(), schema.row_shape.begin(), schema.row_shape.end());
    auto owned = std::make_shared<std::string>(std::move(bytes));
    const void* data = owned->data();
    return Borrow(std::move(owned), data, schema.dtype, std::move(shape));
  }

  py::array Degrees(const py::array& ids_in, bool out) {
    std::vector<int64_t> ids = Ids(ids_in, "node IDs");
    std::vector<int64_t> deg(ids.size());
    {
      py::gil_scoped_release nogil;
      Check(job_->graph().Degrees(ids, out ? core::EdgeDir::kOut : core::EdgeDir::kIn, deg.data()));
    }
    return Adopt(std::move(deg));
  }

  py::tuple FindEdges(const py::array& eids_in) {
    std::vector<int64_t> eids = Ids(eids_in, "edge IDs");
    std::vector<int64_t> src(eids.size()), dst(eids.size());
    {
      py::gil_scoped_release nogil;
      Check(job_->graph().FindEdges(eids, src.data(), dst.data()));
    }
    return py::make_tuple(Adopt(std::move(src)), Adopt(std::move(dst)));
  }

 private:
  std::unique_ptr<sampler::JobGraph> job_;
  std::shared_ptr<TypeMapView> node_types_, edge_types_;
};

// Each of `fields` (sampler/batch_fields.h) into `d` under its name: [count] or [count, width].
void AddFields(const sampler::Fields& fields, py::dict& d) {
  for (const sampler::Field& f : fields) {
    d[py::str(f.name)] = Borrow(f.Share(), f.data(), f.dtype(), f.shape());
  }
}

// One mini-batch, its arrays borrowed from the batch (a sampler process's mapped batch file, or
// the sampler thread's vectors) for as long as any array of it is alive.
py::dict BatchToPython(sampler::MiniBatch mb) {
  py::dict d;
  d["seeds"] = Adopt(std::move(mb.seeds));
  d["labels"] = Adopt(std::move(mb.labels));
  py::list blocks;
  for (const sampler::Block& b : mb.blocks) {
    py::dict blk;
    blk["src_nodes"] = BorrowArray(b.src_nodes);
    blk["num_dst"] = b.num_dst;
    blk["indptr"] = BorrowArray(b.indptr);
    blk["indices"] = BorrowArray(b.indices);
    blk["eids"] = BorrowArray(b.eids);
    blk["dst"] = BorrowArray(b.dst);
    AddFields(b.fields, blk);  // "edge_weight", "edge_feat", typed: "etype" (each edge's relation)
    blocks.append(std::move(blk));
  }
  d["blocks"] = std::move(blocks);
  // Typed graphs: "input_types", each input node's type (its index in the graph's node_types).
  d["input_types"] = py::none();
  AddFields(mb.input_fields, d);
  AddFields(mb.seed_fields, d);
  if (mb.features.cols > 0) {
    d["features"] = Borrow(mb.features.owner, mb.features.data, mb.features.dtype, {mb.features.rows, mb.features.cols});
    d["features_codec"] = std::string(core::FeatureCodecName(mb.features.codec));  // decoded in Python, on the device
  } else {
    d["features"] = py::none();
  }
  return d;
}

// A rank of a job of `g`'s partitions (machines) x trainers_per_machine, else ValueError.
void CheckRank(const Graph& g, int trainers_per_machine, int rank) {
  const int world = g.config().num_parts * trainers_per_machine;
  if (trainers_per_machine < 1 || rank < 0 || rank >= world) {
    throw py::value_error(StrCat("rank ", rank, " is not in 0..", world - 1, " (", g.config().num_parts,
                                 " machines x ", trainers_per_machine, " trainers)"));
  }
}

// A loader's next batch, waited for without the GIL; the end of the batches is StopIteration.
template <typename Loader>
auto NextOrStop(Loader* loader) {
  if (loader == nullptr) throw py::value_error("the loader is closed");
  decltype(loader->Next()) batch;
  {
    py::gil_scoped_release nogil;
    batch = loader->Next();
  }
  if (batch.status().code() == absl::StatusCode::kOutOfRange) throw py::stop_iteration();
  return Take(std::move(batch));
}

// A settings dict as the JSON object the settings readers (sampler/sampler_spec.h) take: they
// require every key and refuse any other, so Python and C++ cannot drift apart silently.
std::string SettingsJson(const py::dict& settings) {
  return py::str(py::module_::import("json").attr("dumps")(settings, py::arg("allow_nan") = false));
}

// How a loader's batches are made (threads, or sampler processes whose batches the script may
// write: copy-on-write mappings), from the script's loader settings.
sampler::LoaderOptions LoaderOptionsOf(const Graph& graph, const py::dict& loader) {
  sampler::LoaderOptions lo = Take(sampler::ReadLoaderSettings(SettingsJson(loader)));
  lo.part_config_path = graph.part_config_path();
  lo.writable_batches = true;  // user code may change the tensors in place
  return lo;
}

// The graph as sampler processes open it: the trainer's, plus the halo rows of the feature field
// kept in each process (fanout-train's --feature-cache-mb); this process's own graph does not
// need them.
sampler::DistGraphOptions ProcessGraphOptions(const Graph& graph, const std::string& feature_field,
                                              int64_t cache_max_bytes) {
  if (cache_max_bytes < 0) throw py::value_error(StrCat("feature_cache_bytes must be >= 0, got ", cache_max_bytes));
  sampler::DistGraphOptions go = graph.options();
  go.cache_field = feature_field;
  go.cache_max_bytes = cache_max_bytes;
  return go;
}

// The graph a loader samples through: for sampler processes with a halo cache, the one whose
// cache they map (Graph::CachingGraph); sampler threads read graph() as before.
const sampler::DistGraph& LoaderGraph(Graph& graph, const sampler::DistGraphOptions& go,
                                      const sampler::LoaderOptions& lo) {
  if (lo.num_samplers > 0 && !go.cache_field.empty() && go.cache_max_bytes > 0) return graph.CachingGraph(go);
  return graph.graph();
}

// A loader's feature_cache_rows (fanout-train's --feature-cache-rows): "halo" or "presample".
void CheckCacheRows(const std::string& cache_rows) {
  if (cache_rows != "halo" && cache_rows != "presample") {
    throw py::value_error(StrCat("feature_cache_rows must be 'halo' or 'presample', got '", cache_rows, "'"));
  }
}

// The graph a loader samples through. With cache_rows "presample", sampler processes and a
// cache: a graph of the loader's own (kept in `*own`) whose cache holds the remote rows the
// loader's own first epoch takes most, `count(graph)` presampling it before the first batch, and
// `*go` says so to the sampler processes, which map that cache; otherwise LoaderGraph's.
template <typename Count>
const sampler::DistGraph* CachingGraphFor(Graph& graph, sampler::DistGraphOptions* go, const sampler::LoaderOptions& lo,
                                          const std::string& cache_rows, std::unique_ptr<sampler::DistGraph>* own,
                                          Count count) {
  if (cache_rows != "presample" || lo.num_samplers == 0 || go->cache_field.empty() || go->cache_max_bytes == 0) {
    return &LoaderGraph(graph, *go, lo);
  }
  go->cache_from_counts = true;
  go->cache_in_shared_memory = true;
  *own = Take(sampler::DistGraph::Open(graph.config(), *go));
  if ((*own)->awaits_cache()) Check((*own)->BuildCacheFromCounts(Take(count(own->get()))));
  return own->get();
}

// fanout-train's node batches for a list of seeds: the same MakeBatchLoader, so batch (epoch,
// step) is the one the C++ trainer would train on with the same options and seeds.
class NodeLoader {
 public:
  // cache_rows: which remote rows the sampler processes' cache keeps (fanout-train's
  // --feature-cache-rows): "halo", or "presample", the rows this loader's own first epoch takes
  // most, counted before its first batch in a graph of the loader's own.
  NodeLoader(std::shared_ptr<Graph> graph, py::array seeds, const py::dict& sampler, const py::dict& loader,
             int64_t cache_max_bytes, const std::string& cache_rows)
      : graph_(std::move(graph)) {
    CheckCacheRows(cache_rows);
    const sampler::SamplerOptions so = Take(sampler::ReadSamplerSettings(SettingsJson(sampler)));
    const sampler::LoaderOptions lo = LoaderOptionsOf(*graph_, loader);
    sampler::DistGraphOptions go = ProcessGraphOptions(*graph_, so.feature_field, cache_max_bytes);
    std::vector<int64_t> ids = Ids(seeds, "seeds");
    py::gil_scoped_release nogil;
    const sampler::DistGraph* g =
        CachingGraphFor(*graph_, &go, lo, cache_rows, &presampled_, [&](const sampler::DistGraph* own) {
          return sampler::PresampleSeeds(own, so, ids, sampler::StepsPerEpoch(so, static_cast<int64_t>(ids.size())),
                                         lo.first_epoch);
        });
    loader_ = Take(sampler::MakeBatchLoader(g, go, so, std::move(ids), lo));
    steps_per_epoch_ = loader_->steps_per_epoch();
  }

  int64_t steps_per_epoch() const { return steps_per_epoch_; }

  py::dict Next() { return BatchToPython(NextOrStop(loader_.get())); }

  void FetchFeatures(bool on) {
    if (loader_ != nullptr) loader_->FetchFeatures(on);
  }

  // Stops the sampler processes (or threads) now rather than when Python collects the object.
  void Close() {
    py::gil_scoped_release nogil;
    loader_.reset();
    presampled_.reset();
  }

 private:
  std::shared_ptr<Graph> graph_;  // outlives the loader, whose samplers read it
  // With cache_rows "presample": the graph whose cache the loader's sampler processes map.
  std::unique_ptr<sampler::DistGraph> presampled_;
  std::unique_ptr<sampler::BatchLoader> loader_;
  int64_t steps_per_epoch_ = 0;
};

// fanout-train's link batches (--task link) over a list of positive edges: the same
// MakeLinkBatchLoader (threads or sampler processes). cache_rows as NodeLoader's, presampling
// link batches.
class EdgeLoader {
 public:
  EdgeLoader(std::shared_ptr<Graph> graph, py::array edges, const py::dict& sampler, const py::dict& link,
             const py::dict& loader, int64_t cache_max_bytes, const std::string& cache_rows)
      : graph_(std::move(graph)) {
    CheckCacheRows(cache_rows);
    const sampler::SamplerOptions so = Take(sampler::ReadSamplerSettings(SettingsJson(sampler)));
    const sampler::LinkSamplerOptions lo = Take(sampler::ReadLinkSettings(SettingsJson(link), so));
    const sampler::LoaderOptions opts = LoaderOptionsOf(*graph_, loader);
    sampler::DistGraphOptions go = ProcessGraphOptions(*graph_, so.feature_field, cache_max_bytes);
    // A rank's edges are one run (rank_edge_range): held as a range, not a list per sampler.
    sampler::SeedArray ids = sampler::SeedArray::Of(Ids(edges, "edge IDs"));
    py::gil_scoped_release nogil;
    const sampler::DistGraph* g =
        CachingGraphFor(*graph_, &go, opts, cache_rows, &presampled_, [&](const sampler::DistGraph* own) {
          return sampler::PresampleLinkSeeds(own, lo, ids, sampler::LinkStepsPerEpoch(lo, ids.size()),
                                             opts.first_epoch);
        });
    loader_ = Take(sampler::MakeLinkBatchLoader(g, go, lo, std::move(ids), opts));
    steps_per_epoch_ = loader_->steps_per_epoch();
  }

  int64_t steps_per_epoch() const { return steps_per_epoch_; }

  py::dict Next() {
    sampler::LinkMiniBatch lb = NextOrStop(loader_.get());
    py::dict d = BatchToPython(std::move(lb.nodes));
    d["pos_src"] = Adopt(std::move(lb.pos_src));
    d["pos_dst"] = Adopt(std::move(lb.pos_dst));
    d["neg_src"] = Adopt(std::move(lb.neg_src));
    d["neg_dst"] = Adopt(std::move(lb.neg_dst));
    d["pos_eids"] = Adopt(std::move(lb.eids));
    return d;
  }

  void Close() {
    py::gil_scoped_release nogil;
    loader_.reset();
    presampled_.reset();
  }

 private:
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<sampler::DistGraph> presampled_;  // as NodeLoader's
  std::unique_ptr<sampler::LinkBatchSource> loader_;
  int64_t steps_per_epoch_ = 0;
};

// The settings objects' keys and C++ defaults, as dicts (WriteXSettings), for Python to read
// names from and to check itself against.
py::dict DefaultSettings(const std::string& json_text) {
  return py::module_::import("json").attr("loads")(json_text);
}

// The typed graph's names and IDs: the edge-type resolver and the type maps.
void BindTypes(py::module_& m) {
  m.def(
      "find_edge_type",
      [](const std::vector<std::tuple<std::string, std::string, std::string>>& types, const std::string& name) {
        std::vector<core::CanonicalEdgeType> t;
        for (const auto& [src, rel, dst] : types) t.push_back({src, rel, dst});
        absl::StatusOr<int> found = core::FindEdgeType(t, name);
        if (!found.ok()) throw py::key_error(std::string(found.status().message()));
        return *found;
      },
      py::arg("types"), py::arg("name"),
      "The index of the edge type `name` names among `types` ((src, rel, dst) triples): 'SRC:REL:DST', or a "
      "relation name one type alone has; KeyError otherwise (core::FindEdgeType, as fanout-train's flags).");

  py::class_<TypeMapView, std::shared_ptr<TypeMapView>>(m, "TypeMap")
      .def_property_readonly("names", &TypeMapView::names)
      .def("count", &TypeMapView::Count, py::arg("type"))
      .def("part_range", &TypeMapView::TypeWiseRange, py::arg("type"), py::arg("part"),
           "[begin, end) of the type's type-wise IDs in partition `part`")
      .def("to_homo", &TypeMapView::ToHomogeneous, py::arg("type"), py::arg("ids"),
           "fanout's IDs of type-wise `ids` of `type`")
      .def("to_typewise", &TypeMapView::ToTypeWise, py::arg("ids"), "(types, type-wise IDs) of fanout's `ids`");
}

// The batch loaders and the settings they take.
void BindLoaders(py::module_& m) {
  m.def(
      "default_settings",
      [] {
        py::dict d;
        d["sampler"] = DefaultSettings(sampler::WriteSamplerSettings({}));
        d["link"] = DefaultSettings(sampler::WriteLinkSettings({}));
        d["loader"] = DefaultSettings(sampler::WriteLoaderSettings({}));
        return d;
      },
      "The loaders' settings objects with C++'s defaults: {'sampler': {...}, 'link': {...}, 'loader': {...}}. "
      "NodeLoader and EdgeLoader take exactly these keys, every one of them.");

  m.def(
      "steps_per_epoch",
      [](const py::dict& sampler, int64_t num_seeds) {
        return sampler::StepsPerEpoch(Take(sampler::ReadSamplerSettings(SettingsJson(sampler))), num_seeds);
      },
      py::arg("sampler"), py::arg("num_seeds"),
      "Steps an epoch of NodeLoader(sampler=...) over `num_seeds` seeds takes, before any sampler starts.");
  m.def(
      "link_steps_per_epoch",
      [](const py::dict& sampler, const py::dict& link, int64_t num_edges) {
        const sampler::SamplerOptions so = Take(sampler::ReadSamplerSettings(SettingsJson(sampler)));
        return sampler::LinkStepsPerEpoch(Take(sampler::ReadLinkSettings(SettingsJson(link), so)), num_edges);
      },
      py::arg("sampler"), py::arg("link"), py::arg("num_edges"),
      "Steps an epoch of EdgeLoader(sampler=..., link=...) over `num_edges` positive edges takes.");

  py::class_<NodeLoader>(m, "NodeLoader")
      .def(py::init<std::shared_ptr<Graph>, py::array, const py::dict&, const py::dict&, int64_t, const std::string&>(),
           py::arg("graph"), py::arg("seeds"), py::arg("sampler"), py::arg("loader"), py::arg("cache_max_bytes") = 0,
           py::arg("cache_rows") = "halo")
      .def_property_readonly("steps_per_epoch", &NodeLoader::steps_per_epoch)
      .def("next", &NodeLoader::Next)
      .def("fetch_features", &NodeLoader::FetchFeatures, py::arg("on"),
           "Whether the batches not yet made carry their input nodes' feature rows (the loader setting "
           "fetch_features); those already made are as they were.")
      .def("close", &NodeLoader::Close);

  py::class_<EdgeLoader>(m, "EdgeLoader")
      .def(py::init<std::shared_ptr<Graph>, py::array, const py::dict&, const py::dict&, const py::dict&, int64_t,
                    const std::string&>(),
           py::arg("graph"), py::arg("edges"), py::arg("sampler"), py::arg("link"), py::arg("loader"),
           py::arg("cache_max_bytes") = 0, py::arg("cache_rows") = "halo")
      .def_property_readonly("steps_per_epoch", &EdgeLoader::steps_per_epoch)
      .def("next", &EdgeLoader::Next)
      .def("close", &EdgeLoader::Close);
}

// The process and job helpers: allocation tuning, the launcher's heartbeat and variables, and
// fanout-train's own split of seeds and positive edges among the ranks.
void BindJob(py::module_& m) {
  m.def(
      "keep_large_allocations", [] { base::KeepLargeAllocations(base::kTrainingProcessLargestReused); },
      "Has glibc reuse freed buffers of up to 1 GiB instead of unmapping them (base/malloc_tuning.h): "
      "the step's tensors stop page-faulting fresh memory each step. Process-wide.");
  m.def("trim_heap", &base::TrimHeap, py::arg("keep_free") = 0,
        "Returns the heap's free pages to the kernel (malloc_trim(0)) when more than `keep_free` bytes of it are "
        "free: between phases whose buffers differ, so that one phase's kept buffers do not stay resident under "
        "the next one's. Returns whether it trimmed.");
  m.def("start_heartbeat", &base::StartHeartbeatFromEnvironment,
        "Starts fanout-launch's liveness signal when FANOUT_HEARTBEAT_S is set; returns whether it did.");
  m.def(
      "job_env",
      [] {
        base::JobEnv j = Take(base::JobEnv::FromEnvironment());
        py::dict d;
        d["job_id"] = j.job_id;
        d["part_config"] = j.part_config;
        d["ip_config"] = j.ip_config;
        d["servers"] = j.servers;
        d["coordinator"] = j.coordinator;
        d["num_machines"] = j.num_machines;
        d["machine_id"] = j.machine_id;
        d["num_servers"] = j.num_servers;
        d["num_trainers"] = j.num_trainers;
        d["num_samplers"] = j.num_samplers;
        d["sampler_nice"] = j.sampler_nice;
        d["local_rank"] = j.local_rank;
        d["rank"] = j.rank;
        d["world_size"] = j.world_size;
        d["restart_count"] = j.restart_count;
        return d;
      },
      "fanout-launch's job variables (FANOUT_*), -1 or '' where unset; errors name a malformed one.");
  m.def(
      "split_seeds",
      [](const Graph& g, const py::array& ids, int trainers_per_machine, int rank) {
        std::vector<int64_t> sorted = Ids(ids, "IDs");
        if (!std::is_sorted(sorted.begin(), sorted.end()) ||
            std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
          throw py::value_error("IDs to split must be ascending and distinct");
        }
        CheckRank(g, trainers_per_machine, rank);
        auto split = sampler::SplitSeeds(sorted, g.graph().node_book(), trainers_per_machine);
        return Adopt(std::move(split[rank]));
      },
      py::arg("graph"), py::arg("ids"), py::arg("trainers_per_machine"), py::arg("rank"),
      "fanout-train's split of ascending IDs among the job's trainers: rank's share (SplitSeeds).");

  m.def(
      "check_layer_fanouts",
      [](const std::string& what, const std::vector<int64_t>& fanouts) {
        if (absl::Status s = core::CheckLayerFanouts(what, fanouts); !s.ok()) throw py::value_error(std::string(s.message()));
      },
      py::arg("what"), py::arg("fanouts"),
      "fanout-train's rule for a batch's fanouts (at least one layer, each > 0 or -1): ValueError naming `what` "
      "and the layer.");

  m.def(
      "check_batch_size",
      [](const std::string& what, int64_t batch_size) {
        if (absl::Status s = core::CheckBatchSize(what, batch_size); !s.ok()) {
          throw py::value_error(std::string(s.message()));
        }
      },
      py::arg("what"), py::arg("batch_size"),
      "fanout-train's rule for a batch size (at least 1): ValueError naming `what` and the value.");

  m.def(
      "rank_edge_range",
      [](const Graph& g, int trainers_per_machine, int rank) {
        CheckRank(g, trainers_per_machine, rank);
        absl::StatusOr<std::pair<int64_t, int64_t>> r = sampler::RankEdgeRange(g.config(), trainers_per_machine, rank);
        if (!r.ok()) throw py::value_error(std::string(r.status().message()));
        return *r;
      },
      py::arg("graph"), py::arg("trainers_per_machine"), py::arg("rank"),
      "fanout-train's positive edges of a rank (--task link), [begin, end): the edges its partition stores, "
      "in slices.");

  m.def(
      "rank_edge_count",
      [](const Graph& g, int trainers_per_machine, int rank) {
        CheckRank(g, trainers_per_machine, rank);
        return sampler::RankEdgeCount(g.config(), trainers_per_machine, rank);
      },
      py::arg("graph"), py::arg("trainers_per_machine"), py::arg("rank"),
      "How many positive edges fanout-train gives a rank (--task link), without listing them.");

  m.def(
      "rank_edge_ids",
      [](const Graph& g, int trainers_per_machine, int rank) {
        CheckRank(g, trainers_per_machine, rank);
        return Adopt(sampler::RankEdgeSeeds(g.config(), trainers_per_machine, rank).ToVector());
      },
      py::arg("graph"), py::arg("trainers_per_machine"), py::arg("rank"),
      "fanout-train's positive edges of a rank (--task link) as graph-wide edge IDs: the edges its partition "
      "stores (of a typed graph: of its link relations, each cut into slices), in slices.");

  m.def("typed_block_layout", &TypedBlockLayout, py::arg("src_types"), py::arg("num_types"), py::arg("num_dst"),
        py::arg("indices"), py::arg("dst"), py::arg("etype"), py::arg("num_relations"),
        "A typed block's sources grouped by node type and edges by relation (stable, a counting sort), with each "
        "edge's endpoints as indices among their type's sources: (by_type, type_counts, type_dst_counts, local, "
        "by_relation, relation_counts, relation_src, relation_dst).");
}

// fanout._native.Graph: a partitioned graph opened as one machine of the job sees it.
void BindGraph(py::module_& m) {
  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")
      .def(py::init<const std::string&, int, const std::string&, const std::string&, int, double,
                    bool, double>(),
           py::arg("part_config"), py::arg("machine_id"), py::arg("servers") = "",
           py::arg("ip_config") = "", py::arg("num_servers") = 1,
           py::arg("deadline_seconds") = 60.0, py::arg("read_local_files") = true,
           py::arg("unreachable_timeout") = 0.0)
      .def("stop_watching", &Graph::StopWatching)
      .def_property_readonly("graph_name", [](const Graph& g) { return g.config().graph_name; })
      .def_property_readonly("num_nodes", [](const Graph& g) { return g.config().num_nodes; })
      .def_property_readonly("num_edges", [](const Graph& g) { return g.config().num_edges; })
      .def_property_readonly("num_parts", [](const Graph& g) { return g.config().num_parts; })
      .def_property_readonly("link_etypes", [](const Graph& g) { return g.config().link_etypes; })
      .def_property_readonly("num_classes", [](const Graph& g) { return g.config().num_classes; })
      .def_property_readonly("machine_id", [](const Graph& g) { return g.graph().machine_id(); })
      .def_property_readonly("part_config", &Graph::part_config_path)
      .def_property_readonly("node_ranges",
                             [](const Graph& g) { return g.Ranges(g.config().node_bounds); })
      .def_property_readonly("edge_ranges",
                             [](const Graph& g) { return g.Ranges(g.config().edge_bounds); })
      // Node types in schema order ("_N" alone for a graph of one type), and each type's
      // [begin, end) IDs per partition; relations as (src type, relation, dst type).
      .def_property_readonly("node_types", [](const Graph& g) { return g.config().node_types; })
      .def_property_readonly("node_type_ranges",
                             [](const Graph& g) { return g.config().node_type_ranges; })
      .def_property_readonly("edge_types",
                             [](const Graph& g) {
                               std::vector<std::tuple<std::string, std::string, std::string>> out;
                               for (const auto& e : g.config().edge_types)
                                 out.emplace_back(e.src, e.rel, e.dst);
                               return out;
                             })
      .def_property_readonly("edge_type_ranges",
                             [](const Graph& g) { return g.config().edge_type_ranges; })
      .def_property_readonly("node_type_map", &Graph::node_types)
      .def_property_readonly("edge_type_map", &Graph::edge_types)
      .def_property_readonly("node_fields",
                             [](const Graph& g) {
                               py::list l;
                               for (const auto& f : g.config().node_fields) l.append(Schema(f));
                               return l;
                             })
      .def_property_readonly("edge_fields",
                             [](const Graph& g) {
                               py::list l;
                               for (const auto& f : g.config().edge_fields) l.append(Schema(f));
                               return l;
                             })
      .def("servers_of", [](const Graph& g, int p) { return g.options().servers.addresses.at(p); })
      .def("pull_node_rows", &Graph::PullNodeRows, py::arg("field"), py::arg("ids"))
      .def("push_node_rows", &Graph::PushNodeRows, py::arg("field"), py::arg("ids"),
           py::arg("values"), py::arg("add") = false)
      .def("create_node_field", &Graph::CreateNodeField, py::arg("name"), py::arg("dtype"),
           py::arg("row_shape"), py::arg("node_type") = "")
      .def("sparse_update", &Graph::SparseUpdate, py::arg("field"), py::arg("state_field"),
           py::arg("ids"), py::arg("grads"), py::arg("kind"), py::arg("lr"), py::arg("beta1"),
           py::arg("beta2"), py::arg("eps"))
      .def_static("sparse_state_width",
                  [](const std::string& kind, int64_t dim) {
                    return core::SparseStateWidth(Take(core::ParseSparseOptimizer(kind)), dim);
                  })
      .def("whole_node_field", &Graph::WholeNodeField, py::arg("field"))
      .def("degrees", &Graph::Degrees, py::arg("ids"), py::arg("out") = false)
      .def("find_edges", &Graph::FindEdges, py::arg("eids"));
}

}  // namespace
}  // namespace fanout::python

PYBIND11_MODULE(_native, m) {
  using namespace fanout;
  using namespace fanout::python;
  m.doc() = "fanout's native data plane (graph reads, seed split, batch loaders); see fanout.distributed";
  // pybind11 before 2.12 reads NumPy 1.x's array structures: under NumPy 2 its arrays come out with
  // wrong strides (every row the first one), so a batch would be silently wrong. Refuse instead.
#if PYBIND11_VERSION_MAJOR == 2 && PYBIND11_VERSION_MINOR < 12
  {
    const std::string version = py::str(py::module_::import("numpy").attr("__version__"));
    if (std::atoi(version.c_str()) >= 2) {
      throw py::import_error(
          "fanout._native was built with pybind11 " + std::to_string(PYBIND11_VERSION_MAJOR) + "." +
          std::to_string(PYBIND11_VERSION_MINOR) + ", which supports NumPy 1.x only, and this environment has NumPy " +
          version + ": install fanout into it with `pip install ./python` (which builds against a pybind11 that " +
          "supports both), or use numpy<2 here");
    }
  }
#endif
  py::register_exception<StatusError>(m, "FanoutError", PyExc_RuntimeError);

  BindJob(m);
  BindTypes(m);
  BindKernels(m);
  BindGraph(m);
  BindLoaders(m);
}
