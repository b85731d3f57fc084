#include "partition/distributed.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "base/parallel.h"
#include "base/process_stats.h"
#include "base/staging_dir.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/npy.h"
#include "core/partition_book.h"
#include "core/partition_config.h"
#include "partition/dist_coarsen.h"
#include "partition/dist_job.h"
#include "partition/id_maps.h"
#include "partition/mpi_comm.h"
#include "partition/slice_input.h"

namespace fanout::partition::dist {
namespace {

namespace fs = std::filesystem;

// A .npy of known shape written at row positions, in any order, by one process (pwrite).
class RowFile {
 public:
  static absl::StatusOr<std::unique_ptr<RowFile>> Create(const std::string& path, DType dtype,
                                                         std::vector<int64_t> shape) {
    auto f = std::unique_ptr<RowFile>(new RowFile);
    f->path_ = path;
    const std::string header = core::EncodeNpyHeader(dtype, shape);
    int64_t elems = 1;
    for (size_t i = 1; i < shape.size(); ++i) elems *= shape[i];
    f->row_bytes_ = static_cast<size_t>(elems) * core::DTypeSize(dtype);
    f->header_ = header.size();
    f->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd_ < 0) return absl::InternalError(StrCat("cannot create ", path, ": ", std::strerror(errno)));
    RETURN_IF_ERROR(f->WriteAt(0, header.data(), header.size()));
    if (::ftruncate(f->fd_, static_cast<off_t>(f->header_ + f->row_bytes_ * shape[0])) != 0) {
      return absl::InternalError(StrCat("cannot size ", path, ": ", std::strerror(errno)));
    }
    return f;
  }
  ~RowFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t row_bytes() const { return row_bytes_; }
  absl::Status WriteRows(int64_t row, const char* data, int64_t rows) {
    return WriteAt(header_ + row * row_bytes_, data, rows * row_bytes_);
  }
  absl::Status Close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return absl::InternalError(StrCat("cannot write ", path_, ": ", std::strerror(errno)));
    return absl::OkStatus();
  }

 private:
  RowFile() = default;
  absl::Status WriteAt(size_t at, const char* data, size_t bytes) {
    while (bytes > 0) {
      const ssize_t n = ::pwrite(fd_, data, bytes, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::InternalError(StrCat("cannot write ", path_, ": ", std::strerror(errno)));
      data += n, at += n, bytes -= n;
    }
    return absl::OkStatus();
  }
  std::string path_;
  int fd_ = -1;
  size_t header_ = 0, row_bytes_ = 0;
};

// Writes one int64 member of each of `count` structs as a 1-D .npy of `dtype` (int64, or int32
// when every value fits: the partition's ID width), 1M values at a time.
template <typename Out, typename T>
absl::Status WriteMemberAs(const std::string& path, DType dtype, const T* rows, int64_t count, int64_t T::*member) {
  ASSIGN_OR_RETURN(auto w, core::NpyWriter::Open(path, dtype, {count}));
  std::vector<Out> buf;
  buf.reserve(1 << 20);
  for (int64_t i = 0; i < count; ++i) {
    buf.push_back(static_cast<Out>(rows[i].*member));
    if (buf.size() == buf.capacity()) {
      RETURN_IF_ERROR(w->Append(buf.data(), buf.size() * sizeof(Out)));
      buf.clear();
    }
  }
  RETURN_IF_ERROR(w->Append(buf.data(), buf.size() * sizeof(Out)));
  return w->Close();
}

template <typename T>
absl::Status WriteMember(const std::string& path, const T* rows, int64_t count, int64_t T::*member,
                         DType dtype = DType::kInt64) {
  return dtype == DType::kInt32 ? WriteMemberAs<int32_t>(path, dtype, rows, count, member)
                                : WriteMemberAs<int64_t>(path, dtype, rows, count, member);
}

}  // namespace

void Job::Phase(const std::string& name) {
  if (in_phase_) phase_peaks_.push_back(base::PeakRssBytes());  // the end of the one before
  in_phase_ = true;
  timer_.Start(name);
  // Tests end one rank mid-job (FANOUT_TEST_KILL_RANK=R:PHASE) to check the others stop too.
  if (const char* kill = std::getenv("FANOUT_TEST_KILL_RANK"); kill != nullptr && *kill != '\0') {
    if (StrCat(r_, ":", name) == kill) ::raise(SIGKILL);
  }
}

absl::Status Job::ReadEdges() {
  E_ = in_.num_edges;
  eb_ = BlockOf(E_, P_, r_);
  absl::StatusOr<std::vector<int64_t>> e = ReadEdgeSlice(in_, eb_.begin, eb_.end);
  int64_t hi = -1;
  if (e.ok()) {
    edges_ = std::move(*e);
    for (int64_t x : edges_) hi = std::max(hi, x);
  }
  RETURN_IF_ERROR(comm_.Agree(e.status()));
  N_ = in_.num_nodes;
  std::string n_source = in_.num_nodes_source;
  if (N_ < 0) {
    N_ = comm_.MaxInt64(hi) + 1;
    n_source = StrCat("the largest node ID in ", in_.edges_source);
  }
  // A node count whose per-node arrays cannot fit this rank's share of its machine is almost
  // always IDs that are not 0..N-1; say so before anything is allocated or claimed.
  RETURN_IF_ERROR(comm_.Agree(CheckNodeCountFits(N_, n_source, base::UsableMemoryBytes() / comm_.local_size(), P_)));
  absl::Status ids;
  for (int64_t i = 0; i < eb_.size() && ids.ok(); ++i) {
    for (int side = 0; side < 2; ++side) {
      const int64_t v = edges_[2 * i + side];
      if (v < 0 || v >= N_) {
        ids = absl::InvalidArgumentError(StrCat(in_.edges_source, " edge ", eb_.begin + i, ": node ID ", v,
                                                " is outside [0, ", N_, ") (from ", n_source, ")"));
        break;
      }
    }
  }
  RETURN_IF_ERROR(comm_.Agree(ids));
  if (N_ < P_) {
    return absl::InvalidArgumentError(StrCat("--distributed on ", P_, " ranks needs at least ", P_, " nodes; the graph has ", N_));
  }
  RETURN_IF_ERROR(ValidatePartitionOptions(o_, N_));
  nb_ = BlockOf(N_, P_, r_);
  int64_t self_loops = 0;
  for (int64_t i = 0; i < eb_.size(); ++i) self_loops += edges_[2 * i] == edges_[2 * i + 1];
  s_.self_loops = comm_.SumInt64(self_loops);
  for (const SliceField& f : in_.edge_fields) {
    if (!f.edge_type.empty()) {
      return absl::UnimplementedError(StrCat(f.data.paths().front(), ": edge fields of a typed graph (edge_data/",
                                             "SRC___REL___DST/) are not available with --distributed yet; partition "
                                             "it without --distributed"));
    }
  }
  T_ = in_.typed() ? static_cast<int>(in_.node_types.size()) : 1;
  R_in_ = in_.typed() ? static_cast<int>(in_.edge_types.size()) : 1;
  typed_reverse_ = in_.typed() && o_.add_reverse_edges;
  R_ = typed_reverse_ ? 2 * R_in_ : R_in_;
  s_.input_edges = E_;
  s_.num_nodes = N_;
  return absl::OkStatus();
}

