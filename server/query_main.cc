// fanout-query: asks a graph server one question and prints the answer as JSON.
//
//   fanout-query --server 127.0.0.1:30050 metadata
//   fanout-query --server 127.0.0.1:30050 sample --seeds 1,2,3 --fanout 5
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "base/cli.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/feature_codec.h"
#include "rpc/graph_client.h"

namespace {

using namespace fanout;
using nlohmann::json;

constexpr char kAbout[] =
    "Asks a fanout graph server one question and prints the answer as JSON on stdout.\n"
    "Commands: metadata | stats | pull | pull-edges | push | degrees | find-edges | sample\n"
    "ID lists: comma-separated, with a:b for the range [a, b), e.g. --ids 0:4,17\n\n";

template <typename T>
json Values(const std::string& data, int64_t n) {
  json a = json::array();
  const T* p = reinterpret_cast<const T*>(data.data());
  for (int64_t i = 0; i < n; ++i) a.push_back(p[i]);
  return a;
}

// Rows as nested JSON arrays (one per row).
absl::StatusOr<json> RowsJson(const rpc::Rows& r) {
  int64_t n = 1;
  for (int64_t d : r.shape) n *= d;
  json flat;
  switch (r.dtype) {
    case core::DType::kBool:
    case core::DType::kUInt8: flat = Values<uint8_t>(r.data, n); break;
    case core::DType::kInt8: flat = Values<int8_t>(r.data, n); break;
    case core::DType::kInt16: flat = Values<int16_t>(r.data, n); break;
    case core::DType::kInt32: flat = Values<int32_t>(r.data, n); break;
    case core::DType::kInt64: flat = Values<int64_t>(r.data, n); break;
    case core::DType::kFloat32: flat = Values<float>(r.data, n); break;
    case core::DType::kFloat64: flat = Values<double>(r.data, n); break;
    case core::DType::kFloat16: {  // printed as the float each value is
      std::vector<float> v(static_cast<size_t>(n));
      core::ConvertElements(r.dtype, r.data.data(), v.size(), v.data());
      flat = json(v);
      break;
    }
  }
  int64_t rows = r.shape.empty() ? 1 : r.shape[0];
  int64_t per = rows == 0 ? 0 : n / rows;
  json out = json::array();
  for (int64_t i = 0; i < rows; ++i) {
    if (r.shape.size() <= 1) {
      out.push_back(flat[i]);
    } else {
      out.push_back(json(flat.begin() + i * per, flat.begin() + (i + 1) * per));
    }
  }
  return out;
}

absl::StatusOr<json> ProtoJson(const google::protobuf::Message& m) {
  std::string text;
  google::protobuf::util::JsonPrintOptions o;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  auto st = google::protobuf::util::MessageToJsonString(m, &text, o);
  if (!st.ok()) return absl::InternalError(st.ToString());
  return json::parse(text);
}

// What the flags say, for every command.
struct Query {
  std::string address, field, dir = "in", op = "assign", weight;
  std::vector<int64_t> ids;  // --ids, --seeds or --eids
  std::vector<float> values;
  int64_t fanout = -1, etype = -1;
  std::vector<int64_t> etype_fanouts;
  uint64_t seed = 0;
  bool replace = false;
  double deadline = 60;  // as fanout-train's --deadline
  core::EdgeDir edge_dir() const { return dir == "out" ? core::EdgeDir::kOut : core::EdgeDir::kIn; }
  absl::StatusOr<std::vector<int64_t>> Ids(const char* flag) const {
    if (ids.empty()) return absl::InvalidArgumentError(base::StrCat(flag, " is required"));
    return ids;
  }
};

void AddFlags(base::ArgParser& args, Query& q, base::SecurityOptions& security) {
  args.SetDescription(kAbout);
  args.AddString("server", &q.address, "the graph server, host:port");
  args.AddString("field", &q.field, "pull, pull-edges, push: the field name (a typed field: TYPE/NAME)");
  args.AddIntList("ids", &q.ids, "pull, degrees, push: node IDs");
  args.AddIntList("seeds", &q.ids, "sample: seed node IDs");
  args.AddIntList("eids", &q.ids, "find-edges, pull-edges: edge IDs");
  args.AddInt("fanout", &q.fanout, "sample: neighbours per seed (-1 = all)");
  args.AddInt("etype", &q.etype, "sample, typed graphs: the relation (an index of metadata's edge_types; -1 = all)", -1,
              std::numeric_limits<int32_t>::max());
  args.AddIntList("etype-fanouts", &q.etype_fanouts, "sample, typed graphs: one fanout per relation instead of --fanout");
  args.AddBool("replace", &q.replace, "sample: with replacement");
  args.AddChoice("dir", &q.dir, {"in", "out"}, "sample, degrees: edge direction");
  args.AddString("weight", &q.weight, "sample: edge field weighting the draw");
  args.AddUint("seed", &q.seed, "sample: random seed");
  args.AddChoice("op", &q.op, {"assign", "add"}, "push: how rows are applied");
  args.AddFloatList("values", &q.values, "push: the rows' numbers, row after row");
  args.AddDouble("deadline", &q.deadline, "seconds per call");
  base::AddSecurityFlags(args, &security);
}

// The codec of node field `key` (NAME or TYPE/NAME) as the server's metadata names it ("" for none).
absl::StatusOr<core::FeatureCodec> NodeFieldCodec(rpc::GraphClient& client, const std::string& key) {
  ASSIGN_OR_RETURN(const auto md, client.GetMetadata());
  for (const auto& f : md.node_fields()) {
    if ((f.node_type().empty() ? f.name() : f.node_type() + "/" + f.name()) == key) {
      return core::FeatureCodecFromName(f.codec());
    }
  }
  return core::FeatureCodec::kNone;  // the pull names an unknown field by itself
}

absl::StatusOr<json> Pull(rpc::GraphClient& client, const Query& q, bool edges) {
  if (q.field.empty()) return absl::InvalidArgumentError("--field is required");
  ASSIGN_OR_RETURN(const std::vector<int64_t> v, q.Ids(edges ? "--eids" : "--ids"));
  ASSIGN_OR_RETURN(rpc::Rows r, edges ? client.PullEdgeData(q.field, v) : client.PullNodeData(q.field, v));
  json out{{"field", q.field}};
  core::FeatureCodec codec = core::FeatureCodec::kNone;
  if (!edges) {
    ASSIGN_OR_RETURN(codec, NodeFieldCodec(client, q.field));
  }
  if (codec != core::FeatureCodec::kNone && r.shape.size() == 2) {
    // Compressed features (fanout-partition --feature-dtype): printed as the values they stand for.
    const int64_t n = r.shape[0], dim = core::CodecDecodedElems(codec, r.shape[1]);
    std::vector<float> values(static_cast<size_t>(n * std::max<int64_t>(dim, 0)));
    if (dim > 0) core::DecodeRows(codec, r.data.data(), n, dim, values.data());
    out["codec"] = std::string(core::FeatureCodecName(codec));
    out["stored_dtype"] = std::string(core::DTypeName(r.dtype));
    r = rpc::Rows{.dtype = core::DType::kFloat32, .shape = {n, dim},
                  .data = std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float))};
  }
  ASSIGN_OR_RETURN(json rows, RowsJson(r));
  out["dtype"] = std::string(core::DTypeName(r.dtype));
  out["shape"] = r.shape;
  out["ids"] = v;
  out["rows"] = rows;
  return out;
}

