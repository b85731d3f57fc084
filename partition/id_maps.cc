#include "partition/id_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/status.h"
#include "base/strings.h"
#include "core/npy.h"
#include "nlohmann/json.hpp"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using core::DType;
using core::PartFiles;

// An int64 .npy file of `n` elements written through a shared file mapping: the pages belong to
// the page cache, not to this process, so a map of the whole graph costs no heap.
class MappedOut {
 public:
  static absl::StatusOr<MappedOut> Create(const std::string& path, int64_t n) {
    MappedOut out;
    out.path_ = path;
    const std::string header = core::EncodeNpyHeader(DType::kInt64, {n});
    out.size_ = header.size() + static_cast<size_t>(n) * sizeof(int64_t);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return absl::InternalError(StrCat("cannot create ", path, ": ", std::strerror(errno)));
    const bool sized = ::ftruncate(fd, static_cast<off_t>(out.size_)) == 0 &&
                       ::pwrite(fd, header.data(), header.size(), 0) == static_cast<ssize_t>(header.size());
    void* base = sized ? ::mmap(nullptr, out.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    const int err = errno;
    ::close(fd);
    if (base == MAP_FAILED) return absl::InternalError(StrCat("cannot write ", path, ": ", std::strerror(err)));
    out.base_ = static_cast<char*>(base);
    out.data_ = reinterpret_cast<int64_t*>(out.base_ + header.size());
    return out;
  }
  MappedOut() = default;
  MappedOut(MappedOut&& o) noexcept { *this = std::move(o); }
  MappedOut& operator=(MappedOut&& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(base_, o.base_);
    std::swap(size_, o.size_);
    std::swap(data_, o.data_);
    return *this;
  }
  ~MappedOut() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  int64_t* data() { return data_; }
  // Flushes the pages to the file; errors name it.
  absl::Status Close() {
    const bool ok = ::msync(base_, size_, MS_SYNC) == 0;
    const int err = errno;
    ::munmap(base_, size_);
    base_ = nullptr;
    return ok ? absl::OkStatus() : absl::InternalError(StrCat("cannot write ", path_, ": ", std::strerror(err)));
  }

 private:
  std::string path_;
  char* base_ = nullptr;
  size_t size_ = 0;
  int64_t* data_ = nullptr;
};

// Partition k's graph/orig_{nids,eids}.npy, checked to be int64 with `rows` entries.
absl::StatusOr<core::NpyArray> MapOrig(const core::PartitionConfig& cfg, int k, const char* file, int64_t rows) {
  const std::string path = cfg.PartPath(k, file);
  ASSIGN_OR_RETURN(core::NpyArray a, core::NpyArray::Map(path));
  if (a.dtype() != DType::kInt64 || a.shape().size() != 1 || a.rows() != rows) {
    return absl::FailedPreconditionError(StrCat(path, ": expected int64 [", rows, "] (the config's range of partition ",
                                                k, "), found ", core::DTypeName(a.dtype()), " with ", a.rows(),
                                                " rows"));
  }
  return a;
}

// One kind of ID (nodes or edges): the forward map is the partitions' orig arrays one after
// another; the inverse is indexed by offset[type] + input ID, each type's run `span[type]` long.
struct Kind {
  const char* what;       // "node" / "edge"
  const char* part_file;  // PartFiles::kOrigNids / kOrigEids
  const std::vector<int64_t>* bounds;
  core::TypeMap types;
  bool holes;  // inverse entries no stored ID has are -1 (edges); nodes map one to one
};

// span[t]: for nodes the type's count; for edges one past the largest input ID of the type.
absl::StatusOr<std::vector<int64_t>> Spans(const core::PartitionConfig& cfg, const Kind& kind) {
  const int T = kind.types.num_types();
  std::vector<int64_t> span(T, 0);
  if (!kind.holes) {
    for (int t = 0; t < T; ++t) span[t] = kind.types.count(t);
    return span;
  }
  for (int k = 0; k < cfg.num_parts; ++k) {
    ASSIGN_OR_RETURN(const core::NpyArray a, MapOrig(cfg, k, kind.part_file, (*kind.bounds)[k + 1] - (*kind.bounds)[k]));
    const int64_t* orig = a.data_as<int64_t>();
    for (int t = 0; t < T; ++t) {
      const auto [b, e] = kind.types.Range(t, k);
      for (int64_t v = b; v < e; ++v) span[t] = std::max(span[t], orig[v - (*kind.bounds)[k]] + 1);
    }
  }
  return span;
}

// Writes orig_<x>ids.npy and new_<x>ids.npy into `dir`; returns the type offsets.
absl::StatusOr<std::vector<int64_t>> WriteKind(const core::PartitionConfig& cfg, const Kind& kind,
                                               const std::string& dir, const char* forward, const char* inverse) {
  const std::vector<int64_t>& bounds = *kind.bounds;
  ASSIGN_OR_RETURN(const std::vector<int64_t> span, Spans(cfg, kind));
  std::vector<int64_t> offset(span.size() + 1, 0);
  for (size_t t = 0; t < span.size(); ++t) offset[t + 1] = offset[t] + span[t];
  ASSIGN_OR_RETURN(MappedOut fwd, MappedOut::Create((fs::path(dir) / forward).string(), bounds.back()));
  ASSIGN_OR_RETURN(MappedOut inv, MappedOut::Create((fs::path(dir) / inverse).string(), offset.back()));
  std::fill_n(inv.data(), offset.back(), int64_t{-1});
  for (int k = 0; k < cfg.num_parts; ++k) {
    const std::string path = cfg.PartPath(k, kind.part_file);
    ASSIGN_OR_RETURN(const core::NpyArray a, MapOrig(cfg, k, kind.part_file, bounds[k + 1] - bounds[k]));
    const int64_t* orig = a.data_as<int64_t>();
    std::copy_n(orig, bounds[k + 1] - bounds[k], fwd.data() + bounds[k]);
    for (int t = 0; t < kind.types.num_types(); ++t) {
      const auto [b, e] = kind.types.Range(t, k);
      for (int64_t v = b; v < e; ++v) {
        const int64_t o = orig[v - bounds[k]];
        if (o < 0 || o >= span[t]) {
          return absl::FailedPreconditionError(StrCat(path, ": row ", v - bounds[k], " (", kind.what, " ", v,
                                                      ", type ", kind.types.name(t), ") holds input ID ", o,
                                                      ", outside [0, ", span[t], ")"));
        }
        int64_t& slot = inv.data()[offset[t] + o];
        if (slot != -1) {
          return absl::FailedPreconditionError(StrCat(path, ": input ", kind.what, " ", o, " of type ",
                                                      kind.types.name(t), " is stored twice (", kind.what, "s ", slot,
                                                      " and ", v, ")"));
        }
        slot = v;
      }
    }
    a.DropPages(0, a.nbytes());
  }
  if (!kind.holes) {
    // Every input node is some partition's: a gap means the partitions disagree with the config.
    const int64_t* gap = std::find(inv.data(), inv.data() + offset.back(), int64_t{-1});
    if (gap != inv.data() + offset.back()) {
      return absl::FailedPreconditionError(StrCat(cfg.base_dir, ": no partition holds input ", kind.what, " ",
                                                  gap - inv.data(), " (the partitions' orig_nids.npy do not cover ",
                                                  "the config's node count)"));
    }
  }
  RETURN_IF_ERROR(fwd.Close());
  RETURN_IF_ERROR(inv.Close());
  offset.pop_back();
  return offset;
}

absl::Status WriteIdMapsInto(const core::PartitionConfig& cfg, const std::string& dir) {
  ASSIGN_OR_RETURN(core::TypeMap node_types, cfg.NodeTypes());
  ASSIGN_OR_RETURN(core::TypeMap edge_types, cfg.EdgeTypes());
  ASSIGN_OR_RETURN(const std::vector<int64_t> node_offsets,
                   WriteKind(cfg, Kind{"node", PartFiles::kOrigNids, &cfg.node_bounds, node_types, false}, dir,
                             "orig_nids.npy", "new_nids.npy"));
  ASSIGN_OR_RETURN(const std::vector<int64_t> edge_offsets,
                   WriteKind(cfg, Kind{"edge", PartFiles::kOrigEids, &cfg.edge_bounds, edge_types, true}, dir,
                             "orig_eids.npy", "new_eids.npy"));
  nlohmann::json meta = {
      {"format_version", 1},
      {"graph_name", cfg.graph_name},
      {"num_parts", cfg.num_parts},
      {"num_nodes", cfg.num_nodes},
      {"num_edges", cfg.num_edges},
      {"node_types", node_types.names()},
      {"node_type_offsets", node_offsets},
      {"edge_types", edge_types.names()},
      {"edge_type_offsets", edge_offsets},
      {"orig_nids", "fanout node ID -> input node ID (type-wise on a typed graph)"},
      {"new_nids", "node_type_offsets[t] + input node ID of type t -> fanout node ID"},
      {"orig_eids", "fanout edge ID -> input edge (as each partition's graph/orig_eids.npy)"},
      {"new_eids", "edge_type_offsets[r] + input edge of stored type r -> fanout edge ID, -1: not stored"},
  };
  const std::string path = (fs::path(dir) / kIdMapsMeta).string();
  std::ofstream out(path);
  out << meta.dump(1) << "\n";
  out.close();
  if (!out) return absl::InternalError(StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteIdMaps(const core::PartitionConfig& cfg) {
  const std::string dir = (fs::path(cfg.base_dir) / kIdMapsDir).string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(StrCat("cannot create ", dir, ": ", ec.message()));
  return WriteIdMapsInto(cfg, dir);
}

absl::Status WriteIdMapsFor(const std::string& config_path) {
  ASSIGN_OR_RETURN(const core::PartitionConfig cfg, core::LoadPartitionConfig(config_path));
  const fs::path dest = fs::path(cfg.base_dir) / kIdMapsDir;
  std::error_code ec;
  if (fs::exists(dest, ec)) {
    return absl::AlreadyExistsError(StrCat(dest.string(), " exists already (delete it to write the maps again)"));
  }
  const fs::path tmp = fs::path(cfg.base_dir) / StrCat(".", kIdMapsDir, ".tmp-", ::getpid());
  fs::create_directories(tmp, ec);
  if (ec) return absl::InternalError(StrCat("cannot create ", tmp.string(), ": ", ec.message()));
  absl::Status s = WriteIdMapsInto(cfg, tmp.string());
  if (s.ok()) {
    fs::rename(tmp, dest, ec);
    if (ec) s = absl::InternalError(StrCat("cannot rename ", tmp.string(), " to ", dest.string(), ": ", ec.message()));
  }
  if (!s.ok()) fs::remove_all(tmp, ec);  // our own temporary folder, never the user's
  return s;
}

}  // namespace fanout::partition