// Each rank reads a slice of every split file and sends each node ID to its block's owner.
absl::Status Job::ReadSplit() {
  if (!in_.has_split) return absl::OkStatus();
  masks_.assign(3, std::vector<uint8_t>(nb_.size(), 0));
  // The node types that get masks: every node (-1) on the one-type graph; on a typed graph, each
  // type with a split file (the serial tool: each type with a node in the split).
  std::vector<int64_t> has(T_, 0);
  for (int i = 0; i < 3; ++i) {
    for (const SplitFile& file : in_.split_files[i]) {
      std::vector<std::vector<int64_t>> send(P_);
      absl::Status st = [&]() -> absl::Status {
        ASSIGN_OR_RETURN(ChunkedArray a, ChunkedArray::Open({file.path}));
        if (!a.row_shape().empty()) return absl::InvalidArgumentError(StrCat(a.first_path(), ": expected a 1-D index array"));
        const Block b = BlockOf(a.rows(), P_, r_);
        ASSIGN_OR_RETURN(std::vector<int64_t> ids, a.ReadInts(b.begin, b.end));
        const int64_t first = file.type < 0 ? 0 : in_.node_type_offsets[file.type];
        const int64_t count = file.type < 0 ? N_ : in_.node_type_offsets[file.type + 1] - first;
        for (int64_t j = 0; j < b.size(); ++j) {
          if (ids[j] < 0 || ids[j] >= count) {
            return absl::InvalidArgumentError(StrCat(a.Where(b.begin + j), ": index ", ids[j], " is outside [0, ", count,
                                                     file.type < 0 ? ") (num_nodes)" : StrCat(") (the ", in_.node_types[file.type], " nodes)")));
          }
          send[BlockOwner(N_, P_, first + ids[j])].push_back(first + ids[j]);
        }
        if (file.type >= 0 && b.size() > 0) has[file.type] = 1;
        return absl::OkStatus();
      }();
      RETURN_IF_ERROR(comm_.Agree(st));
      for (const std::vector<int64_t>& got : comm_.AllToAll(send)) {
        for (int64_t v : got) masks_[i][v - nb_.begin] = 1;
      }
    }
  }
  has = comm_.AllSum(has);
  mask_types_.clear();
  if (!in_.typed()) mask_types_.push_back(-1);
  for (int t = 0; in_.typed() && t < T_; ++t) {
    if (has[t] > 0) mask_types_.push_back(t);
  }
  return absl::OkStatus();
}

// New IDs: partition k owns [bounds[k], bounds[k+1]); inside it, input order (rank 0's block
// first), as the serial tool numbers them.
absl::Status Job::Relabel() {
  std::vector<int64_t> count(K_, 0);
  for (int32_t k : part_) ++count[k];
  const std::vector<int64_t> all = comm_.AllGather(count);  // [P][K]
  bounds_.assign(K_ + 1, 0);
  offset_.assign(static_cast<size_t>(P_) * K_, 0);
  for (int k = 0; k < K_; ++k) {
    int64_t at = 0;
    for (int p = 0; p < P_; ++p) {
      offset_[p * K_ + k] = at;  // relative for now
      at += all[p * K_ + k];
    }
    bounds_[k + 1] = bounds_[k] + at;
  }
  for (int p = 0; p < P_; ++p) {
    for (int k = 0; k < K_; ++k) offset_[p * K_ + k] += bounds_[k];
  }
  ASSIGN_OR_RETURN(core::RangePartitionBook book, core::RangePartitionBook::FromBounds(bounds_));
  book_.emplace(std::move(book));
  new_id_.resize(nb_.size());
  std::vector<int64_t> next(offset_.begin() + r_ * K_, offset_.begin() + (r_ + 1) * K_);
  for (int64_t i = 0; i < nb_.size(); ++i) new_id_[i] = next[part_[i]]++;
  // Node types: inside a partition new IDs follow input order, which is type-major, so each type
  // is one range per partition; and rank p's nodes of type t in partition k start at
  // type_offset_[p][k][t] (blocks are input-ordered, so ranks before p hold no later type).
  std::vector<int64_t> tcount(static_cast<size_t>(K_) * T_, 0);
  for (int64_t i = 0; i < nb_.size(); ++i) ++tcount[part_[i] * T_ + in_.NodeTypeOf(nb_.begin + i)];
  const std::vector<int64_t> tall = comm_.AllGather(tcount);  // [P][K][T]
  type_ranges_.assign(T_, std::vector<std::pair<int64_t, int64_t>>(K_));
  type_offset_.assign(static_cast<size_t>(P_) * K_ * T_, 0);
  for (int k = 0; k < K_; ++k) {
    int64_t at = bounds_[k];
    for (int t = 0; t < T_; ++t) {
      const int64_t start = at;
      for (int p = 0; p < P_; ++p) {
        type_offset_[(static_cast<size_t>(p) * K_ + k) * T_ + t] = at;
        at += tall[(static_cast<size_t>(p) * K_ + k) * T_ + t];
      }
      type_ranges_[t][k] = {start, at};
    }
  }
  for (int k = 0; k < K_; ++k) {
    if (OwnerOfPart(k) == r_) owned_.push_back(OwnedPart{.k = k});
  }
  return absl::OkStatus();
}