absl::StatusOr<json> Sample(rpc::GraphClient& client, const Query& q) {
  ASSIGN_OR_RETURN(const std::vector<int64_t> v, q.Ids("--seeds"));
  auto e = client.SampleNeighbors(v, {.fanout = q.fanout, .replace = q.replace, .dir = q.edge_dir(),
                                      .weight_field = q.weight, .seed = q.seed, .etype = static_cast<int>(q.etype),
                                      .etype_fanouts = q.etype_fanouts});
  if (!e.ok()) return e.status();
  json out{{"seeds", v}, {"src", e->src}, {"dst", e->dst}, {"eid", e->eid}};
  if (!e->etype.empty()) out["etype"] = e->etype;  // typed graphs
  return out;
}

absl::StatusOr<json> Push(rpc::GraphClient& client, const Query& q) {
  if (q.field.empty()) return absl::InvalidArgumentError("--field is required");
  ASSIGN_OR_RETURN(const std::vector<int64_t> v, q.Ids("--ids"));
  ASSIGN_OR_RETURN(const auto md, client.GetMetadata());
  for (const auto& f : md.node_fields()) {
    if ((f.node_type().empty() ? f.name() : f.node_type() + "/" + f.name()) != q.field) continue;  // "TYPE/NAME"
    if (f.dtype() != v1::FLOAT32) {
      return absl::UnimplementedError("fanout-query pushes float32 fields only; use the C++ or Python client");
    }
    std::vector<int64_t> shape{static_cast<int64_t>(v.size())};
    shape.insert(shape.end(), f.shape().begin(), f.shape().end());
    rpc::Rows rows{core::DType::kFloat32, shape,
                   std::string(reinterpret_cast<const char*>(q.values.data()), q.values.size() * 4)};
    RETURN_IF_ERROR(client.PushNodeData(q.field, v, rows, q.op == "add" ? core::PushOp::kAdd : core::PushOp::kAssign));
    return json{{"pushed", v.size()}, {"field", q.field}, {"op", q.op}};
  }
  return absl::NotFoundError(base::StrCat("the server has no node field '", q.field, "'"));
}

