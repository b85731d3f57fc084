#include "trainer/checkpoint.h"

#include <ATen/ops/empty.h>
#include <torch/serialize.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/fsync.h"
#include "base/status.h"
#include "base/strings.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using base::StrCat;
using nlohmann::json;

c10::IValue ToIValue(const json& j) {
  switch (j.type()) {
    case json::value_t::boolean:
      return j.get<bool>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return j.get<int64_t>();
    case json::value_t::number_float:
      return j.get<double>();
    case json::value_t::string:
      return j.get<std::string>();
    case json::value_t::array: {
      c10::impl::GenericList list(c10::AnyType::get());
      for (const json& e : j) list.push_back(ToIValue(e));
      return list;
    }
    case json::value_t::object: {
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [k, v] : j.items()) dict.insert(k, ToIValue(v));
      return dict;
    }
    default:
      return c10::IValue();
  }
}

// The JSON form of a pickled value (tensors are not expected here: they have their own fields).
absl::StatusOr<json> ToJson(const c10::IValue& v, const std::string& where) {
  if (v.isNone()) return json(nullptr);
  if (v.isBool()) return json(v.toBool());
  if (v.isInt()) return json(v.toInt());
  if (v.isDouble()) return json(v.toDouble());
  if (v.isString()) return json(v.toStringRef());
  if (v.isList()) {
    json a = json::array();
    for (const c10::IValue& e : v.toListRef()) {
      ASSIGN_OR_RETURN(json x, ToJson(e, where));
      a.push_back(std::move(x));
    }
    return a;
  }
  if (v.isGenericDict()) {
    json o = json::object();
    for (const auto& kv : v.toGenericDict()) {
      if (!kv.key().isString()) return absl::InvalidArgumentError(StrCat(where, ": a key is not a string"));
      ASSIGN_OR_RETURN(o[kv.key().toStringRef()], ToJson(kv.value(), where));
    }
    return o;
  }
  return absl::InvalidArgumentError(StrCat(where, ": unexpected value of type ", v.tagKind()));
}

std::string ShapeText(const at::Tensor& t) { return StrCat("[", base::StrJoin(t.sizes().vec(), ", "), "]"); }

}  // namespace

json HyperParameters(const ModelOptions& o) {
  json h = {{"model", std::string(ModelKindName(o.model))},
            {"in_dim", o.in_dim},
            {"num_classes", o.num_classes},
            {"num_layers", o.num_layers}};
  if (o.model == ModelKind::kScripted) {
    h["script"] = o.script_path;
    return h;
  }
  h["hidden"] = o.hidden;
  h["dropout"] = o.dropout;
  if (o.model == ModelKind::kRgcn || o.model == ModelKind::kRgat || o.model == ModelKind::kHgt) {
    h["num_relations"] = o.num_relations;
  }
  if (o.model == ModelKind::kHgt) h["num_node_types"] = o.num_node_types;
  if (UsesHeads(o.model)) {
    std::vector<int64_t> heads;
    for (int64_t l = 0; l < o.num_layers; ++l) heads.push_back(HeadsOf(o, l));
    h["heads"] = heads;
  }
  h["fused"] = o.fused;
  return h;
}

absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& c) {
  std::vector<char> bytes;
  RETURN_IF_ERROR(CatchTorch(StrCat("encoding checkpoint ", path), [&] {
    json info = c.info;
    info["format"] = kCheckpointFormat;
    info["version"] = kCheckpointVersion;
    c10::impl::GenericDict top(c10::StringType::get(), c10::AnyType::get());
    // format and version first, so that `torch.load(path)` prints them first.
    top.insert("format", std::string(kCheckpointFormat));
    top.insert("version", static_cast<int64_t>(kCheckpointVersion));
    for (const auto& [k, v] : info.items()) {
      if (k != "format" && k != "version") top.insert(k, ToIValue(v));
    }
    c10::Dict<std::string, at::Tensor> state;
    for (const auto& [name, t] : c.state_dict) state.insert(name, t.detach().cpu().contiguous());
    top.insert("state_dict", state);
    if (!c.embeddings.empty()) {
      c10::Dict<std::string, at::Tensor> tables;
      for (const auto& [name, t] : c.embeddings) tables.insert(name, t.detach().cpu().contiguous());
      top.insert("embeddings", tables);
    }
    if (!c.optimizer.empty()) {
      at::Tensor opt = at::empty({static_cast<int64_t>(c.optimizer.size())}, at::kByte);
      std::memcpy(opt.data_ptr(), c.optimizer.data(), c.optimizer.size());
      top.insert("optimizer", opt);
    }
    bytes = torch::pickle_save(top);
  }));
  if (absl::Status s = base::WriteFileDurably(path, std::string_view(bytes.data(), bytes.size())); !s.ok()) {
    return absl::Status(s.code(), StrCat("checkpoint: ", s.message()));
  }
  return absl::OkStatus();
}

namespace {
constexpr double kStepsPerEpochKey = 4294967296.0;  // 2^32: steps of an epoch stay below it
}  // namespace

double ResumeKey(const Checkpoint& c) {
  const json& at = c.info.contains("resume_at") ? c.info["resume_at"] : json();
  if (at.is_array() && at.size() == 2 && at[0].is_number_integer() && at[1].is_number_integer()) {
    return at[0].get<double>() * kStepsPerEpochKey + at[1].get<double>();
  }
  return static_cast<double>(c.info.value("epoch", int64_t{-1}) + 1) * kStepsPerEpochKey;
}