// The slice's endpoints, from input to new IDs: each distinct endpoint (found through a hash map,
// not a sort of the whole slice) is asked of its block's owner once.
void Job::RelabelEndpoints() {
  absl::flat_hash_map<int64_t, int64_t> new_of;
  std::vector<int64_t> ids;
  for (int64_t v : edges_) {
    if (new_of.try_emplace(v, -1).second) ids.push_back(v);
  }
  std::sort(ids.begin(), ids.end());
  const std::vector<int64_t> answers =
      AskOwners(comm_, BlockBounds(N_, P_), ids, [this](int64_t local) { return new_id_[local]; });
  for (size_t j = 0; j < ids.size(); ++j) new_of[ids[j]] = answers[j];
  for (int64_t& v : edges_) v = new_of.at(v);
}

// Every stored edge goes to the rank owning its destination's partition: the input edges, then
// (with reverse edges) their reverses, numbered as the serial tool. The owner sorts them; that
// array is its partitions' in-edge CSC, with no second copy.
void Job::ShuffleEdges() {
  // Slice row i's stored edges, as the serial tool stores them: the edge, and its reverse with
  // reverse edges; a self loop once (on a typed graph its rev_REL copy too), none with
  // --self-loops remove. The destination is its CSC row (VirtualRow).
  auto each_stored = [&](int64_t i, auto&& emit) {
    const int64_t u = edges_[2 * i], w = edges_[2 * i + 1];
    const bool self = u == w;
    if (self && o_.remove_self_loops) return;
    const int r = in_.EdgeTypeOf(eb_.begin + i);
    emit(w, StoredEdge{VirtualRow(w, r), u, eb_.begin + i});
    if (o_.add_reverse_edges && (!self || typed_reverse_)) {
      emit(u, StoredEdge{VirtualRow(u, r + (typed_reverse_ ? R_in_ : 0)), w, E_ + eb_.begin + i});
    }
  };
  // What arrives is counted first, so that the array is allocated once at its size (growing it
  // by doubling would cost up to twice the memory at the moment it moves).
  {
    std::vector<int64_t> count(P_, 0);
    for (int64_t i = 0; i < eb_.size(); ++i) {
      each_stored(i, [&](int64_t dst, const StoredEdge&) { ++count[OwnerOfPart(book_->PartOf(dst))]; });
    }
    stored_.reserve(comm_.IncomingTotal(count));
  }
  const int64_t rounds = comm_.MaxInt64((eb_.size() + kBatchEdges - 1) / kBatchEdges);
  for (int64_t round = 0; round < rounds; ++round) {
    std::vector<std::vector<StoredEdge>> send(P_);
    const int64_t lo = std::min(eb_.size(), round * kBatchEdges), hi = std::min(eb_.size(), lo + kBatchEdges);
    for (int64_t i = lo; i < hi; ++i) {
      each_stored(i, [&](int64_t dst, const StoredEdge& e) { send[OwnerOfPart(book_->PartOf(dst))].push_back(e); });
    }
    for (std::vector<StoredEdge>& got : comm_.AllToAll(send)) {
      stored_.insert(stored_.end(), got.begin(), got.end());
      got = {};
    }
  }
  edges_ = {};
  edges_.shrink_to_fit();
  // Sorted by (dst, src, origin): the serial tool's order (core::SortRows). Repeats of (dst, src)
  // are counted, and dropped on request keeping the smallest origin.
  std::sort(stored_.begin(), stored_.end());
  int64_t duplicates = 0;
  for (size_t i = 1; i < stored_.size(); ++i) {
    duplicates += stored_[i].dst == stored_[i - 1].dst && stored_[i].src == stored_[i - 1].src;
  }
  if (o_.remove_duplicate_edges && duplicates > 0) {
    stored_.erase(std::unique(stored_.begin(), stored_.end(),
                              [](const StoredEdge& a, const StoredEdge& b) { return a.dst == b.dst && a.src == b.src; }),
                  stored_.end());
  }
  s_.duplicates = comm_.SumInt64(duplicates);
  std::vector<int64_t> per_part(K_, 0);
  for (OwnedPart& op : owned_) {
    // Partition k's rows: [R start, R end), a run of size(k) rows per stored edge type.
    const int64_t first = R_ * book_->start(op.k), rows = R_ * book_->size(op.k);
    op.begin = std::lower_bound(stored_.begin(), stored_.end(), StoredEdge{first, INT64_MIN, INT64_MIN}) - stored_.begin();
    op.end = std::lower_bound(stored_.begin(), stored_.end(), StoredEdge{first + rows, INT64_MIN, INT64_MIN}) - stored_.begin();
    op.indptr.assign(rows + 1, 0);
    for (int64_t p = op.begin; p < op.end; ++p) ++op.indptr[stored_[p].dst - first + 1];
    for (int64_t v = 0; v < rows; ++v) op.indptr[v + 1] += op.indptr[v];
    per_part[op.k] = op.end - op.begin;
  }
  per_part = comm_.AllSum(per_part);
  edge_bounds_.assign(K_ + 1, 0);
  for (int k = 0; k < K_; ++k) edge_bounds_[k + 1] = edge_bounds_[k] + per_part[k];
  s_.num_edges = edge_bounds_[K_];
  if (in_.typed()) {
    std::vector<int64_t> ranges(2 * static_cast<size_t>(R_) * K_, 0);  // [R][K] (begin, end)
    for (const OwnedPart& op : owned_) {
      const int64_t n = book_->size(op.k);
      for (int r = 0; r < R_; ++r) {
        ranges[2 * (r * K_ + op.k)] = edge_bounds_[op.k] + op.indptr[r * n];
        ranges[2 * (r * K_ + op.k) + 1] = edge_bounds_[op.k] + op.indptr[(r + 1) * n];
      }
    }
    ranges = comm_.AllSum(ranges);
    edge_type_ranges_.assign(R_, {});
    for (int r = 0; r < R_; ++r) {
      for (int k = 0; k < K_; ++k) edge_type_ranges_[r].push_back({ranges[2 * (r * K_ + k)], ranges[2 * (r * K_ + k) + 1]});
    }
  }
}

