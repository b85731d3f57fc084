#include "sampler/sampler_spec.h"

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/strings.h"

namespace fanout::sampler {

using core::StrCat;
using nlohmann::json;

std::string WriteSamplerSpec(const SamplerSpec& s) {
  const DistGraphOptions& g = s.graph;
  const SamplerOptions& o = s.sampler;
  json servers = json::array();
  for (const auto& part : g.servers.addresses) servers.push_back(part);
  json j = {
      {"part_config", s.part_config_path},
      {"graph",
       {{"machine_id", g.machine_id},
        {"read_local_files", g.read_local_files},
        {"servers", servers},
        {"client",
         {{"deadline_seconds", g.client.deadline_seconds},
          {"max_attempts", g.client.max_attempts},
          {"max_message_bytes", g.client.max_message_bytes},
          {"own_connection", g.client.own_connection}}},
        {"security",
         {{"tls_cert", g.security.tls_cert},
          {"tls_key", g.security.tls_key},
          {"tls_ca", g.security.tls_ca},
          {"tls_server_name", g.security.tls_server_name},
          {"auth_token_file", g.security.auth_token_file}}},
        {"connect_timeout_seconds", g.connect_timeout_seconds},
        {"cache_field", g.cache_field},
        {"cache_max_bytes", g.cache_max_bytes}}},
      {"sampler",
       {{"fanouts", o.fanouts},
        {"batch_size", o.batch_size},
        {"replace", o.replace},
        {"shuffle", o.shuffle},
        {"seed", o.seed},
        {"rank", o.rank},
        {"seeds_per_epoch", o.seeds_per_epoch},
        {"feature_field", o.feature_field},
        {"label_field", o.label_field},
        {"edge_weight_field", o.edge.weight_field},
        {"edge_feature_field", o.edge.feature_field}}},
      {"first_epoch", s.first_epoch},
      {"num_epochs", s.num_epochs},
      {"num_samplers", s.num_samplers},
      {"prefetch", s.prefetch},
      {"num_seeds", s.num_seeds},
      {"num_cached", s.num_cached},
  };
  j["link"] = nullptr;
  if (s.is_link) {
    j["link"] = {{"negatives", s.link.negatives},
                 {"negative_sampling", s.link.negative_sampling == NegativeSampling::kUniform ? "uniform" : "degree"},
                 {"exclude_seed_edges", s.link.exclude_seed_edges},
                 {"edges_per_epoch", s.link.edges_per_epoch}};
  }
  return j.dump();
}

LinkSamplerOptions LinkOptionsOf(const SamplerSpec& s) {
  LinkSamplerOptions o = s.link;
  o.sampling = s.sampler;  // the spec carries the node sampling once, in `sampler`
  return o;
}

namespace {

// Reads j[key] into *out, naming the key's path when it is missing or of the wrong type.
template <typename T>
absl::Status Get(const json& j, const std::string& path, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return absl::InvalidArgumentError(StrCat("sampler spec: '", path, key, "' is missing"));
  try {
    *out = it->get<T>();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(StrCat("sampler spec: '", path, key, "': ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status Need(bool ok, const std::string& what) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(StrCat("sampler spec: ", what));
}

}  // namespace

absl::StatusOr<SamplerSpec> ReadSamplerSpec(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("sampler spec: not a JSON object");
  SamplerSpec s;
  RETURN_IF_ERROR(Get(j, "", "part_config", &s.part_config_path));
  json g, c, sec, o;
  RETURN_IF_ERROR(Get(j, "", "graph", &g));
  RETURN_IF_ERROR(Get(j, "", "sampler", &o));
  RETURN_IF_ERROR(Get(g, "graph.", "client", &c));
  RETURN_IF_ERROR(Get(g, "graph.", "security", &sec));
  DistGraphOptions& go = s.graph;
  RETURN_IF_ERROR(Get(g, "graph.", "machine_id", &go.machine_id));
  RETURN_IF_ERROR(Get(g, "graph.", "read_local_files", &go.read_local_files));
  RETURN_IF_ERROR(Get(g, "graph.", "servers", &go.servers.addresses));
  RETURN_IF_ERROR(Get(c, "graph.client.", "deadline_seconds", &go.client.deadline_seconds));
  RETURN_IF_ERROR(Get(c, "graph.client.", "max_attempts", &go.client.max_attempts));
  RETURN_IF_ERROR(Get(c, "graph.client.", "max_message_bytes", &go.client.max_message_bytes));
  RETURN_IF_ERROR(Get(c, "graph.client.", "own_connection", &go.client.own_connection));
  RETURN_IF_ERROR(Get(sec, "graph.security.", "tls_cert", &go.security.tls_cert));
  RETURN_IF_ERROR(Get(sec, "graph.security.", "tls_key", &go.security.tls_key));
  RETURN_IF_ERROR(Get(sec, "graph.security.", "tls_ca", &go.security.tls_ca));
  RETURN_IF_ERROR(Get(sec, "graph.security.", "tls_server_name", &go.security.tls_server_name));
  RETURN_IF_ERROR(Get(sec, "graph.security.", "auth_token_file", &go.security.auth_token_file));
  RETURN_IF_ERROR(Get(g, "graph.", "connect_timeout_seconds", &go.connect_timeout_seconds));
  RETURN_IF_ERROR(Get(g, "graph.", "cache_field", &go.cache_field));
  RETURN_IF_ERROR(Get(g, "graph.", "cache_max_bytes", &go.cache_max_bytes));
  SamplerOptions& so = s.sampler;
  RETURN_IF_ERROR(Get(o, "sampler.", "fanouts", &so.fanouts));
  RETURN_IF_ERROR(Get(o, "sampler.", "batch_size", &so.batch_size));
  RETURN_IF_ERROR(Get(o, "sampler.", "replace", &so.replace));
  RETURN_IF_ERROR(Get(o, "sampler.", "shuffle", &so.shuffle));
  RETURN_IF_ERROR(Get(o, "sampler.", "seed", &so.seed));
  RETURN_IF_ERROR(Get(o, "sampler.", "rank", &so.rank));
  RETURN_IF_ERROR(Get(o, "sampler.", "seeds_per_epoch", &so.seeds_per_epoch));
  RETURN_IF_ERROR(Get(o, "sampler.", "feature_field", &so.feature_field));
  RETURN_IF_ERROR(Get(o, "sampler.", "label_field", &so.label_field));
  RETURN_IF_ERROR(Get(o, "sampler.", "edge_weight_field", &so.edge.weight_field));
  RETURN_IF_ERROR(Get(o, "sampler.", "edge_feature_field", &so.edge.feature_field));
  RETURN_IF_ERROR(Get(j, "", "first_epoch", &s.first_epoch));
  RETURN_IF_ERROR(Get(j, "", "num_epochs", &s.num_epochs));
  RETURN_IF_ERROR(Get(j, "", "num_samplers", &s.num_samplers));
  RETURN_IF_ERROR(Get(j, "", "prefetch", &s.prefetch));
  RETURN_IF_ERROR(Get(j, "", "num_seeds", &s.num_seeds));
  RETURN_IF_ERROR(Get(j, "", "num_cached", &s.num_cached));
  if (auto link = j.find("link"); link != j.end() && !link->is_null()) {
    if (!link->is_object()) return absl::InvalidArgumentError("sampler spec: 'link' must be an object or null");
    s.is_link = true;
    std::string negative_sampling;
    RETURN_IF_ERROR(Get(*link, "link.", "negatives", &s.link.negatives));
    RETURN_IF_ERROR(Get(*link, "link.", "negative_sampling", &negative_sampling));
    RETURN_IF_ERROR(Get(*link, "link.", "exclude_seed_edges", &s.link.exclude_seed_edges));
    RETURN_IF_ERROR(Get(*link, "link.", "edges_per_epoch", &s.link.edges_per_epoch));
    RETURN_IF_ERROR(Need(negative_sampling == "uniform" || negative_sampling == "degree",
                         StrCat("link.negative_sampling must be uniform or degree, got '", negative_sampling, "'")));
    s.link.negative_sampling =
        negative_sampling == "uniform" ? NegativeSampling::kUniform : NegativeSampling::kDegreePow75;
    RETURN_IF_ERROR(Need(s.link.negatives >= 1, StrCat("link.negatives must be >= 1, got ", s.link.negatives)));
    RETURN_IF_ERROR(Need(s.link.edges_per_epoch >= -1,
                         StrCat("link.edges_per_epoch must be -1 (all) or >= 0, got ", s.link.edges_per_epoch)));
  }
  // Each value on its own, so the message names the one at fault.
  RETURN_IF_ERROR(Need(s.num_samplers >= 1, StrCat("num_samplers must be >= 1, got ", s.num_samplers)));
  RETURN_IF_ERROR(Need(s.prefetch >= 1, StrCat("prefetch must be >= 1, got ", s.prefetch)));
  RETURN_IF_ERROR(Need(s.num_seeds >= 0, StrCat("num_seeds must be >= 0, got ", s.num_seeds)));
  RETURN_IF_ERROR(Need(s.num_cached >= 0, StrCat("num_cached must be >= 0, got ", s.num_cached)));
  RETURN_IF_ERROR(Need(s.first_epoch >= 0, StrCat("first_epoch must be >= 0, got ", s.first_epoch)));
  RETURN_IF_ERROR(Need(s.num_epochs >= 0, StrCat("num_epochs must be >= 0, got ", s.num_epochs)));
  RETURN_IF_ERROR(Need(go.client.deadline_seconds > 0,
                       StrCat("graph.client.deadline_seconds must be > 0, got ", go.client.deadline_seconds)));
  RETURN_IF_ERROR(Need(go.client.max_attempts >= 1,
                       StrCat("graph.client.max_attempts must be >= 1, got ", go.client.max_attempts)));
  RETURN_IF_ERROR(Need(go.client.max_message_bytes > 0,
                       StrCat("graph.client.max_message_bytes must be > 0, got ", go.client.max_message_bytes)));
  RETURN_IF_ERROR(Need(go.connect_timeout_seconds > 0, StrCat("graph.connect_timeout_seconds must be > 0, got ",
                                                               go.connect_timeout_seconds)));
  RETURN_IF_ERROR(Need(go.cache_max_bytes >= 0, StrCat("graph.cache_max_bytes must be >= 0, got ", go.cache_max_bytes)));
  RETURN_IF_ERROR(Need(so.seeds_per_epoch >= -1,
                       StrCat("sampler.seeds_per_epoch must be -1 (all) or >= 0, got ", so.seeds_per_epoch)));
  RETURN_IF_ERROR(Need(so.rank >= 0, StrCat("sampler.rank must be >= 0, got ", so.rank)));
  return s;
}

}  // namespace fanout::sampler