int64_t KeyEpoch(double key) { return static_cast<int64_t>(key / kStepsPerEpochKey); }
int64_t KeyStep(double key) { return static_cast<int64_t>(std::fmod(key, kStepsPerEpochKey)); }

double NewestKeyEveryRankHolds(const std::vector<double>& keys) {
  const size_t ranks = keys.size() / 2;
  double best = -1;
  for (double k : keys) {
    if (k <= best) continue;
    bool everywhere = true;
    for (size_t r = 0; r < ranks && everywhere; ++r) everywhere = keys[2 * r] == k || keys[2 * r + 1] == k;
    if (everywhere) best = k;
  }
  return best;
}

absl::Status KeepAsPrevious(const std::string& path, const std::string& previous) {
  const std::string tmp = previous + ".tmp";
  ::unlink(tmp.c_str());
  if (::link(path.c_str(), tmp.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();  // no checkpoint yet
    return absl::InternalError(StrCat("checkpoint: cannot link ", path, " as ", tmp, ": ", std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), previous.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return absl::InternalError(StrCat("checkpoint: cannot rename ", tmp, " to ", previous, ": ", std::strerror(e)));
  }
  return base::FsyncParent(previous);
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return absl::NotFoundError(StrCat("no checkpoint ", path));
    return absl::PermissionDeniedError(StrCat("cannot read checkpoint ", path));
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto not_ours = [&](const std::string& why) {
    return absl::InvalidArgumentError(StrCat(
        "checkpoint ", path, " is not a fanout checkpoint (", why,
        "); fanout before version 2 of the format wrote TorchScript archives, which this version does not read: "
        "train again into a new --checkpoint-dir"));
  };
  c10::IValue top;
  try {
    top = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return not_ours(StrCat("PyTorch cannot unpickle it: ", what.substr(0, what.find('\n'))));
  }
  if (!top.isGenericDict()) return not_ours("it does not hold a dict");
  Checkpoint c;
  for (const auto& kv : top.toGenericDict()) {
    if (!kv.key().isString()) return not_ours("a key is not a string");
    const std::string& key = kv.key().toStringRef();
    const c10::IValue& v = kv.value();
    if (key == "state_dict") {
      if (!v.isGenericDict()) return not_ours("state_dict is not a dict");
      for (const auto& e : v.toGenericDict()) {
        if (!e.key().isString() || !e.value().isTensor()) return not_ours("state_dict holds a non-tensor");
        c.state_dict.emplace_back(e.key().toStringRef(), e.value().toTensor());
      }
    } else if (key == "embeddings") {
      if (!v.isGenericDict()) return not_ours("embeddings is not a dict");
      for (const auto& e : v.toGenericDict()) {
        if (!e.key().isString() || !e.value().isTensor()) return not_ours("embeddings holds a non-tensor");
        c.embeddings.emplace_back(e.key().toStringRef(), e.value().toTensor());
      }
    } else if (key == "optimizer") {
      if (!v.isTensor() || v.toTensor().scalar_type() != at::kByte) return not_ours("optimizer is not a byte tensor");
      const at::Tensor t = v.toTensor().contiguous();
      c.optimizer.assign(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()));
    } else {
      ASSIGN_OR_RETURN(c.info[key], ToJson(v, StrCat("checkpoint ", path, ", field '", key, "'")));
    }
  }
  if (c.info.value("format", "") != kCheckpointFormat) return not_ours("no \"format\": \"fanout.checkpoint\"");
  const int64_t version = c.info.value("version", int64_t{0});
  if (version > kCheckpointVersion) {
    return absl::InvalidArgumentError(StrCat("checkpoint ", path, " has format version ", version,
                                             "; this fanout reads up to version ", kCheckpointVersion,
                                             " (a newer fanout wrote it)"));
  }
  if (!c.info.contains("hyper_parameters")) return not_ours("no hyper_parameters");
  return c;
}

absl::Status LoadStateDict(GnnModel& model, const Checkpoint& c, const std::string& path) {
  const auto mine = model.StateDict();
  const json theirs_h = c.info.value("hyper_parameters", json::object());
  const json mine_h = HyperParameters(model.options());
  auto mismatch = [&](const std::string& what) {
    return absl::InvalidArgumentError(StrCat("checkpoint ", path, " does not fit this model: ", what,
                                             " (checkpoint: ", theirs_h.dump(), "; this run: ", mine_h.dump(), ")"));
  };
  const size_t n = std::max(mine.size(), c.state_dict.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= c.state_dict.size()) return mismatch(StrCat("it lacks tensor '", mine[i].first, "'"));
    if (i >= mine.size()) return mismatch(StrCat("it has a tensor this model lacks, '", c.state_dict[i].first, "'"));
    const auto& [name, t] = c.state_dict[i];
    if (name != mine[i].first) {
      return mismatch(StrCat("tensor ", i, " is '", name, "' there and '", mine[i].first, "' here"));
    }
    if (!t.sizes().equals(mine[i].second.sizes())) {
      return mismatch(StrCat("tensor '", name, "' is ", ShapeText(t), " there and ", ShapeText(mine[i].second), " here"));
    }
    if (t.scalar_type() != mine[i].second.scalar_type()) {
      return mismatch(StrCat("tensor '", name, "' is ", t.scalar_type(), " there and ", mine[i].second.scalar_type(),
                             " here"));
    }
  }
  return CatchTorch(StrCat("loading checkpoint ", path), [&] {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < mine.size(); ++i) mine[i].second.copy_(c.state_dict[i].second);
  });
}

}  // namespace fanout::trainer