absl::Status Job::WriteInEdges() {
  RETURN_IF_ERROR(ChooseIdDTypes(o_, N_, s_.num_edges, &cfg_));
  for (OwnedPart& op : owned_) {
    const int64_t nb = book_->start(op.k), ne = book_->end(op.k), m = op.end - op.begin;
    const StoredEdge* e = stored_.data() + op.begin;
    RETURN_IF_ERROR(core::WriteIdArray(PartPath(op.k, PartFiles::kIndptr), cfg_.edge_id_dtype, op.indptr.data(),
                                       static_cast<int64_t>(op.indptr.size())));
    op.indptr = {};
    RETURN_IF_ERROR(WriteMember(PartPath(op.k, PartFiles::kIndices), e, m, &StoredEdge::src, cfg_.node_id_dtype));
    if (!in_.typed()) {
      RETURN_IF_ERROR(WriteMember(PartPath(op.k, PartFiles::kOrigEids), e, m, &StoredEdge::origin));
    } else {
      // Typed graphs keep an edge's row among its relation's input edges (rev_REL: the REL row).
      std::vector<int64_t> oe(m);
      for (int64_t p = 0; p < m; ++p) {
        const int64_t row = e[p].origin < E_ ? e[p].origin : e[p].origin - E_;
        oe[p] = row - in_.edge_type_offsets[in_.EdgeTypeOf(row)];
      }
      RETURN_IF_ERROR(core::WriteNpy(PartPath(op.k, PartFiles::kOrigEids), oe));
    }
    std::vector<int64_t> halo;
    for (int64_t p = 0; p < m; ++p) {
      if (e[p].src < nb || e[p].src >= ne) halo.push_back(e[p].src);
    }
    op.cut = static_cast<int64_t>(halo.size());
    std::sort(halo.begin(), halo.end());
    halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
    op.halo = static_cast<int64_t>(halo.size());
    if (o_.halo_hops == 0) halo.clear();
    RETURN_IF_ERROR(core::WriteNpy(PartPath(op.k, PartFiles::kHaloNids), halo));
  }
  return absl::OkStatus();
}

// Out-edges of each partition's nodes, wherever they are stored: every stored edge goes, as
// (src, edge ID, dst), to the rank owning its source's partition, which sorts them by (src, edge
// ID). The stored edges are let go once sent.
absl::Status Job::ShuffleOutEdges() {
  const int64_t local = static_cast<int64_t>(stored_.size());
  const int64_t rounds = comm_.MaxInt64((local + kBatchEdges - 1) / kBatchEdges);
  std::vector<OutEdge> got_all;
  {
    std::vector<int64_t> count(P_, 0);
    for (const StoredEdge& e : stored_) ++count[OwnerOfPart(book_->PartOf(e.src))];
    got_all.reserve(comm_.IncomingTotal(count));
  }
  for (int64_t round = 0; round < rounds; ++round) {
    std::vector<std::vector<OutEdge>> send(P_);
    const int64_t lo = std::min(local, round * kBatchEdges), hi = std::min(local, lo + kBatchEdges);
    for (const OwnedPart& op : owned_) {
      for (int64_t p = std::max(lo, op.begin); p < std::min(hi, op.end); ++p) {
        const StoredEdge& e = stored_[p];
        // The CSC row back to its destination: rows run size(k) per edge type.
        const int64_t n = book_->size(op.k), start = book_->start(op.k);
        const int64_t dst = start + (e.dst - R_ * start) % n;
        send[OwnerOfPart(book_->PartOf(e.src))].push_back({e.src, edge_bounds_[op.k] + (p - op.begin), dst});
      }
    }
    for (std::vector<OutEdge>& got : comm_.AllToAll(send)) {
      got_all.insert(got_all.end(), got.begin(), got.end());
      got = {};
    }
  }
  stored_ = {};
  stored_.shrink_to_fit();
  std::sort(got_all.begin(), got_all.end());
  for (const OwnedPart& op : owned_) {
    const int64_t start = book_->start(op.k), n = book_->size(op.k);
    const int64_t b = std::lower_bound(got_all.begin(), got_all.end(), OutEdge{start, INT64_MIN, 0}) - got_all.begin();
    const int64_t e = std::lower_bound(got_all.begin(), got_all.end(), OutEdge{start + n, INT64_MIN, 0}) - got_all.begin();
    std::vector<int64_t> ptr(n + 1, 0);
    for (int64_t i = b; i < e; ++i) ++ptr[got_all[i].src - start + 1];
    for (int64_t v = 0; v < n; ++v) ptr[v + 1] += ptr[v];
    RETURN_IF_ERROR(core::WriteIdArray(PartPath(op.k, PartFiles::kOutIndptr), cfg_.edge_id_dtype, ptr.data(),
                                       static_cast<int64_t>(ptr.size())));
    RETURN_IF_ERROR(WriteMember(PartPath(op.k, PartFiles::kOutIndices), got_all.data() + b, e - b, &OutEdge::dst, cfg_.node_id_dtype));
    RETURN_IF_ERROR(WriteMember(PartPath(op.k, PartFiles::kOutEids), got_all.data() + b, e - b, &OutEdge::eid, cfg_.edge_id_dtype));
  }
  return absl::OkStatus();
}

