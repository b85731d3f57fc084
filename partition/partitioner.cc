#include "partition/partitioner.h"

#include "partition/id_maps.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <fstream>
#include <numeric>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "base/parallel.h"
#include "base/process_stats.h"
#include "base/progress.h"
#include "base/staging_dir.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/csr.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "partition/id_maps.h"
#include "partition/metis_graph.h"
#include "partition/input_files.h"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using core::NpyArray;
using base::StrCat;

constexpr const char* kTool = "fanout-partition";

void Log(const PartitionOptions& o, const std::string& msg) {
  if (!o.quiet) std::fprintf(stderr, "%s: %s\n", kTool, msg.c_str());
}

// ---------------------------------------------------------------------------------------------
// Assignment

absl::StatusOr<std::vector<int32_t>> MetisAssign(const Dataset& d, const PartitionOptions& o,
                                                 std::string* note) {
  ASSIGN_OR_RETURN(MetisGraph g, BuildMetisGraph(d, o));
  *note = g.Describe(o);
  Log(o, StrCat("running METIS: ", d.num_nodes, " nodes, ", g.adjncy.size() / 2,
                " undirected edges, ", o.num_parts, " parts, ", g.ncon, " constraint(s)"));
  // METIS reports nothing while it runs (a minute at products scale): say that it still does.
  std::optional<base::ElapsedTicker> ticker;
  if (!o.quiet && base::ProgressEnabled(base::GetProgressMode())) ticker.emplace(kTool, "METIS still running", 15.0);
  return RunMetis(g, o);
}

std::vector<int32_t> RandomAssign(int64_t n, int k, uint64_t seed) {
  // Balanced: a seeded permutation cut into K equal slices.
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(perm[i], perm[std::uniform_int_distribution<int64_t>(0, i)(rng)]);
  }
  std::vector<int32_t> part(n);
  for (int64_t i = 0; i < n; ++i) part[perm[i]] = static_cast<int32_t>(i * k / n);
  return part;
}

// ---------------------------------------------------------------------------------------------
// Output

// Writes rows[0..count) of `src`, gathered, into a new .npy of shape [count, row shape...],
// streaming 8 MiB at a time.
absl::Status WriteGatheredRows(const NpyArray& src, const int64_t* rows, int64_t count,
                               const std::string& path) {
  std::vector<int64_t> shape = src.shape();
  shape[0] = count;
  ASSIGN_OR_RETURN(auto w, core::NpyWriter::Open(path, src.dtype(), shape));
  const size_t rb = src.row_bytes();
  const size_t cap = std::max<size_t>(rb, 8u << 20);
  std::vector<char> buf;
  buf.reserve(cap + rb);
  for (int64_t i = 0; i < count; ++i) {
    const char* r = src.row(rows[i]);
    buf.insert(buf.end(), r, r + rb);
    if (buf.size() >= cap) {
      RETURN_IF_ERROR(w->Append(buf.data(), buf.size()));
      buf.clear();
    }
  }
  RETURN_IF_ERROR(w->Append(buf.data(), buf.size()));
  return w->Close();
}

absl::Status CheckName(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("--graph-name is empty");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return absl::InvalidArgumentError(StrCat("--graph-name '", name, "': use letters, digits, '_', '-' or '.'"));
    }
  }
  return absl::OkStatus();
}


// What the write tasks share; all of it is read-only while they run.
struct Relabelled {
  const Dataset* d;
  const EdgeView* view;
  const core::PartitionConfig* cfg;
  const core::RangePartitionBook* book;  // new node ID ranges
  const core::Csr* csc;                  // in-edge CSC over new IDs, positions = edge IDs
  const std::vector<int64_t>* origin;    // stored edge -> virtual input edge
  const std::vector<int64_t>* orig_nid;  // new node ID -> input node ID
  const std::vector<int64_t>* new_id;    // input node ID -> new node ID
  const std::vector<int64_t>* out_degree;  // new node ID -> stored out-edges
  int halo_hops;
  // Stored edge types (1 on the one-type graph). The CSC's rows are (partition, edge type, node):
  // partition k's rows are [R * start(k), R * end(k)), type r's rows of it the r-th run of size(k)
  // (VirtualRow), so that each partition's edges of a type hold one contiguous ID range.
  int num_edge_types;
  // The node types' ranges per partition (the config's; one type on the one-type graph).
  const core::TypeMap* node_types;
  const std::string* hard_negative_field;  // PartitionOptions' ("" = none)
};

// The CSC row of destination `w` (new ID, in partition k) for stored edge type `r`.
int64_t VirtualRow(const core::RangePartitionBook& book, int num_types, int64_t w, int r) {
  const int k = book.PartOf(w);
  return num_types * book.start(k) + r * book.size(k) + (w - book.start(k));
}

struct PartStats {
  int64_t cut = 0;   // in-edges whose source is remote
  int64_t halo = 0;  // distinct remote sources
  int64_t train = 0;
};

