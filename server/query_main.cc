// fanout-query: asks a graph server one question and prints the answer as JSON.
//
//   fanout-query --server 127.0.0.1:30050 metadata
//   fanout-query --server 127.0.0.1:30050 sample --seeds 1,2,3 --fanout 5
#include <cstdio>
#include <limits>
#include <optional>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "base/cli.h"
#include "base/strings.h"
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

}  // namespace

int main(int argc, char** argv) {
  std::string address, field, dir = "in", op = "assign", weight;
  std::vector<int64_t> id_list;
  std::vector<float> values;
  int64_t fanout = -1;
  uint64_t seed = 0;
  bool replace = false;
  double deadline = 60;  // as fanout-train's --deadline
  base::ArgParser args("fanout-query", "--server HOST:PORT COMMAND [flags]");
  args.SetDescription(kAbout);
  args.AddString("server", &address, "the graph server, host:port");
  args.AddString("field", &field, "pull, pull-edges, push: the field name (a typed field: TYPE/NAME)");
  args.AddIntList("ids", &id_list, "pull, degrees, push: node IDs");
  args.AddIntList("seeds", &id_list, "sample: seed node IDs");
  args.AddIntList("eids", &id_list, "find-edges, pull-edges: edge IDs");
  args.AddInt("fanout", &fanout, "sample: neighbours per seed (-1 = all)");
  int64_t etype = -1;
  std::vector<int64_t> etype_fanouts;
  args.AddInt("etype", &etype, "sample, typed graphs: the relation (an index of metadata's edge_types; -1 = all)", -1,
              std::numeric_limits<int32_t>::max());
  args.AddIntList("etype-fanouts", &etype_fanouts, "sample, typed graphs: one fanout per relation instead of --fanout");
  args.AddBool("replace", &replace, "sample: with replacement");
  args.AddChoice("dir", &dir, {"in", "out"}, "sample, degrees: edge direction");
  args.AddString("weight", &weight, "sample: edge field weighting the draw");
  args.AddUint("seed", &seed, "sample: random seed");
  args.AddChoice("op", &op, {"assign", "add"}, "push: how rows are applied");
  args.AddFloatList("values", &values, "push: the rows' numbers, row after row");
  args.AddDouble("deadline", &deadline, "seconds per call");
  base::SecurityOptions security;
  base::AddSecurityFlags(args, &security);
  std::vector<std::string> positional;
  if (std::optional<int> exit = args.ParseForMain(argc, argv, &positional)) return *exit;
  if (address.empty()) return args.Fail(absl::InvalidArgumentError("--server is required"));
  if (positional.size() != 1) {
    return args.Fail(absl::InvalidArgumentError("give exactly one command (see --help)"));
  }
  const std::string cmd = positional[0];
  if (!(deadline > 0)) return args.Fail(absl::InvalidArgumentError("--deadline must be > 0 seconds"));
  auto loaded = rpc::Security::Load(security, rpc::Security::Role::kClient);
  if (!loaded.ok()) return args.Fail(loaded.status());
  auto client = rpc::GraphClient::Connect(address, {.deadline_seconds = deadline, .security = *loaded});
  const core::EdgeDir edge_dir = dir == "out" ? core::EdgeDir::kOut : core::EdgeDir::kIn;
  auto ids = [&](const char* flag) -> absl::StatusOr<std::vector<int64_t>> {
    if (id_list.empty()) return absl::InvalidArgumentError(base::StrCat(flag, " is required"));
    return id_list;
  };

  absl::StatusOr<json> out = [&]() -> absl::StatusOr<json> {
    if (cmd == "metadata") {
      auto m = client->GetMetadata();
      if (!m.ok()) return m.status();
      return ProtoJson(*m);
    }
    if (cmd == "stats") {
      auto m = client->GetStats();
      if (!m.ok()) return m.status();
      return ProtoJson(*m);
    }
    if (cmd == "pull" || cmd == "pull-edges") {
      if (field.empty()) return absl::InvalidArgumentError("--field is required");
      auto v = ids(cmd == "pull" ? "--ids" : "--eids");
      if (!v.ok()) return v.status();
      auto r = cmd == "pull" ? client->PullNodeData(field, *v) : client->PullEdgeData(field, *v);
      if (!r.ok()) return r.status();
      auto rows = RowsJson(*r);
      if (!rows.ok()) return rows.status();
      return json{{"field", field}, {"dtype", std::string(core::DTypeName(r->dtype))}, {"shape", r->shape},
                  {"ids", *v}, {"rows", *rows}};
    }
    if (cmd == "degrees") {
      auto v = ids("--ids");
      if (!v.ok()) return v.status();
      auto d = client->GetDegrees(*v, edge_dir);
      if (!d.ok()) return d.status();
      return json{{"ids", *v}, {"dir", dir}, {"degrees", *d}};
    }
    if (cmd == "find-edges") {
      auto v = ids("--eids");
      if (!v.ok()) return v.status();
      auto e = client->FindEdges(*v);
      if (!e.ok()) return e.status();
      return json{{"eids", *v}, {"src", e->first}, {"dst", e->second}};
    }
    if (cmd == "sample") {
      auto v = ids("--seeds");
      if (!v.ok()) return v.status();
      auto e = client->SampleNeighbors(*v, {.fanout = fanout, .replace = replace, .dir = edge_dir,
                                            .weight_field = weight, .seed = seed, .etype = static_cast<int>(etype),
                                            .etype_fanouts = etype_fanouts});
      if (!e.ok()) return e.status();
      json out{{"seeds", *v}, {"src", e->src}, {"dst", e->dst}, {"eid", e->eid}};
      if (!e->etype.empty()) out["etype"] = e->etype;  // typed graphs
      return out;
    }
    if (cmd == "push") {
      if (field.empty()) return absl::InvalidArgumentError("--field is required");
      auto v = ids("--ids");
      if (!v.ok()) return v.status();
      auto md = client->GetMetadata();
      if (!md.ok()) return md.status();
      for (const auto& f : md->node_fields()) {
        if ((f.node_type().empty() ? f.name() : f.node_type() + "/" + f.name()) != field) continue;  // "TYPE/NAME"
        if (f.dtype() != v1::FLOAT32) {
          return absl::UnimplementedError("fanout-query pushes float32 fields only; use the C++ or Python client");
        }
        std::vector<int64_t> shape{static_cast<int64_t>(v->size())};
        shape.insert(shape.end(), f.shape().begin(), f.shape().end());
        rpc::Rows rows{core::DType::kFloat32, shape,
                          std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4)};
        absl::Status s = client->PushNodeData(field, *v, rows, op == "add" ? core::PushOp::kAdd : core::PushOp::kAssign);
        if (!s.ok()) return s;
        return json{{"pushed", v->size()}, {"field", field}, {"op", op}};
      }
      return absl::NotFoundError(base::StrCat("the server has no node field '", field, "'"));
    }
    return absl::InvalidArgumentError(base::StrCat("unknown command '", cmd, "' (see --help)"));
  }();
  if (!out.ok()) return args.Fail(out.status());
  std::printf("%s\n", out->dump().c_str());
  return 0;
}