// Edge data: a stored edge's row is its input row (a reverse edge shares its input's), asked of
// the rank whose slice holds that row. Rounds of kBatchEdges edges of one partition each.
absl::Status Job::WriteEdgeData() {
  if (in_.edge_fields.empty()) return absl::OkStatus();
  size_t row_bytes = 0;
  for (const SliceField& f : in_.edge_fields) row_bytes += f.data.row_bytes();
  const int64_t batch = std::max<int64_t>(1, std::min<int64_t>(kBatchEdges, kBatchBytes / std::max<size_t>(row_bytes, 1)));
  std::vector<std::pair<size_t, int64_t>> batches;  // (owned index, first edge)
  std::vector<std::vector<std::unique_ptr<RowFile>>> files(owned_.size());
  absl::Status created;
  for (size_t i = 0; i < owned_.size(); ++i) {
    const int64_t m = owned_[i].end - owned_[i].begin;
    for (int64_t p = 0; p < m; p += batch) batches.push_back({i, p});
    for (const SliceField& f : in_.edge_fields) {
      std::vector<int64_t> shape{m};
      shape.insert(shape.end(), f.data.row_shape().begin(), f.data.row_shape().end());
      absl::StatusOr<std::unique_ptr<RowFile>> rf =
          RowFile::Create(PartPath(owned_[i].k, PartFiles::EdgeData(f.name)), f.data.dtype(), shape);
      if (rf.ok()) files[i].push_back(std::move(*rf));
      if (created.ok()) created = rf.status();
    }
  }
  // No rank may enter the rounds' collectives while another has given up.
  RETURN_IF_ERROR(comm_.Agree(created));
  const int64_t rounds = comm_.MaxInt64(static_cast<int64_t>(batches.size()));
  for (int64_t round = 0; round < rounds; ++round) {
    std::vector<std::vector<int64_t>> ask(P_);
    std::vector<std::vector<int64_t>> where(P_);  // positions in the batch, per owner asked
    int64_t lo = 0, hi = 0;
    size_t oi = 0;
    if (round < static_cast<int64_t>(batches.size())) {
      oi = batches[round].first;
      lo = batches[round].second;
      hi = std::min<int64_t>(lo + batch, owned_[oi].end - owned_[oi].begin);
      for (int64_t p = lo; p < hi; ++p) {
        const int64_t v = stored_[owned_[oi].begin + p].origin;
        const int64_t input_row = v < E_ ? v : v - E_;
        const int owner = BlockOwner(E_, P_, input_row);
        ask[owner].push_back(input_row);
        where[owner].push_back(p - lo);
      }
    }
    std::vector<std::vector<int64_t>> asked = comm_.AllToAll(ask);
    std::vector<std::vector<char>> reply(P_);
    for (int p = 0; p < P_; ++p) {
      reply[p].resize(asked[p].size() * row_bytes);
      for (size_t j = 0; j < asked[p].size(); ++j) {
        size_t at = j * row_bytes;
        for (const SliceField& f : in_.edge_fields) {
          std::memcpy(reply[p].data() + at, f.data.Row(asked[p][j]), f.data.row_bytes());
          at += f.data.row_bytes();
        }
      }
    }
    asked = {};
    std::vector<std::vector<char>> rows = comm_.AllToAll(reply);
    reply = {};
    if (hi > lo) {
      size_t field_at = 0;
      for (size_t fi = 0; fi < in_.edge_fields.size(); ++fi) {
        const size_t rb = in_.edge_fields[fi].data.row_bytes();
        std::vector<char> out((hi - lo) * rb);
        for (int p = 0; p < P_; ++p) {
          for (size_t j = 0; j < where[p].size(); ++j) {
            std::memcpy(out.data() + where[p][j] * rb, rows[p].data() + j * row_bytes + field_at, rb);
          }
        }
        RETURN_IF_ERROR(files[oi][fi]->WriteRows(lo, out.data(), hi - lo));
        field_at += rb;
      }
    }
  }
  for (const SliceField& f : in_.edge_fields) f.data.DropAll();
  for (auto& fs_of_part : files) {
    for (auto& f : fs_of_part) RETURN_IF_ERROR(f->Close());
  }
  return absl::OkStatus();
}

std::vector<NodeColumn> Job::NodeColumns() {
  std::vector<NodeColumn> cols;
  // Original IDs: the input ID, or on a typed graph the ID among the node's type.
  cols.push_back({PartFiles::kOrigNids, -1, DType::kInt64, {}, 8, [this](int64_t b, int64_t e, char* out) {
                    for (int64_t i = b; i < e; ++i) {
                      const int64_t v = nb_.begin + i;
                      const int64_t id = in_.typed() ? v - in_.node_type_offsets[in_.NodeTypeOf(v)] : v;
                      std::memcpy(out + (i - b) * 8, &id, 8);
                    }
                    return absl::OkStatus();
                  }});
  for (const SliceField& f : in_.node_fields) {
    const ChunkedArray* a = &f.data;
    const int t = f.node_type.empty() ? -1 : in_.NodeTypeIndex(f.node_type);
    const int64_t base = t < 0 ? 0 : in_.node_type_offsets[t];  // the field's row of input node v is v - base
    const std::string file = PartFiles::NodeData(core::FieldSchema{.name = f.name, .node_type = f.node_type}.key());
    if (f.name == "label" && a->dtype() != DType::kInt64) {
      // Labels are stored as int64, whatever integer type the input has (as the serial tool).
      cols.push_back({file, t, DType::kInt64, a->row_shape(), 8 * a->row_bytes() / core::DTypeSize(a->dtype()),
                      [this, a, base](int64_t b, int64_t e, char* out) -> absl::Status {
                        ASSIGN_OR_RETURN(std::vector<int64_t> v, a->ReadInts(nb_.begin + b - base, nb_.begin + e - base));
                        for (int64_t x : v) max_label_ = std::max(max_label_, x);
                        std::memcpy(out, v.data(), v.size() * 8);
                        return absl::OkStatus();
                      }});
      continue;
    }
    if (f.name == "feat" && o_.feature_storage.has_value()) {  // --feature-dtype (CheckFeatureDtype)
      const core::FeatureStorage to = *o_.feature_storage;
      const int64_t dim = static_cast<int64_t>(a->row_bytes() / core::DTypeSize(a->dtype()));
      cols.push_back({file, t, to.dtype, {to.stored_elems(dim)}, to.stored_elems(dim) * core::DTypeSize(to.dtype),
                      [this, a, to, dim, base](int64_t b, int64_t e, char* out) -> absl::Status {
                        std::vector<char> raw((e - b) * a->row_bytes());
                        a->CopyRows(nb_.begin + b - base, nb_.begin + e - base, raw.data());
                        const int64_t bad = core::EncodeRows(to, a->dtype(), raw.data(), e - b, dim, out);
                        if (bad < 0) return absl::OkStatus();
                        return absl::InvalidArgumentError(StrCat("--feature-dtype int8: ", a->Where(nb_.begin + b - base + bad),
                                                                 " of node field 'feat' holds a NaN or infinity (int8 "
                                                                 "rows span their finite minimum to maximum)"));
                      }});
      continue;
    }
    const bool label = f.name == "label";
    cols.push_back({file, t, a->dtype(), a->row_shape(), a->row_bytes(),
                    [this, a, label, base](int64_t b, int64_t e, char* out) {
                      a->CopyRows(nb_.begin + b - base, nb_.begin + e - base, out);
                      if (label) {
                        for (int64_t i = 0; i < (e - b) * static_cast<int64_t>(a->row_bytes() / 8); ++i) {
                          int64_t x;
                          std::memcpy(&x, out + 8 * i, 8);
                          max_label_ = std::max(max_label_, x);
                        }
                      }
                      return absl::OkStatus();
                    }});
  }
  if (in_.has_split) {
    const char* names[3] = {"train_mask", "val_mask", "test_mask"};
    for (int t : mask_types_) {
      for (int i = 0; i < 3; ++i) {
        const std::string key = core::FieldSchema{.name = names[i], .node_type = t < 0 ? "" : in_.node_types[t]}.key();
        cols.push_back({PartFiles::NodeData(key), t, DType::kUInt8, {}, 1, [this, i](int64_t b, int64_t e, char* out) {
                          std::memcpy(out, masks_[i].data() + b, e - b);
                          return absl::OkStatus();
                        }});
      }
    }
  }
  return cols;
}