// The answer to command `cmd`, as JSON.
absl::StatusOr<json> Answer(rpc::GraphClient& client, const std::string& cmd, const Query& q) {
  if (cmd == "metadata") {
    ASSIGN_OR_RETURN(const auto m, client.GetMetadata());
    return ProtoJson(m);
  }
  if (cmd == "stats") {
    ASSIGN_OR_RETURN(const auto m, client.GetStats());
    return ProtoJson(m);
  }
  if (cmd == "pull" || cmd == "pull-edges") return Pull(client, q, cmd == "pull-edges");
  if (cmd == "degrees") {
    ASSIGN_OR_RETURN(const std::vector<int64_t> v, q.Ids("--ids"));
    ASSIGN_OR_RETURN(const auto d, client.GetDegrees(v, q.edge_dir()));
    return json{{"ids", v}, {"dir", q.dir}, {"degrees", d}};
  }
  if (cmd == "find-edges") {
    ASSIGN_OR_RETURN(const std::vector<int64_t> v, q.Ids("--eids"));
    ASSIGN_OR_RETURN(const auto e, client.FindEdges(v));
    return json{{"eids", v}, {"src", e.first}, {"dst", e.second}};
  }
  if (cmd == "sample") return Sample(client, q);
  if (cmd == "push") return Push(client, q);
  return absl::InvalidArgumentError(base::StrCat("unknown command '", cmd, "' (see --help)"));
}

}  // namespace

int main(int argc, char** argv) {
  Query q;
  base::SecurityOptions security;
  base::ArgParser args("fanout-query", "--server HOST:PORT COMMAND [flags]");
  AddFlags(args, q, security);
  std::vector<std::string> positional;
  if (std::optional<int> exit = args.ParseForMain(argc, argv, &positional)) return *exit;
  if (q.address.empty()) return args.Fail(absl::InvalidArgumentError("--server is required"));
  if (positional.size() != 1) {
    return args.Fail(absl::InvalidArgumentError("give exactly one command (see --help)"));
  }
  if (!(q.deadline > 0)) return args.Fail(absl::InvalidArgumentError("--deadline must be > 0 seconds"));
  auto loaded = rpc::Security::Load(security, rpc::Security::Role::kClient);
  if (!loaded.ok()) return args.Fail(loaded.status());
  auto client = rpc::GraphClient::Connect(q.address, {.deadline_seconds = q.deadline, .security = *loaded});
  absl::StatusOr<json> out = Answer(*client, positional[0], q);
  if (!out.ok()) return args.Fail(out.status());
  std::printf("%s\n", out->dump().c_str());
  return 0;
}
