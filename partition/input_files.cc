#include "partition/input_files.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "base/progress.h"
#include "core/shape.h"

namespace fanout::partition {

namespace fs = std::filesystem;
using base::LineReader;
using base::StrCat;
using core::DType;
using core::NpyArray;

bool IsIntegerDType(DType t) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16 || t == DType::kUInt8;
}

int64_t IntAt(const char* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kInt16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    default: return static_cast<uint8_t>(p[i]);
  }
}

bool IsBlankOrComment(std::string_view line) {
  line = base::StripSpaces(line);
  return line.empty() || line[0] == '#';
}

absl::Status LineError(const base::LineReader& r, const std::string& what) {
  return absl::InvalidArgumentError(StrCat(r.Where(), ": ", what));
}

size_t ReserveFor(const std::string& path, int64_t rows, int64_t per_row) {
  int64_t want;
  if (rows <= 0 || !core::CheckedMul(rows, per_row, &want)) return 0;
  std::error_code ec;
  uintmax_t file_bytes = fs::file_size(path, ec);
  if (ec) return 0;
  uintmax_t could_hold = file_bytes / 2 * 1032 + 1032;
  return static_cast<size_t>(std::min<uintmax_t>(static_cast<uintmax_t>(want), could_hold));
}

absl::StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path, int64_t limit,
                                                   const std::string& limit_name) {
  std::vector<int64_t> out;
  RETURN_IF_ERROR(ForEachRecord(path, [&](const LineReader& r, std::string_view line,
                                          const std::vector<std::string_view>& fields) {
    int64_t v;
    if (fields.size() != 1 || !base::ParseInt64(fields[0], &v)) {
      return LineError(r, StrCat("expected one integer, got '", line.substr(0, 80), "'"));
    }
    if (limit > 0 && (v < 0 || v >= limit)) {
      return LineError(r, StrCat("value ", v, " is outside [0, ", limit, ") (", limit_name, ")"));
    }
    out.push_back(v);
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<NpyArray> ReadEdgesText(const std::string& path, int64_t num_nodes, int64_t expected,
                                       int64_t* max_id_line) {
  return ReadEdgesText(path, EndLimits{.src = num_nodes, .dst = num_nodes}, expected, max_id_line);
}

absl::StatusOr<NpyArray> ReadEdgesText(const std::string& path, const EndLimits& limits, int64_t expected,
                                       int64_t* max_id_line) {
  int64_t max_id = -1;
  std::vector<int64_t> e;
  e.reserve(ReserveFor(path, expected, 2));
  base::Progress progress("fanout-partition", StrCat("reading ", path), -1);
  RETURN_IF_ERROR(ForEachRecord(path, [&](const LineReader& r, std::string_view line,
                                          const std::vector<std::string_view>& fields) {
    int64_t s, d;
    if (fields.size() < 2 || !base::ParseInt64(fields[0], &s) || !base::ParseInt64(fields[1], &d)) {
      return LineError(r, StrCat("expected 'src,dst' node IDs, got '", line.substr(0, 80), "'"));
    }
    // Extra columns (a weight, a timestamp, a shifted file) were silently dropped (issue 11).
    if (fields.size() > 2) {
      return LineError(
          r, StrCat("expected 'src,dst' node IDs, got ", fields.size(), " columns in '",
                    line.substr(0, 80), "' (edge features go in edge_feat.npy or edge_data/)"));
    }
    for (auto [id, limit, name] : {std::tuple{s, limits.src, &limits.src_name}, {d, limits.dst, &limits.dst_name}}) {
      if (id < 0 || (limit > 0 && id >= limit)) {
        return LineError(r, StrCat("node ID ", id, " is outside [0, ", limit, ") (", *name, ")"));
      }
    }
    if (max_id_line != nullptr && std::max(s, d) > max_id) {
      max_id = std::max(s, d);
      *max_id_line = r.line_number();
    }
    e.push_back(s);
    e.push_back(d);
    progress.Update(static_cast<int64_t>(e.size() / 2));
    return absl::OkStatus();
  }));
  int64_t n = static_cast<int64_t>(e.size() / 2);
  if (expected >= 0 && n != expected) {
    return absl::InvalidArgumentError(
        StrCat(path, ": has ", n, " edges but num-edge-list.csv.gz says ", expected,
               n < expected ? " (file truncated?)" : ""));
  }
  return NpyArray::Adopt(std::move(e), {n, 2});
}

absl::StatusOr<NpyArray> MapAsInt64(const std::string& path) {
  ASSIGN_OR_RETURN(NpyArray a, NpyArray::Map(path));
  if (a.dtype() == DType::kInt64) return a;
  if (!IsIntegerDType(a.dtype())) {
    return absl::InvalidArgumentError(StrCat(path, ": expected an integer array, found ", core::DTypeName(a.dtype())));
  }
  std::vector<int64_t> v(a.num_elements());
  const char* p = static_cast<const char*>(a.data());
  for (size_t i = 0; i < v.size(); ++i) v[i] = IntAt(p, a.dtype(), static_cast<int64_t>(i));
  return NpyArray::Adopt(std::move(v), a.shape());
}

absl::StatusOr<bool> EdgeColumns(const std::string& path, const std::vector<int64_t>& shape, const std::string& layout) {
  const bool is_2d = shape.size() == 2;
  if (layout == "columns") {
    if (!is_2d || shape[0] != 2) {
      return absl::InvalidArgumentError(StrCat(path, ": --edge-layout columns expects a [2, E] array (PyG's edge_index)"));
    }
    return true;
  }
  if (layout == "rows") {
    if (!is_2d || shape[1] != 2) {
      return absl::InvalidArgumentError(StrCat(path, ": --edge-layout rows expects an [E, 2] array of (src, dst)"));
    }
    return false;
  }
  if (layout != "auto") {
    return absl::InvalidArgumentError(StrCat("--edge-layout: '", layout, "' is not one of auto, rows, columns"));
  }
  if (is_2d && shape[1] == 2) return false;  // [E, 2], and [2, 2] too (give --edge-layout columns for PyG's 2 edges)
  if (is_2d && shape[0] == 2) return true;
  return absl::InvalidArgumentError(
      StrCat(path, ": expected an [E, 2] array of (src, dst) or PyG's [2, E] edge_index; the shape is [",
             base::StrJoin(shape, ", "), "]"));
}

absl::Status OrientEdges(const std::string& path, const std::string& layout, NpyArray* edges) {
  ASSIGN_OR_RETURN(const bool columns, EdgeColumns(path, edges->shape(), layout));
  if (!columns) return absl::OkStatus();
  const int64_t e = edges->shape()[1];
  const int64_t* in = edges->data_as<int64_t>();
  std::vector<int64_t> out(static_cast<size_t>(2 * e));
  for (int64_t i = 0; i < e; ++i) {
    out[2 * i] = in[i];
    out[2 * i + 1] = in[e + i];
  }
  *edges = NpyArray::Adopt(std::move(out), {e, 2});
  return absl::OkStatus();
}

absl::StatusOr<NpyArray> ReadNodePairs(const std::string& path, int64_t num_nodes) {
  const std::string ext = fs::path(path).extension().string();
  if (ext != ".npy") return ReadEdgesText(path, num_nodes, -1);
  ASSIGN_OR_RETURN(NpyArray a, MapAsInt64(path));
  RETURN_IF_ERROR(OrientEdges(path, "auto", &a));
  const int64_t* p = a.data_as<int64_t>();
  for (int64_t i = 0; i < 2 * a.rows(); ++i) {
    if (p[i] < 0 || p[i] >= num_nodes) {
      return absl::InvalidArgumentError(StrCat(path, " row ", i / 2, ": node ID ", p[i], " is outside [0, ", num_nodes,
                                               ") (the graph's nodes)"));
    }
  }
  return a;
}

absl::StatusOr<NpyArray> ReadNodeMatrix(const std::string& path, int64_t num_nodes) {
  ASSIGN_OR_RETURN(NpyArray a, MapAsInt64(path));
  if (a.shape().size() != 2) {
    return absl::InvalidArgumentError(StrCat(path, ": expected a 2-D integer array of node IDs, the shape is [",
                                             base::StrJoin(a.shape(), ", "), "]"));
  }
  const int64_t* p = a.data_as<int64_t>();
  const int64_t cols = a.shape()[1];
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (p[i] < 0 || p[i] >= num_nodes) {
      return absl::InvalidArgumentError(StrCat(path, " row ", i / std::max<int64_t>(cols, 1), ": node ID ", p[i],
                                               " is outside [0, ", num_nodes, ") (the graph's nodes)"));
    }
  }
  return a;
}

absl::StatusOr<std::vector<int32_t>> ReadAssignment(const std::string& path, int64_t num_nodes,
                                                    int num_parts) {
  // ReadIntColumn checks nothing for a limit <= 0, so no partition count would accept anything.
  if (num_parts < 1) {
    return absl::InvalidArgumentError(StrCat(path, ": --num-parts must be at least 1, got ", num_parts));
  }
  std::vector<int64_t> raw;
  if (fs::path(path).extension() == ".npy") {
    ASSIGN_OR_RETURN(NpyArray a, MapAsInt64(path));
    if (a.shape().size() != 1) {
      return absl::InvalidArgumentError(StrCat(path, ": expected a 1-D array of partition IDs"));
    }
    raw.assign(a.data_as<int64_t>(), a.data_as<int64_t>() + a.rows());
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] < 0 || raw[i] >= num_parts) {
        return absl::InvalidArgumentError(StrCat(path, " row ", i, ": partition ", raw[i],
                                                 " is outside [0, ", num_parts, ") (--num-parts)"));
      }
    }
  } else {
    ASSIGN_OR_RETURN(raw, ReadIntColumn(path, num_parts, "--num-parts"));
  }
  if (static_cast<int64_t>(raw.size()) != num_nodes) {
    return absl::InvalidArgumentError(StrCat(path, ": has ", raw.size(),
                                             " entries but the graph has ", num_nodes, " nodes"));
  }
  return std::vector<int32_t>(raw.begin(), raw.end());
}

}  // namespace fanout::partition