// Node rows (original IDs, fields, split masks) move from block owners to partition owners in
// rounds of at most kBatchBytes. A message is records of (partition, column, count, rows); a row's
// place is known without sending IDs: rank p's rows of partition k are, in input order, the new
// IDs from offset[p][k] on (of a typed column's type t: from type_offset[p][k][t] on).
absl::Status Job::WriteNodeData() {
  std::vector<NodeColumn> cols = NodeColumns();
  const int C = static_cast<int>(cols.size());
  size_t row_bytes = 0;
  for (const NodeColumn& c : cols) row_bytes += c.row_bytes;
  // Column c has rows for the block's nodes [tb[c], te[c]) (block-local): its type's, or all.
  std::vector<int64_t> tb(C, 0), te(C, nb_.size());
  for (int c = 0; c < C; ++c) {
    if (cols[c].type < 0) continue;
    tb[c] = std::clamp<int64_t>(in_.node_type_offsets[cols[c].type] - nb_.begin, 0, nb_.size());
    te[c] = std::clamp<int64_t>(in_.node_type_offsets[cols[c].type + 1] - nb_.begin, 0, nb_.size());
  }
  auto rows_of = [&](int c, int k) {  // where column c's rows of partition k begin, and how many
    return cols[c].type < 0 ? std::pair{bounds_[k], bounds_[k + 1] - bounds_[k]}
                            : std::pair{type_ranges_[cols[c].type][k].first,
                                        type_ranges_[cols[c].type][k].second - type_ranges_[cols[c].type][k].first};
  };
  std::vector<std::vector<std::unique_ptr<RowFile>>> files(owned_.size());
  absl::Status created;
  for (size_t i = 0; i < owned_.size(); ++i) {
    for (int c = 0; c < C; ++c) {
      std::vector<int64_t> shape{rows_of(c, owned_[i].k).second};
      shape.insert(shape.end(), cols[c].row_shape.begin(), cols[c].row_shape.end());
      absl::StatusOr<std::unique_ptr<RowFile>> rf = RowFile::Create(PartPath(owned_[i].k, cols[c].file), cols[c].dtype, shape);
      if (rf.ok()) files[i].push_back(std::move(*rf));
      if (created.ok()) created = rf.status();
    }
  }
  RETURN_IF_ERROR(comm_.Agree(created));
  std::vector<int> owned_index(K_, -1);
  for (size_t i = 0; i < owned_.size(); ++i) owned_index[owned_[i].k] = static_cast<int>(i);
  const int64_t batch = std::max<int64_t>(1, kBatchBytes / std::max<size_t>(row_bytes, 1));
  const int64_t rounds = comm_.MaxInt64((nb_.size() + batch - 1) / batch);
  std::vector<int64_t> cursor(static_cast<size_t>(P_) * K_ * C);  // next row of (source rank, partition, column)
  for (int p = 0; p < P_; ++p) {
    for (int k = 0; k < K_; ++k) {
      for (int c = 0; c < C; ++c) {
        const int t = cols[c].type;
        const int64_t first = t < 0 ? offset_[p * K_ + k] : type_offset_[(static_cast<size_t>(p) * K_ + k) * T_ + t];
        cursor[(static_cast<size_t>(p) * K_ + k) * C + c] = first - rows_of(c, k).first;
      }
    }
  }
  absl::Status st;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t lo = std::min(nb_.size(), round * batch), hi = std::min(nb_.size(), lo + batch);
    std::vector<std::vector<char>> send(P_);
    for (int c = 0; c < C && st.ok(); ++c) {
      const int64_t b = std::max(lo, tb[c]), e = std::min(hi, te[c]);
      if (b >= e) continue;
      const size_t rb = cols[c].row_bytes;
      std::vector<char> data((e - b) * rb);
      st = cols[c].read(b, e, data.data());
      if (!st.ok()) break;
      // The column's rows grouped by partition, in input order.
      std::vector<int64_t> first(K_ + 1, 0);
      for (int64_t i = b; i < e; ++i) ++first[part_[i] + 1];
      for (int k = 0; k < K_; ++k) first[k + 1] += first[k];
      std::vector<int64_t> order(e - b);
      {
        std::vector<int64_t> at(first.begin(), first.end() - 1);
        for (int64_t i = b; i < e; ++i) order[at[part_[i]]++] = i - b;
      }
      for (int k = 0; k < K_; ++k) {
        if (first[k + 1] == first[k]) continue;
        std::vector<char>& out = send[OwnerOfPart(k)];
        const int64_t head[3] = {k, c, first[k + 1] - first[k]};
        out.insert(out.end(), reinterpret_cast<const char*>(head), reinterpret_cast<const char*>(head + 3));
        for (int64_t j = first[k]; j < first[k + 1]; ++j) {
          const char* r = data.data() + order[j] * rb;
          out.insert(out.end(), r, r + rb);
        }
      }
    }
    // A read error stops every rank at this round (fields are checked for shape at open; this
    // is an I/O or type failure).
    RETURN_IF_ERROR(comm_.Agree(st));
    std::vector<std::vector<char>> got = comm_.AllToAll(send);
    send = {};
    for (int p = 0; p < P_ && st.ok(); ++p) {
      const char* at = got[p].data();
      const char* end = at + got[p].size();
      while (at < end && st.ok()) {
        int64_t head[3];
        std::memcpy(head, at, sizeof(head));
        at += sizeof(head);
        const int k = static_cast<int>(head[0]), c = static_cast<int>(head[1]);
        const int64_t rows = head[2];
        const int oi = owned_index[k];
        int64_t& row = cursor[(static_cast<size_t>(p) * K_ + k) * C + c];
        st = files[oi][c]->WriteRows(row, at, rows);
        if (cols[c].file.find("/train_mask") != std::string::npos) owned_[oi].train += std::count(at, at + rows, 1);
        at += rows * cols[c].row_bytes;
        row += rows;
      }
    }
    RETURN_IF_ERROR(comm_.Agree(st));
  }
  for (auto& of_part : files) {
    for (auto& f : of_part) RETURN_IF_ERROR(f->Close());
  }
  return absl::OkStatus();
}