// The hard-negative field's rows of stored edges [first, first + count): input node IDs as new
// IDs (-1 stays), a reverse edge's row all -1. On a typed graph the field is one relation's
// (its rows are that relation's input rows, from row0) and its values type-wise IDs of the
// relation's destination type. The values were checked by CheckHardNegatives.
absl::Status WriteHardNegatives(const Relabelled& r, const Field& f, int64_t first, int64_t count,
                                const std::string& path) {
  const Dataset& d = *r.d;
  const int64_t width = f.data.row_elems();
  int64_t row0 = 0, offset = 0;  // the field's first input row; its values' first input node ID
  if (!f.edge_type.empty()) {
    const int t = d.EdgeTypeIndex(f.edge_type);
    row0 = d.edge_type_offsets[t];
    offset = d.node_type_offsets[d.NodeTypeIndex(d.edge_types[t].dst)];
  }
  ASSIGN_OR_RETURN(auto w, core::NpyWriter::Open(path, core::DType::kInt64, {count, width}));
  std::vector<int64_t> row(width), buf;
  for (int64_t p = 0; p < count; ++p) {
    const int64_t v = (*r.origin)[first + p];
    std::fill(row.begin(), row.end(), -1);
    if (!r.view->is_reverse(v)) {
      core::ConvertElements(f.data.dtype(), f.data.row(r.view->input_row(v) - row0), width, row.data());
      for (int64_t& x : row) x = x < 0 ? -1 : (*r.new_id)[offset + x];
    }
    buf.insert(buf.end(), row.begin(), row.end());
    if (buf.size() >= (size_t{1} << 20)) {
      RETURN_IF_ERROR(w->Append(buf.data(), buf.size() * sizeof(int64_t)));
      buf.clear();
    }
  }
  RETURN_IF_ERROR(w->Append(buf.data(), buf.size() * sizeof(int64_t)));
  return w->Close();
}

// --hard-negative-field names an integer edge field whose every value is a node ID or -1: an
// input node ID on a graph of one type; on a typed graph a field of one relation (or of each
// relation that has it) holding type-wise IDs of its destination type. Errors name the file and row.
absl::Status CheckHardNegatives(const Dataset& d, const std::string& name) {
  bool found = false;
  for (const Field& f : d.edge_fields) {
    if (f.name != name) continue;
    found = true;
    const core::DType t = f.data.dtype();
    if (t != core::DType::kInt64 && t != core::DType::kInt32) {
      return absl::InvalidArgumentError(StrCat(f.data.path(), ": hard negatives must be int32 or int64 node IDs, not ",
                                               core::DTypeName(t)));
    }
    int64_t limit = d.num_nodes;
    std::string what = "a node ID";
    if (!f.edge_type.empty()) {
      const int dst = d.NodeTypeIndex(d.edge_types[d.EdgeTypeIndex(f.edge_type)].dst);
      limit = d.TypeCount(dst);
      what = StrCat("a type-wise ID of ", d.node_types[dst], " (the relation's destination type)");
    }
    const int64_t rows = f.data.rows(), width = f.data.row_elems();
    std::vector<int64_t> row(width);
    for (int64_t e = 0; e < rows; ++e) {
      core::ConvertElements(t, f.data.row(e), width, row.data());
      for (int64_t x : row) {
        if (x < -1 || x >= limit) {
          return absl::InvalidArgumentError(StrCat(f.data.path(), " row ", e, ": hard negative ", x, " is not ", what,
                                                   " in [0, ", limit, ") or -1"));
        }
      }
    }
  }
  if (!found) {
    return absl::NotFoundError(StrCat("--hard-negative-field ", name, ": the input has no edge field of that name"));
  }
  return absl::OkStatus();
}

