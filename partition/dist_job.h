// The distributed partitioner's job, one per rank (partition/distributed.h): its state and phases.
// Internal to partition/: distributed.cc runs the pipeline and writes, dist_assign.cc assigns
// nodes to partitions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/process_stats.h"
#include "base/staging_dir.h"
#include "base/strings.h"
#include "core/dtype.h"
#include "core/partition_book.h"
#include "core/partition_config.h"
#include "partition/dist_coarsen.h"
#include "partition/mpi_comm.h"
#include "partition/partitioner.h"
#include "partition/slice_input.h"

namespace fanout::partition::dist {

using base::StrCat;
using core::DType;
using core::PartFiles;

constexpr const char* kTool = "fanout-partition";
// Edges (or rows) handled per all-to-all round: bounds the send buffers, whatever the slice.
constexpr int64_t kBatchEdges = int64_t{4} << 20;
constexpr int64_t kBatchBytes = int64_t{32} << 20;

// Rank r's block of [0, n): [n r / P, n (r + 1) / P).
struct Block {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
inline Block BlockOf(int64_t n, int p, int r) { return {n * r / p, n * (r + 1) / p}; }
// Every rank's block start, then n (a DistGraph's vtxdist).
inline std::vector<int64_t> BlockBounds(int64_t n, int p) {
  std::vector<int64_t> b(p + 1);
  for (int r = 0; r <= p; ++r) b[r] = n * r / p;
  return b;
}
inline int BlockOwner(int64_t n, int p, int64_t v) {
  int r = static_cast<int>(static_cast<__int128>(v) * p / std::max<int64_t>(n, 1));
  while (r > 0 && n * r / p > v) --r;
  while (r + 1 < p && n * (r + 1) / p <= v) ++r;
  return r;
}

// One per-node column shipped from block owners to partition owners (node_data/NAME.npy, or
// graph/orig_nids.npy).
struct NodeColumn {
  std::string file;  // relative to the partition folder
  int type = -1;     // typed fields: rows only for nodes of this type (-1: every node)
  DType dtype;
  std::vector<int64_t> row_shape;
  size_t row_bytes;
  // Rows [begin, end) of this rank's block (local indices) into `out`.
  std::function<absl::Status(int64_t, int64_t, char*)> read;
};

// A stored edge as it travels and as the owner keeps it: sorted by (dst, src, origin), a
// partition's edges are its in-edge CSC, and an edge's ID is its position (plus the partition's
// first edge ID). `origin` is the virtual input edge, as the serial tool numbers them.
struct StoredEdge {
  int64_t dst, src, origin;
  bool operator<(const StoredEdge& o) const {
    return dst != o.dst ? dst < o.dst : src != o.src ? src < o.src : origin < o.origin;
  }
};
// An out-edge on its way to its source's owner.
struct OutEdge {
  int64_t src, eid, dst;
  bool operator<(const OutEdge& o) const { return src != o.src ? src < o.src : eid < o.eid; }
};

struct OwnedPart {
  int k = 0;
  int64_t begin = 0, end = 0;     // its edges in the rank's StoredEdge array
  std::vector<int64_t> indptr;    // in-edge offsets over its nodes
  int64_t cut = 0, halo = 0, train = 0;
};

class Job {
 public:
  Job(const MpiComm& comm, const SliceInput& in, const PartitionOptions& o)
      : comm_(comm), in_(in), o_(o), P_(comm.size()), r_(comm.rank()), K_(o.num_parts) {}

  absl::StatusOr<PartitionSummary> Run();

 private:
  void Log(const std::string& msg) const {
    if (r_ == 0 && !o_.quiet) std::fprintf(stderr, "%s: %s\n", kTool, msg.c_str());
  }
  void Phase(const std::string& name);
  absl::StatusOr<std::string> ClaimOutput(std::optional<base::StagingDir>* staging);
  absl::Status MakePartFolders();
  void GatherSummary();
  absl::Status Commit(base::StagingDir& staging, const std::string& name, int64_t num_classes);
  absl::Status ReadEdges();
  absl::Status ReadSplit();
  absl::Status CheckFeatureDtype() const;
  absl::Status Assign();
  absl::Status AssignWithScotch();
  DistGraph SymmetricBlock();
  absl::Status Relabel();
  void RelabelEndpoints();
  void ShuffleEdges();
  absl::Status WriteInEdges();
  absl::Status ShuffleOutEdges();
  absl::Status WriteEdgeData();
  absl::Status WriteNodeData();
  std::vector<NodeColumn> NodeColumns();
  int OwnerOfPart(int k) const { return k % P_; }
  std::string PartPath(int k, const std::string& rel) const { return cfg_.PartPath(k, rel); }

  const MpiComm& comm_;
  const SliceInput& in_;
  const PartitionOptions& o_;
  const int P_, r_, K_;
  base::PhaseTimer timer_;
  int64_t N_ = 0, E_ = 0;
  Block nb_, eb_;  // this rank's node block and input edge slice
  std::vector<int64_t> edges_;  // the slice as (src, dst) pairs: input IDs, then new IDs
  std::vector<std::vector<uint8_t>> masks_;  // train / valid / test over the node block
  std::vector<int32_t> part_;     // block node -> partition
  std::vector<int64_t> new_id_;   // block node -> new ID
  std::vector<int64_t> bounds_;   // K + 1 node bounds
  std::vector<int64_t> offset_;   // [P][K]: first new ID of rank p's nodes in partition k
  std::optional<core::RangePartitionBook> book_;
  std::vector<StoredEdge> stored_;  // the stored edges of this rank's partitions, sorted
  std::vector<OwnedPart> owned_;
  std::vector<int64_t> edge_bounds_;
  std::vector<int64_t> phase_peaks_;  // this rank's peak RSS at the end of each phase
  // Typed graphs (1, 1, 1 on the one-type graph): node types, input relations, stored edge types
  // (relations, then rev_REL with reverse edges). The in-edge CSC's rows are (partition, edge
  // type, node), as the serial tool's VirtualRow: a partition's edges of a type are one ID range.
  int T_ = 1, R_in_ = 1, R_ = 1;
  bool typed_reverse_ = false;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> type_ranges_;  // [T][K] new-ID ranges
  std::vector<int64_t> type_offset_;  // [P][K][T]: first new ID of rank p's type-t nodes in partition k
  std::vector<int> mask_types_;       // types with split masks (-1: every node)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> edge_type_ranges_;  // [R][K] edge-ID ranges
  int64_t VirtualRow(int64_t w, int r) const {
    const int k = book_->PartOf(w);
    return R_ * book_->start(k) + r * book_->size(k) + (w - book_->start(k));
  }
  bool in_phase_ = false;
  core::PartitionConfig cfg_;
  PartitionSummary s_;
  int64_t max_label_ = -1;
};

}  // namespace fanout::partition::dist