// Rank 0 claims the output folder; every rank must see the staging folder (--out on a shared
// filesystem), and writes its own partitions into it. Returns its path.
absl::StatusOr<std::string> Job::ClaimOutput(std::optional<base::StagingDir>* staging) {
  absl::Status claimed;
  if (r_ == 0) {
    base::StagingOptions so{.tool = kTool, .overwrite = o_.overwrite, .inputs = in_.inputs};
    so.inputs.push_back(o_.assignment_file);
    absl::StatusOr<base::StagingDir> sd = base::StagingDir::Create(o_.out_dir, so);
    if (sd.ok()) staging->emplace(std::move(*sd));
    claimed = sd.status();
  }
  RETURN_IF_ERROR(comm_.Agree(claimed));
  const std::string tmp = comm_.Broadcast(r_ == 0 ? (*staging)->path() : "", 0);
  std::error_code ec;
  RETURN_IF_ERROR(comm_.Agree(fs::is_directory(tmp, ec) ? absl::OkStatus()
                                                        : absl::FailedPreconditionError(StrCat(
                                                              "cannot see the staging folder ", tmp,
                                                              ": --out must be on a filesystem every rank shares"))));
  return tmp;
}

// The folders of this rank's partitions.
absl::Status Job::MakePartFolders() {
  absl::Status dirs;
  std::vector<std::string> subdirs = {"graph", "node_data", "edge_data"};
  for (const std::string& t : in_.node_types) subdirs.push_back("node_data/" + t);
  for (const OwnedPart& op : owned_) {
    for (const std::string& sub : subdirs) {
      std::error_code ec;
      fs::create_directories(PartPath(op.k, sub), ec);
      if (ec && dirs.ok()) dirs = absl::InternalError(StrCat("cannot create ", PartPath(op.k, sub), ": ", ec.message()));
    }
  }
  return comm_.Agree(dirs);
}

// Every rank's figures into the summary: per partition, typed graphs' type counts, peaks.
void Job::GatherSummary() {
  std::vector<int64_t> stats(3 * K_, 0);  // train, halo, cut per partition
  for (const OwnedPart& op : owned_) {
    stats[op.k] = op.train;
    stats[K_ + op.k] = op.halo;
    stats[2 * K_ + op.k] = op.cut;
  }
  stats = comm_.AllSum(stats);
  for (int k = 0; k < K_; ++k) {
    s_.part_nodes.push_back(bounds_[k + 1] - bounds_[k]);
    s_.part_edges.push_back(edge_bounds_[k + 1] - edge_bounds_[k]);
    s_.part_train.push_back(stats[k]);
    s_.part_halo.push_back(stats[K_ + k]);
    s_.edge_cut += stats[2 * K_ + k];
  }
  if (in_.typed()) {
    // Node and stored edge types with their counts, as the serial tool's summary lists them.
    std::vector<std::string> nt, et;
    for (int t = 0; t < T_; ++t) nt.push_back(StrCat(in_.node_types[t], " ", in_.TypeCount(t)));
    for (int r = 0; r < R_; ++r) {
      const core::CanonicalEdgeType e = r < R_in_ ? in_.edge_types[r] : ReverseRelation(in_.edge_types[r - R_in_]);
      int64_t count = 0;
      for (const auto& [b, e2] : edge_type_ranges_[r]) count += e2 - b;
      et.push_back(StrCat(e.ToString(), " ", count));
    }
    s_.types_note = StrCat("node types:       ", base::StrJoin(nt, ", "), "\n", "edge types:       ", base::StrJoin(et, ", "), "\n");
  }
  s_.rank_peak_rss_bytes = comm_.AllGather({base::PeakRssBytes()});
  // The phase in which the largest rank reached its peak (its peak after each phase, gathered).
  const std::vector<int64_t> all = comm_.AllGather(phase_peaks_);
  const size_t phases = phase_peaks_.size();
  const int worst = static_cast<int>(std::max_element(s_.rank_peak_rss_bytes.begin(), s_.rank_peak_rss_bytes.end()) -
                                     s_.rank_peak_rss_bytes.begin());
  const std::vector<base::PhaseTimer::Phase>& names = timer_.phases();
  for (size_t i = 0; i < phases && i < names.size(); ++i) {
    if (all[worst * phases + i] == s_.rank_peak_rss_bytes[worst]) {
      s_.peak_phase = names[i].name;
      break;
    }
  }
}

// --feature-dtype: node field 'feat' exists, holds numbers and has one-dimensional rows (every
// rank sees the same input, so every rank decides alike).
absl::Status Job::CheckFeatureDtype() const {
  if (!o_.feature_storage.has_value()) return absl::OkStatus();
  bool found = false;
  for (const SliceField& f : in_.node_fields) {
    if (f.name != "feat") continue;
    found = true;
    if (f.data.row_shape().size() != 1 || f.data.dtype() == DType::kBool) {
      return absl::InvalidArgumentError(StrCat("--feature-dtype: ", f.data.first_path(), ": node field 'feat' is ",
                                               core::DTypeName(f.data.dtype()), " with rows of shape [",
                                               base::StrJoin(f.data.row_shape(), ", "),
                                               "]; features to compress are numbers, one row of values per node"));
    }
  }
  if (!found) return absl::InvalidArgumentError("--feature-dtype: the input has no node field 'feat'");
  return absl::OkStatus();
}

// Rank 0 writes the config into the staging folder and renames it into place.
absl::Status Job::Commit(base::StagingDir& staging, const std::string& name, int64_t num_classes) {
  cfg_.num_edges = s_.num_edges;
  cfg_.edge_bounds = edge_bounds_;
  cfg_.num_classes = num_classes;
  ConfigSchema schema{.types = &in_,
                      .reverse_types = typed_reverse_,
                      .node_type_ranges = type_ranges_,
                      .edge_type_ranges = edge_type_ranges_,
                      .mask_types = in_.has_split ? mask_types_ : std::vector<int>{}};
  for (const SliceField& f : in_.node_fields) {
    if (f.name == "feat" && o_.feature_storage.has_value()) {  // as NodeColumns wrote it
      const core::FeatureStorage to = *o_.feature_storage;
      const int64_t dim = static_cast<int64_t>(f.data.row_bytes() / core::DTypeSize(f.data.dtype()));
      schema.node_fields.push_back({f.name, to.dtype, {to.stored_elems(dim)}, f.node_type, to.codec});
      continue;
    }
    // Labels are written as int64 (WriteNodeData), as the serial tool reads them.
    schema.node_fields.push_back({f.name, f.name == "label" ? DType::kInt64 : f.data.dtype(), f.data.row_shape(), f.node_type});
  }
  for (const SliceField& f : in_.edge_fields) schema.edge_fields.push_back({f.name, f.data.dtype(), f.data.row_shape()});
  SetConfigSchema(std::move(schema), &cfg_);
  // The whole graph's ID maps (id_maps.h): the staging folder is shared, so rank 0 sees every
  // partition's orig_*.npy; the maps are written through file mappings, not held in memory.
  RETURN_IF_ERROR(WriteIdMaps(cfg_));
  RETURN_IF_ERROR(WriteConfigFile(cfg_,
                                  BuildRecord(s_, o_, "fanout-partition --distributed", in_.layout, in_.typed(),
                                              StrCat("{\"ranks\": ", P_, "}")),
                                  (fs::path(staging.path()) / (name + ".json")).string()));
  RETURN_IF_ERROR(staging.Commit());
  s_.config_path = (fs::path(staging.dest()) / (name + ".json")).string();
  return absl::OkStatus();
}