// Graph files of partition k: CSC slice, original IDs, halo, out-edge index, edge data.
absl::Status WriteGraphFiles(const Relabelled& r, int k, PartStats* st) {
  using core::DType;
  using core::PartFiles;
  const core::Csr& csc = *r.csc;
  const int R = r.num_edge_types;
  const int64_t nb = r.book->start(k), ne = r.book->end(k);
  const int64_t eb = csc.indptr[R * nb], ee = csc.indptr[R * ne];
  const int64_t nk = ne - nb, mk = ee - eb;
  const Dataset& d = *r.d;
  auto P = [&](const std::string& rel) { return r.cfg->PartPath(k, rel); };
  // In-edge index: R * n_k + 1 offsets, edge type r's run of n_k rows after another (R = 1: today's).
  std::vector<int64_t> indptr(R * nk + 1);
  for (int64_t i = 0; i <= R * nk; ++i) indptr[i] = csc.indptr[R * nb + i] - eb;
  RETURN_IF_ERROR(core::WriteIdArray(P(PartFiles::kIndptr), r.cfg->edge_id_dtype, indptr.data(), R * nk + 1));
  RETURN_IF_ERROR(core::WriteIdArray(P(PartFiles::kIndices), r.cfg->node_id_dtype, csc.indices.data() + eb, mk));
  if (!d.typed()) {
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOrigEids), DType::kInt64, {mk}, r.origin->data() + eb));
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOrigNids), DType::kInt64, {nk}, r.orig_nid->data() + nb));
  } else {
    // Typed graphs keep type-wise original IDs: a node's ID among its type's input nodes, an
    // edge's row among its relation's input edges (rev_REL's edge: the row of the REL edge it reverses).
    std::vector<int64_t> oe(mk), on(nk);
    for (int64_t p = 0; p < mk; ++p) {
      const int64_t row = r.view->input_row((*r.origin)[eb + p]);
      oe[p] = row - d.edge_type_offsets[d.EdgeTypeOf(row)];
    }
    for (int64_t i = 0; i < nk; ++i) {
      const int64_t v = (*r.orig_nid)[nb + i];
      on[i] = v - d.node_type_offsets[d.NodeTypeOf(v)];
    }
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOrigEids), oe));
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOrigNids), on));
  }

  // Halo: the remote sources of this partition's in-edges, collected through a marker array
  // (one pass over N) rather than a sort of every cut edge.
  std::vector<int64_t> halo;
  {
    std::vector<uint8_t> remote(r.book->num_ids(), 0);
    for (int64_t p = eb; p < ee; ++p) {
      int64_t u = csc.indices[p];
      if (u < nb || u >= ne) {
        ++st->cut;
        remote[u] = 1;
      }
    }
    for (int64_t u = 0; u < r.book->num_ids(); ++u) {
      if (remote[u]) halo.push_back(u);
    }
  }
  st->halo = static_cast<int64_t>(halo.size());
  if (r.halo_hops == 0) halo.clear();
  RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kHaloNids), halo));

  // Out-edges of the inner nodes, wherever they are stored; by edge ID (= by destination).
  {
    std::vector<int64_t> out_ptr(nk + 1, 0);
    for (int64_t i = 0; i < nk; ++i) out_ptr[i + 1] = out_ptr[i] + (*r.out_degree)[nb + i];
    std::vector<int64_t> out_dst(out_ptr[nk]), out_eid(out_ptr[nk]);
    std::vector<int64_t> fill(out_ptr.begin(), out_ptr.end() - 1);
    // Rows in order are edge IDs in order; row -> destination undoes VirtualRow.
    for (int q = 0; q < r.book->num_parts(); ++q) {
      const int64_t qb = r.book->start(q), qn = r.book->size(q);
      for (int64_t row = R * qb; row < R * (qb + qn); ++row) {
        const int64_t dst = qb + (row - R * qb) % qn;
        for (int64_t p = csc.indptr[row]; p < csc.indptr[row + 1]; ++p) {
          int64_t u = csc.indices[p];
          if (u < nb || u >= ne) continue;
          int64_t at = fill[u - nb]++;
          out_dst[at] = dst;
          out_eid[at] = p;
        }
      }
    }
    RETURN_IF_ERROR(core::WriteIdArray(P(PartFiles::kOutIndptr), r.cfg->edge_id_dtype, out_ptr.data(), nk + 1));
    RETURN_IF_ERROR(core::WriteIdArray(P(PartFiles::kOutIndices), r.cfg->node_id_dtype, out_dst.data(), out_ptr[nk]));
    RETURN_IF_ERROR(core::WriteIdArray(P(PartFiles::kOutEids), r.cfg->edge_id_dtype, out_eid.data(), out_ptr[nk]));
  }

  // Edge data: a stored edge's row is its input row (reverse edges share their input's row). A
  // typed graph's field is one relation's: rows for the partition's stored edges of that relation
  // (stored type t = input relation t, [first, last) of the partition's edges), by the edge's row
  // among the relation's input edges.
  if (!r.d->edge_fields.empty()) {
    std::vector<int64_t> rows(mk);
    for (int64_t p = 0; p < mk; ++p) rows[p] = r.view->input_row((*r.origin)[eb + p]);
    for (const auto& f : r.d->edge_fields) {
      int64_t first = 0, last = mk;
      std::vector<int64_t> typed_rows;
      if (!f.edge_type.empty()) {
        const int t = d.EdgeTypeIndex(f.edge_type);
        first = csc.indptr[R * nb + t * nk] - eb;
        last = csc.indptr[R * nb + (t + 1) * nk] - eb;
        typed_rows.assign(rows.begin() + first, rows.begin() + last);
        for (int64_t& x : typed_rows) x -= d.edge_type_offsets[t];
      }
      const std::string path = P(PartFiles::EdgeData(core::FieldSchema{.name = f.name, .edge_type = f.edge_type}.key()));
      if (f.name == *r.hard_negative_field) {
        RETURN_IF_ERROR(WriteHardNegatives(r, f, eb + first, last - first, path));
      } else {
        RETURN_IF_ERROR(WriteGatheredRows(f.data, f.edge_type.empty() ? rows.data() : typed_rows.data(), last - first, path));
      }
    }
  }
  return absl::OkStatus();
}

// The node types that get split masks: -1 (every node) on the one-type graph; on a typed graph,
// each type with a node in the split, in type order.
std::vector<int> MaskTypes(const Dataset& d) {
  if (!d.typed()) return {-1};
  std::vector<bool> has(d.node_types.size(), false);
  for (const auto* idx : {&d.train_idx, &d.valid_idx, &d.test_idx}) {
    for (int64_t v : *idx) has[d.NodeTypeOf(v)] = true;
  }
  std::vector<int> types;
  for (size_t t = 0; t < has.size(); ++t) {
    if (has[t]) types.push_back(static_cast<int>(t));
  }
  return types;
}