absl::StatusOr<PartitionSummary> Job::Run() {
  Phase("read");
  Log(StrCat("distributed on ", P_, " rank", P_ == 1 ? "" : "s", ", reading ", in_.layout, " input: ", in_.num_edges,
             " edges (", (in_.num_edges + P_ - 1) / P_, " per rank)"));
  RETURN_IF_ERROR(CheckFeatureDtype());
  RETURN_IF_ERROR(ReadEdges());
  RETURN_IF_ERROR(ReadSplit());
  const std::string name = o_.graph_name.empty() ? in_.name : o_.graph_name;
  std::optional<base::StagingDir> staging;
  ASSIGN_OR_RETURN(const std::string tmp, ClaimOutput(&staging));

  Phase("assign");
  Log(StrCat("assigning ", N_, " nodes to ", K_, " partitions"));
  RETURN_IF_ERROR(Assign());
  Phase("relabel");
  RETURN_IF_ERROR(Relabel());
  RelabelEndpoints();
  SetConfigHeader(name, N_, bounds_, o_, &cfg_);
  cfg_.base_dir = tmp;
  RETURN_IF_ERROR(MakePartFolders());
  Phase("shuffle-edges");
  Log(StrCat("moving edges to their partitions' ranks (", K_, " partitions on ", P_, " ranks)"));
  ShuffleEdges();
  Phase("write-graph");
  RETURN_IF_ERROR(comm_.Agree(WriteInEdges()));
  Phase("edge-data");
  RETURN_IF_ERROR(comm_.Agree(WriteEdgeData()));
  Phase("out-edges");
  RETURN_IF_ERROR(comm_.Agree(ShuffleOutEdges()));
  Phase("node-data");
  Log("moving node data to their partitions' ranks");
  RETURN_IF_ERROR(comm_.Agree(WriteNodeData()));
  timer_.Finish();
  phase_peaks_.push_back(base::PeakRssBytes());

  const int64_t num_classes = comm_.MaxInt64(max_label_) + 1;
  GatherSummary();
  RETURN_IF_ERROR(comm_.Agree(r_ == 0 ? Commit(*staging, name, num_classes) : absl::OkStatus()));
  s_.phases = timer_.phases();
  s_.total_seconds = timer_.total_seconds();
  s_.peak_rss_bytes = base::PeakRssBytes();
  return s_;
}

}  // namespace fanout::partition::dist

namespace fanout::partition {
namespace {

using base::StrCat;

// What --distributed does not do (yet): refused up front, by name, rather than ignored.
absl::Status CheckSupported(const PartitionOptions& o) {
  if (o.edge_split.enabled()) {
    return absl::InvalidArgumentError("--edge-split / --edge-split-files: not available with --distributed yet");
  }
  if (o.balance_edges) return absl::InvalidArgumentError("--balance-edges: not available with --distributed (PT-Scotch balances one load)");
  if (o.objective_volume) return absl::InvalidArgumentError("--objtype vol: not available with --distributed (PT-Scotch minimises the cut)");
  return absl::OkStatus();
}

// The input, as every rank reads it: a layout SliceInput opens with edges that can be read in
// slices; OGB's csv.gz and plain text edges are for the serial tool.
absl::StatusOr<SliceInput> OpenForRanks(const ReadOptions& read) {
  absl::StatusOr<SliceInput> in = OpenSliceInput(read);
  if (in.ok() && in->sliceable()) return in;
  if (!in.ok() && !absl::IsNotFound(in.status())) return in.status();
  if (!in.ok() && !std::filesystem::is_directory(read.input_dir)) return in.status();
  return absl::InvalidArgumentError(StrCat(
      "--input ", read.input_dir, ": --distributed reads the plain .npy layout (edges.npy), the typed .npy "
      "layout (num_nodes.json) or DGL's chunked format (metadata.json); for OGB's csv.gz and text edges use "
      "fanout-partition without --distributed, or convert (docs/partitioning.md)"));
}

}  // namespace

int RunDistributedPartition(const ReadOptions& read, const PartitionOptions& options, int* argc, char*** argv) {
  if (absl::Status s = MpiComm::Init(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", dist::kTool, std::string(s.message()).c_str());
    return 1;
  }
  int status = 0;
  {
    MpiComm comm;
    const bool root = comm.rank() == 0;
    PartitionOptions o = options;
    if (!root) o.quiet = true;
    // PT-Scotch's threads: the machine's cores shared by the ranks on it, unless given.
    const int threads = o.num_threads > 0 ? o.num_threads : std::max(1, base::DefaultThreads() / comm.local_size());
    if (std::getenv("SCOTCH_PTHREAD_NUMBER") == nullptr) {
      ::setenv("SCOTCH_PTHREAD_NUMBER", std::to_string(threads).c_str(), 1);
    }
    absl::Status pre = CheckSupported(o);
    absl::StatusOr<SliceInput> in = pre.ok() ? OpenForRanks(read) : absl::StatusOr<SliceInput>(pre);
    absl::Status agreed = comm.Agree(in.status());
    absl::StatusOr<PartitionSummary> summary = agreed.ok() ? dist::Job(comm, *in, o).Run()
                                                           : absl::StatusOr<PartitionSummary>(agreed);
    if (!summary.ok()) {
      if (root) std::fprintf(stderr, "%s: error: %s\n", dist::kTool, std::string(summary.status().message()).c_str());
      status = 1;
    } else if (root && !options.quiet) {
      std::printf("%s", summary->ToString().c_str());
      std::fflush(stdout);
    }
  }
  MpiComm::Finalize();
  return status;
}

}  // namespace fanout::partition