// Node data of every partition in one forward pass over each source field: inside a partition,
// new-ID order is ascending input order, so each partition's file is a plain append. The mapped
// source pages already passed are released as the pass goes.
absl::Status WriteNodeData(const Relabelled& r, std::vector<PartStats>* stats) {
  const Dataset& d = *r.d;
  const int K = r.book->num_parts();
  const int64_t n = d.num_nodes;
  std::vector<int32_t> part_of(n);
  for (int64_t v = 0; v < n; ++v) part_of[v] = r.book->PartOf((*r.new_id)[v]);
  // The IDs of partition k that a field of type t has rows for (t = -1: every node of the partition).
  auto ids_of = [&](int k, int t) {
    return t < 0 ? std::pair{r.book->start(k), r.book->end(k)} : r.node_types->Range(t, k);
  };
  auto rows_in = [&](int k, int t) { return ids_of(k, t).second - ids_of(k, t).first; };
  for (const auto& f : d.node_fields) {
    // A typed field covers its type's input nodes [lo, hi), row v - lo for node v.
    const int t = f.node_type.empty() ? -1 : d.NodeTypeIndex(f.node_type);
    const int64_t lo = t < 0 ? 0 : d.node_type_offsets[t], hi = t < 0 ? n : d.node_type_offsets[t + 1];
    const std::string key = core::FieldSchema{.name = f.name, .node_type = f.node_type}.key();
    const size_t rb = f.data.row_bytes();
    const size_t cap = std::max<size_t>(rb, (4u << 20) / K);
    std::vector<std::unique_ptr<core::NpyWriter>> w(K);
    std::vector<std::vector<char>> buf(K);
    for (int k = 0; k < K; ++k) {
      std::vector<int64_t> shape = f.data.shape();
      shape[0] = rows_in(k, t);
      ASSIGN_OR_RETURN(w[k], core::NpyWriter::Open(r.cfg->PartPath(k, core::PartFiles::NodeData(key)),
                                                   f.data.dtype(), shape));
      buf[k].reserve(cap + rb);
    }
    size_t dropped = 0;
    for (int64_t v = lo; v < hi; ++v) {
      std::vector<char>& b = buf[part_of[v]];
      const char* row = f.data.row(v - lo);
      b.insert(b.end(), row, row + rb);
      if (b.size() >= cap) {
        RETURN_IF_ERROR(w[part_of[v]]->Append(b.data(), b.size()));
        b.clear();
      }
      if (f.data.is_mapped() && (v - lo) * rb >= dropped + (64u << 20)) {
        f.data.DropPages(dropped, (v - lo) * rb);
        dropped = (v - lo) * rb;
      }
    }
    for (int k = 0; k < K; ++k) {
      RETURN_IF_ERROR(w[k]->Append(buf[k].data(), buf[k].size()));
      RETURN_IF_ERROR(w[k]->Close());
    }
    f.data.DropPages(0, f.data.nbytes());
  }
  if (!d.has_split) return absl::OkStatus();
  const std::vector<int64_t>* splits[3] = {&d.train_idx, &d.valid_idx, &d.test_idx};
  const char* names[3] = {"train_mask", "val_mask", "test_mask"};
  // The one-type graph: masks over every node. A typed graph: masks of each type with split nodes.
  for (int t : MaskTypes(d)) {
    const std::string type = t < 0 ? "" : d.node_types[t];
    for (int i = 0; i < 3; ++i) {
      std::vector<std::vector<uint8_t>> mask(K);
      for (int k = 0; k < K; ++k) mask[k].assign(rows_in(k, t), 0);
      for (int64_t v : *splits[i]) {
        if (t >= 0 && d.NodeTypeOf(v) != t) continue;
        const int64_t id = (*r.new_id)[v];
        const int k = part_of[v];
        mask[k][id - ids_of(k, t).first] = 1;
      }
      for (int k = 0; k < K; ++k) {
        if (i == 0) (*stats)[k].train += std::count(mask[k].begin(), mask[k].end(), 1);
        const std::string key = core::FieldSchema{.name = names[i], .node_type = type}.key();
        RETURN_IF_ERROR(core::WriteNpy(r.cfg->PartPath(k, core::PartFiles::NodeData(key)), mask[k]));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePartitionOptions(const PartitionOptions& o, int64_t num_nodes) {
  if (o.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (o.num_parts < 1) {
    return absl::InvalidArgumentError(StrCat("--num-parts must be at least 1, got ", o.num_parts));
  }
  if (num_nodes >= 0 && o.num_parts > num_nodes) {
    return absl::InvalidArgumentError(StrCat("--num-parts must be in [1, ", num_nodes,
                                             "] (the number of nodes), got ", o.num_parts));
  }
  if (o.method == PartMethod::kFile && o.assignment_file.empty()) {
    return absl::InvalidArgumentError("--part-method file needs --assignment FILE");
  }
  if (o.edge_split.negatives < 1 || o.edge_split.negatives > 100000) {
    return absl::InvalidArgumentError(
        StrCat("--eval-negatives must be in [1, 100000], got ", o.edge_split.negatives));
  }
  if (std::error_code ec; !o.edge_split.files_dir.empty() && !fs::is_directory(o.edge_split.files_dir, ec)) {
    return absl::NotFoundError(StrCat("--edge-split-files ", o.edge_split.files_dir, ": not a readable folder"));
  }
  if (!(o.edge_split.valid >= 0 && o.edge_split.test >= 0 && o.edge_split.valid + o.edge_split.test < 1)) {
    return absl::InvalidArgumentError("--edge-split: the valid and test fractions must be >= 0 and leave some to train");
  }
  if (o.method != PartMethod::kFile && !o.assignment_file.empty()) {
    return absl::InvalidArgumentError("--assignment is only used with --part-method file");
  }
  if (o.num_threads < 0) {
    return absl::InvalidArgumentError(
        StrCat("--num-threads must be >= 0 (0 = all cores), got ", o.num_threads));
  }
  if (o.halo_hops != 0 && o.halo_hops != 1) {
    return absl::InvalidArgumentError(StrCat("--halo-hops must be 0 or 1, got ", o.halo_hops));
  }
  if (!o.graph_name.empty()) RETURN_IF_ERROR(CheckName(o.graph_name));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> AssignPartitions(const Dataset& d, const PartitionOptions& o,
                                                      std::string* note) {
  switch (o.method) {
    case PartMethod::kMetis:
      return MetisAssign(d, o, note);
    case PartMethod::kRandom:
      *note = "random, balanced node counts";
      return RandomAssign(d.num_nodes, o.num_parts, o.seed);
    case PartMethod::kFile:
      *note = StrCat("assignment file ", o.assignment_file);
      return ReadAssignment(o.assignment_file, d.num_nodes, o.num_parts);
  }
  return absl::InternalError("unknown partition method");
}

absl::Status CheckNodeCountFits(const Dataset& d, int64_t usable_bytes) {
  return CheckNodeCountFits(d.num_nodes, d.num_nodes_source, usable_bytes, 1);
}

absl::Status CheckNodeCountFits(int64_t num_nodes, const std::string& source, int64_t usable_bytes, int ranks) {
  // Per-node arrays held at once, at the least: the assignment, the new IDs and the CSR offsets,
  // 8 bytes each (METIS, the halo and the split masks add more). A count that does not fit even
  // so is almost always IDs that are not 0..N-1 (raw or hashed IDs), which would otherwise end
  // in std::bad_alloc or the OOM killer after the output folder was claimed.
  constexpr int64_t kMinBytesPerNode = 24;
  const int64_t per_process = (num_nodes + ranks - 1) / ranks;
  if (usable_bytes <= 0 || per_process <= usable_bytes / kMinBytesPerNode) return absl::OkStatus();
  auto gib = [](double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f GiB", bytes / (1ll << 30));
    return std::string(buf);
  };
  const std::string need = gib(static_cast<double>(per_process) * kMinBytesPerNode);
  return absl::ResourceExhaustedError(StrCat(
      num_nodes, " nodes (from ", source, ") need at least ",
      ranks == 1 ? StrCat(need, " for per-node arrays alone; this machine has ")
                 : StrCat(need, " per rank for per-node arrays alone (", per_process, " nodes on each of ", ranks,
                          " ranks); this rank's share of its machine is "),
      gib(static_cast<double>(usable_bytes)),
      ". Node IDs must be 0..N-1: relabel raw or hashed IDs to consecutive integers first "
      "(e.g. numpy.unique(edges, return_inverse=True)); if the count is right, ",
      ranks == 1 ? "partition on a machine with more memory" : "run more ranks or on machines with more memory"));
}

namespace {

// Checks what can be checked before the long work and claims the output folder, so that a bad
// --out fails fast. Everything read is protected: --out may not be, contain, or (to replace it)
// lie inside any input.
absl::StatusOr<base::StagingDir> ClaimOutput(const Dataset& d, const PartitionOptions& o, const std::string& name) {
  RETURN_IF_ERROR(ValidatePartitionOptions(o, d.num_nodes));
  RETURN_IF_ERROR(CheckNodeCountFits(d, base::UsableMemoryBytes()));
  RETURN_IF_ERROR(CheckName(name));
  RETURN_IF_ERROR(ValidateEdgeFields(d));
  if (!o.hard_negative_field.empty()) RETURN_IF_ERROR(CheckHardNegatives(d, o.hard_negative_field));
  for (const auto& f : d.node_fields) {
    if (d.has_split && (f.name == "train_mask" || f.name == "val_mask" || f.name == "test_mask")) {
      return absl::InvalidArgumentError(StrCat(f.data.path(), ": node field '", f.name,
                                               "' clashes with the mask fanout derives from the split"));
    }
  }
  base::StagingOptions so{.tool = kTool, .overwrite = o.overwrite, .inputs = {d.input_dir, o.assignment_file}};
  for (const std::string* p : {&d.edges_source, &d.edges.path()}) so.inputs.push_back(*p);
  so.inputs.insert(so.inputs.end(), d.inputs.begin(), d.inputs.end());
  for (const auto* fields : {&d.node_fields, &d.edge_fields}) {
    for (const Field& f : *fields) so.inputs.push_back(f.data.path());
  }
  return base::StagingDir::Create(o.out_dir, so);
}

// The held-out node pairs of link prediction, with their counts in the summary.
absl::StatusOr<EdgeSplit> SplitForLinks(const Dataset& d, const PartitionOptions& o, PartitionSummary* s) {
  EdgeSplitOptions eo = o.edge_split;
  eo.seed = o.seed;
  ASSIGN_OR_RETURN(EdgeSplit split, SplitEdges(d, eo));
  s->link_pairs = split.pairs;
  s->link_train = split.train_pairs;
  s->link_valid = static_cast<int64_t>(split.valid_pos.size() / 2);
  s->link_test = static_cast<int64_t>(split.test_pos.size() / 2);
  std::string of;
  if (split.relations.size() == 1) of = StrCat(" of relation ", d.edge_types[split.relations[0]].ToString());
  if (split.relations.size() > 1) {
    std::vector<std::string> each;
    for (size_t j = 0; j < split.relations.size(); ++j) {
      const auto& [pairs, train, valid, test] = split.relation_counts[j];
      each.push_back(StrCat(d.edge_types[split.relations[j]].ToString(), " ", pairs, " (", train, "/", valid, "/", test, ")"));
    }
    of = StrCat(" of ", split.relations.size(), " relations [", base::StrJoin(each, ", "), "]");
  }
  Log(o, StrCat("edge split", o.edge_split.files_dir.empty() ? "" : StrCat(" from ", o.edge_split.files_dir), of,
                ": ", s->link_pairs, " node pairs: ", s->link_train, " train, ", s->link_valid, " valid, ",
                s->link_test, " test (held out in both directions)"));
  return split;
}

// New node IDs: partition k owns [bounds[k], bounds[k+1]); inside a partition the input order is
// kept. Typed graphs: inside a partition the input order is type order (input IDs are type-major),
// so each type's nodes are one contiguous range of it.
struct NewIds {
  std::vector<int64_t> bounds;
  std::vector<int64_t> new_id;    // input node ID -> new node ID
  std::vector<int64_t> orig_nid;  // new node ID -> input node ID
  std::vector<std::vector<std::pair<int64_t, int64_t>>> node_type_ranges;  // per type, per partition
};

absl::StatusOr<NewIds> Relabel(const Dataset& d, const std::vector<int32_t>& part, int K) {
  const int64_t n = d.num_nodes;
  NewIds r;
  r.bounds.assign(K + 1, 0);
  for (int64_t v = 0; v < n; ++v) ++r.bounds[part[v] + 1];
  for (int k = 0; k < K; ++k) r.bounds[k + 1] += r.bounds[k];
  r.new_id.resize(n);
  r.orig_nid.resize(n);
  std::vector<int64_t> next(r.bounds.begin(), r.bounds.end() - 1);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t id = next[part[v]]++;
    r.new_id[v] = id;
    r.orig_nid[id] = v;
  }
  const int T = d.typed() ? static_cast<int>(d.node_types.size()) : 1;
  std::vector<std::vector<int64_t>> count(T, std::vector<int64_t>(K, 0));
  for (int64_t v = 0; v < n; ++v) ++count[d.NodeTypeOf(v)][part[v]];
  r.node_type_ranges.assign(T, std::vector<std::pair<int64_t, int64_t>>(K));
  for (int k = 0; k < K; ++k) {
    int64_t at = r.bounds[k];
    for (int t = 0; t < T; ++t) {
      r.node_type_ranges[t][k] = {at, at + count[t][k]};
      at += count[t][k];
    }
  }
  return r;
}

// The partition config of the stored graph `csc` (rows by VirtualRow over R stored edge types).
absl::StatusOr<core::PartitionConfig> MakeConfig(const Dataset& d, const PartitionOptions& o, const std::string& name,
                                                 const NewIds& ids, const core::RangePartitionBook& book,
                                                 const core::Csr& csc, int R, const EdgeSplit& split) {
  core::PartitionConfig cfg;
  const int K = o.num_parts;
  SetConfigHeader(name, d.num_nodes, ids.bounds, o, &cfg);
  cfg.num_edges = csc.num_entries();
  RETURN_IF_ERROR(ChooseIdDTypes(o, d.num_nodes, cfg.num_edges, &cfg));
  for (int k = 0; k <= K; ++k) cfg.edge_bounds.push_back(csc.indptr[R * ids.bounds[k]]);
  cfg.num_classes = d.num_classes;
  for (int r : split.relations) cfg.link_etypes.push_back(d.edge_types[r].ToString());
  ConfigSchema schema{.types = &d, .reverse_types = d.typed() && o.add_reverse_edges,
                      .node_type_ranges = ids.node_type_ranges};
  if (d.typed()) {
    schema.edge_type_ranges.assign(R, {});
    for (int r = 0; r < R; ++r) {
      for (int k = 0; k < K; ++k) {
        const int64_t row = R * ids.bounds[k] + r * book.size(k);
        schema.edge_type_ranges[r].push_back({csc.indptr[row], csc.indptr[row + book.size(k)]});
      }
    }
  }
  auto field_schema = [](const Field& f) {
    return core::FieldSchema{f.name, f.data.dtype(), {f.data.shape().begin() + 1, f.data.shape().end()}, f.node_type,
                             f.codec, f.edge_type};
  };
  for (const Field& f : d.node_fields) schema.node_fields.push_back(field_schema(f));
  for (const Field& f : d.edge_fields) {
    schema.edge_fields.push_back(field_schema(f));
    if (f.name == o.hard_negative_field) schema.edge_fields.back().dtype = core::DType::kInt64;  // WriteHardNegatives
  }
  if (d.has_split) schema.mask_types = MaskTypes(d);
  SetConfigSchema(std::move(schema), &cfg);
  return cfg;
}

// Every partition's folders (cfg.base_dir is the staging folder).
absl::Status MakePartFolders(const core::PartitionConfig& cfg) {
  std::set<std::string> subdirs = {"graph", "node_data", "edge_data"};
  for (const core::FieldSchema& f : cfg.node_fields) {
    if (!f.node_type.empty()) subdirs.insert("node_data/" + f.node_type);
  }
  for (const core::FieldSchema& f : cfg.edge_fields) {
    if (!f.edge_type.empty()) subdirs.insert("edge_data/" + f.edge_type);
  }
  for (int k = 0; k < cfg.num_parts; ++k) {
    for (const std::string& sub : subdirs) {
      std::error_code ec;
      fs::create_directories(fs::path(cfg.PartPath(k, sub)), ec);
      if (ec) return absl::InternalError(StrCat("cannot create ", cfg.PartPath(k, sub), ": ", ec.message()));
    }
  }
  return absl::OkStatus();
}

// Held-out positives and their negatives in new node IDs (what the trainer samples with), under
// `dir`/link/; returns the config's "link" record.
absl::StatusOr<nlohmann::json> WriteLinkFiles(const EdgeSplit& split, const std::vector<int64_t>& new_id,
                                              const PartitionOptions& o, const PartitionSummary& s, const fs::path& dir) {
  nlohmann::json link;
  std::error_code ec;
  fs::create_directories(dir / "link", ec);
  if (ec) return absl::InternalError(StrCat("cannot create ", (dir / "link").string(), ": ", ec.message()));
  for (const auto& [file, pairs] : {std::pair<const char*, const std::vector<int64_t>*>{"valid_pos", &split.valid_pos},
                                    {"valid_neg", &split.valid_neg},
                                    {"test_pos", &split.test_pos},
                                    {"test_neg", &split.test_neg}}) {
    std::vector<int64_t> relabelled(pairs->size());
    for (size_t i = 0; i < pairs->size(); ++i) relabelled[i] = new_id[(*pairs)[i]];
    const int64_t rows = static_cast<int64_t>(relabelled.size() / 2);
    RETURN_IF_ERROR(core::WriteNpy((dir / "link" / (std::string(file) + ".npy")).string(), core::DType::kInt64,
                                   {rows, 2}, relabelled.data()));
    link[file] = {{"file", StrCat("link/", file, ".npy")}, {"rows", rows}};
  }
  // Typed graphs: each held-out pair's relation (an index into the config's link_etypes).
  if (!split.relations.empty()) {
    for (const auto& [file, rel] : {std::pair<const char*, const std::vector<int64_t>*>{"valid_rel", &split.valid_rel},
                                    {"test_rel", &split.test_rel}}) {
      RETURN_IF_ERROR(core::WriteNpy((dir / "link" / (std::string(file) + ".npy")).string(), core::DType::kInt64,
                                     {static_cast<int64_t>(rel->size())}, rel->data()));
      link[file] = {{"file", StrCat("link/", file, ".npy")}, {"rows", rel->size()},
                    {"meaning", "each pair's relation: an index into link_etypes"}};
    }
  }
  link["node_ids"] = "new node IDs (graph/orig_nids.npy of the owning partition maps them back)";
  if (o.edge_split.files_dir.empty()) {
    link["fractions"] = {1 - o.edge_split.valid - o.edge_split.test, o.edge_split.valid, o.edge_split.test};
  } else {
    link["files"] = fs::absolute(o.edge_split.files_dir).lexically_normal().string();
  }
  link["negatives_per_positive"] = {{"valid", split.valid_neg.size() / std::max<size_t>(1, split.valid_pos.size())},
                                    {"test", split.test_neg.size() / std::max<size_t>(1, split.test_pos.size())}};
  link["node_pairs"] = s.link_pairs;
  link["train_pairs"] = s.link_train;
  link["held_out"] = "valid and test pairs are not stored in either direction; negatives share the positive's "
                     "source and are linked to it in neither direction in the input";
  return link;
}

// Typed graphs: the summary's node and stored edge types with their counts.
std::string TypesNote(const core::TypeMap& node_types, const core::TypeMap& edge_types) {
  auto counts = [](const core::TypeMap& types) {
    std::vector<std::string> parts;
    for (int t = 0; t < types.num_types(); ++t) parts.push_back(StrCat(types.name(t), " ", types.count(t)));
    return base::StrJoin(parts, ", ");
  };
  return StrCat("node types:       ", counts(node_types), "\n", "edge types:       ", counts(edge_types), "\n");
}

}  // namespace

absl::StatusOr<PartitionSummary> PartitionDataset(const Dataset& d, const PartitionOptions& o) {
  const std::string name = o.graph_name.empty() ? d.name : o.graph_name;
  ASSIGN_OR_RETURN(base::StagingDir staging, ClaimOutput(d, o, name));
  base::PhaseTimer timer;
  PartitionSummary s;
  const int K = o.num_parts;
  const int64_t n = d.num_nodes;
  const int threads = o.num_threads > 0 ? o.num_threads : base::DefaultThreads();
  s.num_nodes = n;
  s.input_edges = d.num_edges();

  EdgeSplit split;
  if (o.edge_split.enabled()) {
    timer.Start("edge-split");
    ASSIGN_OR_RETURN(split, SplitForLinks(d, o, &s));
  }
  timer.Start("assign");
  Log(o, StrCat("assigning ", n, " nodes to ", K, " partitions"));
  ASSIGN_OR_RETURN(std::vector<int32_t> part, AssignPartitions(d, o, &s.metis_note));
  timer.Start("relabel");
  ASSIGN_OR_RETURN(const NewIds ids, Relabel(d, part, K));
  part = {};
  ASSIGN_OR_RETURN(const core::RangePartitionBook book, core::RangePartitionBook::FromBounds(ids.bounds));

  // Stored edge types: the relations, then (with reverse edges on a typed graph) rev_REL for each,
  // as DGL names them. The one-type graph stores one type, its reverse edges included.
  const int R_in = d.typed() ? static_cast<int>(d.edge_types.size()) : 1;
  const bool typed_reverse = d.typed() && o.add_reverse_edges;
  const int R = typed_reverse ? 2 * R_in : R_in;
  EdgeView view(d, o.add_reverse_edges);
  auto type_of = [&](int64_t v) {
    return d.typed() ? d.EdgeTypeOf(view.input_row(v)) + (view.is_reverse(v) ? R_in : 0) : 0;
  };

  // In-edge CSC over (partition, edge type, destination) rows (VirtualRow); positions in it are the
  // new edge IDs.
  timer.Start("build-csc");
  Log(o, StrCat("building the in-edge index of ", view.size(), " edges on ", threads, " thread(s)"));
  for (int64_t i = 0; i < d.num_edges(); ++i) s.self_loops += view.src(i) == view.dst(i);
  std::vector<int64_t> origin;
  core::Csr csc = core::BuildCsr(
      R * n, view.size(),
      [&](int64_t v) -> std::pair<int64_t, int64_t> {
        int64_t u = view.src(v), w = view.dst(v);
        // Held-out pairs (link prediction) are not stored, in either direction.
        if (!split.role.empty() && split.role[view.input_row(v)] != 0) return {-1, 0};
        // A self loop's reverse is itself: store it once; drop all of them on request. (On a typed
        // graph the reverse is an edge of rev_REL, kept as DGL keeps it.)
        if (u == w && (o.remove_self_loops || (view.is_reverse(v) && !typed_reverse))) return {-1, 0};
        return {R == 1 ? ids.new_id[w] : VirtualRow(book, R, ids.new_id[w], type_of(v)), ids.new_id[u]};
      },
      &origin, threads);
  d.edges.DropPages(0, d.edges.nbytes());
  s.duplicates = core::SortRows(&csc, &origin, o.remove_duplicate_edges, threads);
  s.num_edges = csc.num_entries();

  timer.Start("write");
  ASSIGN_OR_RETURN(core::PartitionConfig cfg, MakeConfig(d, o, name, ids, book, csc, R, split));
  cfg.base_dir = staging.path();
  RETURN_IF_ERROR(MakePartFolders(cfg));
  nlohmann::json extra = nlohmann::json::object();
  if (o.edge_split.enabled()) {
    ASSIGN_OR_RETURN(extra["link"], WriteLinkFiles(split, ids.new_id, o, s, staging.path()));
  }
  std::vector<int64_t> out_degree(n, 0);
  for (int64_t u : csc.indices) ++out_degree[u];
  ASSIGN_OR_RETURN(const core::TypeMap node_types, cfg.NodeTypes());
  ASSIGN_OR_RETURN(const core::TypeMap edge_types, cfg.EdgeTypes());
  Relabelled rel{&d,          &view, &cfg, &book, &csc, &origin, &ids.orig_nid, &ids.new_id, &out_degree,
                 o.halo_hops, R,     &node_types, &o.hard_negative_field};
  std::vector<PartStats> stats(K);
  // Task 0 streams every partition's node data; tasks 1..K write one partition's graph each.
  Log(o, StrCat("writing ", K, " partitions on ", threads, " thread(s)"));
  RETURN_IF_ERROR(base::ParallelFor(threads, K + 1, [&](int64_t t) {
    return t == 0 ? WriteNodeData(rel, &stats) : WriteGraphFiles(rel, static_cast<int>(t - 1), &stats[t - 1]);
  }));
  if (d.typed()) s.types_note = TypesNote(node_types, edge_types);
  for (int k = 0; k < K; ++k) {
    s.part_nodes.push_back(book.size(k));
    s.part_edges.push_back(cfg.edge_bounds[k + 1] - cfg.edge_bounds[k]);
    s.part_train.push_back(stats[k].train);
    s.part_halo.push_back(stats[k].halo);
    s.edge_cut += stats[k].cut;
  }
  timer.Start("id-maps");
  RETURN_IF_ERROR(WriteIdMaps(cfg));
  timer.Finish();

  // The config, with what was done and measured, then the atomic rename.
  RETURN_IF_ERROR(WriteConfigFile(cfg, BuildRecord(s, o, "fanout-partition", d.layout, d.typed(), extra.dump()),
                                  (fs::path(staging.path()) / (name + ".json")).string()));
  RETURN_IF_ERROR(staging.Commit());
  s.config_path = (fs::path(staging.dest()) / (name + ".json")).string();
  s.phases = timer.phases();
  s.total_seconds = timer.total_seconds();
  s.peak_rss_bytes = base::PeakRssBytes();
  return s;
}

}  // namespace fanout::partition
