#include "sampler/sampler_spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "base/field_count.h"
#include "base/status.h"
#include "base/strings.h"

namespace fanout::sampler {

using base::StrCat;
using nlohmann::json;

// How a NegativeSampling is spelled in the spec.
void to_json(json& j, NegativeSampling n) { j = n == NegativeSampling::kUniform ? "uniform" : "degree"; }
void from_json(const json& j, NegativeSampling& n) {
  const std::string v = j.get<std::string>();
  if (v != "uniform" && v != "degree") throw std::invalid_argument(StrCat("must be uniform or degree, got '", v, "'"));
  n = v == "uniform" ? NegativeSampling::kUniform : NegativeSampling::kDegreePow75;
}

namespace {

// The spec's one schema: every member it carries, once, under its key ("graph.client.x" is
// {"graph": {"client": {"x": ...}}}). WriteSamplerSpec and ReadSamplerSpec both walk it (`S` is
// a const or a mutable SamplerSpec; `f(key, member)` returns a Status). The counts below make a
// member added to one of these structs fail the build until it is listed here or said to travel
// otherwise.
static_assert(base::FieldCount<SamplerSpec>() == 13, "list the new SamplerSpec member in WalkSpec");
static_assert(base::FieldCount<DistGraphOptions>() == 8, "list the new DistGraphOptions member in WalkSpec");
// (ClientOptions::security, the loaded credentials, is not carried: each process loads them
// from graph.security.)
static_assert(base::FieldCount<rpc::ClientOptions>() == 5, "list the new ClientOptions member in WalkSpec");
static_assert(base::FieldCount<base::SecurityOptions>() == 5, "list the new SecurityOptions member in WalkSpec");
static_assert(base::FieldCount<base::ServerMap>() == 1, "list the new ServerMap member in WalkSpec");
// (SamplerOptions::cached_nodes travels beside the spec, with the seeds.)
static_assert(base::FieldCount<SamplerOptions>() == 12, "list the new SamplerOptions member in WalkSpec");
static_assert(base::FieldCount<EdgeDataOptions>() == 2, "list the new EdgeDataOptions member in WalkSpec");

template <typename S, typename F>
absl::Status WalkSpec(S& s, F&& f) {
  auto& g = s.graph;
  auto& o = s.sampler;
  RETURN_IF_ERROR(f("part_config", s.part_config_path));
  RETURN_IF_ERROR(f("graph.machine_id", g.machine_id));
  RETURN_IF_ERROR(f("graph.read_local_files", g.read_local_files));
  RETURN_IF_ERROR(f("graph.servers", g.servers.addresses));
  RETURN_IF_ERROR(f("graph.client.deadline_seconds", g.client.deadline_seconds));
  RETURN_IF_ERROR(f("graph.client.max_attempts", g.client.max_attempts));
  RETURN_IF_ERROR(f("graph.client.max_message_bytes", g.client.max_message_bytes));
  RETURN_IF_ERROR(f("graph.client.own_connection", g.client.own_connection));
  RETURN_IF_ERROR(f("graph.security.tls_cert", g.security.tls_cert));
  RETURN_IF_ERROR(f("graph.security.tls_key", g.security.tls_key));
  RETURN_IF_ERROR(f("graph.security.tls_ca", g.security.tls_ca));
  RETURN_IF_ERROR(f("graph.security.tls_server_name", g.security.tls_server_name));
  RETURN_IF_ERROR(f("graph.security.auth_token_file", g.security.auth_token_file));
  RETURN_IF_ERROR(f("graph.connect_timeout_seconds", g.connect_timeout_seconds));
  RETURN_IF_ERROR(f("graph.cache_field", g.cache_field));
  RETURN_IF_ERROR(f("graph.cache_max_bytes", g.cache_max_bytes));
  RETURN_IF_ERROR(f("sampler.fanouts", o.fanouts));
  RETURN_IF_ERROR(f("sampler.relation_fanouts", o.relation_fanouts));
  RETURN_IF_ERROR(f("sampler.batch_size", o.batch_size));
  RETURN_IF_ERROR(f("sampler.replace", o.replace));
  RETURN_IF_ERROR(f("sampler.shuffle", o.shuffle));
  RETURN_IF_ERROR(f("sampler.seed", o.seed));
  RETURN_IF_ERROR(f("sampler.rank", o.rank));
  RETURN_IF_ERROR(f("sampler.seeds_per_epoch", o.seeds_per_epoch));
  RETURN_IF_ERROR(f("sampler.feature_field", o.feature_field));
  RETURN_IF_ERROR(f("sampler.label_field", o.label_field));
  RETURN_IF_ERROR(f("sampler.edge_weight_field", o.edge.weight_field));
  RETURN_IF_ERROR(f("sampler.edge_feature_field", o.edge.feature_field));
  RETURN_IF_ERROR(f("first_epoch", s.first_epoch));
  RETURN_IF_ERROR(f("num_epochs", s.num_epochs));
  RETURN_IF_ERROR(f("first_step", s.first_step));
  RETURN_IF_ERROR(f("ignore_sigterm", s.ignore_sigterm));
  RETURN_IF_ERROR(f("num_samplers", s.num_samplers));
  RETURN_IF_ERROR(f("prefetch", s.prefetch));
  RETURN_IF_ERROR(f("num_seeds", s.num_seeds));
  RETURN_IF_ERROR(f("num_cached", s.num_cached));
  return absl::OkStatus();
}

// The "link" object, present (not null) when is_link. (LinkSamplerOptions::sampling is the
// spec's `sampler`.)
static_assert(base::FieldCount<LinkSamplerOptions>() == 5, "list the new LinkSamplerOptions member in WalkLink");
template <typename S, typename F>
absl::Status WalkLink(S& s, F&& f) {
  RETURN_IF_ERROR(f("link.negatives", s.link.negatives));
  RETURN_IF_ERROR(f("link.negative_sampling", s.link.negative_sampling));
  RETURN_IF_ERROR(f("link.exclude_seed_edges", s.link.exclude_seed_edges));
  RETURN_IF_ERROR(f("link.edges_per_epoch", s.link.edges_per_epoch));
  return absl::OkStatus();
}

json::json_pointer Pointer(std::string_view key) {
  std::string p = StrCat("/", key);
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

absl::Status Need(bool ok, const std::string& what) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(StrCat("sampler spec: ", what));
}

}  // namespace

std::string WriteSamplerSpec(const SamplerSpec& s) {
  json j = json::object();
  auto put = [&j](std::string_view key, const auto& value) {
    j[Pointer(key)] = value;
    return absl::OkStatus();
  };
  (void)WalkSpec(s, put);
  j["link"] = nullptr;
  if (s.is_link) (void)WalkLink(s, put);
  return j.dump();
}

LinkSamplerOptions LinkOptionsOf(const SamplerSpec& s) {
  LinkSamplerOptions o = s.link;
  o.sampling = s.sampler;  // the spec carries the node sampling once, in `sampler`
  return o;
}

absl::StatusOr<SamplerSpec> ReadSamplerSpec(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("sampler spec: not a JSON object");
  SamplerSpec s;
  // Reads the member at `key`, naming the key when it is missing or of the wrong type.
  auto get = [&j](std::string_view key, auto& out) -> absl::Status {
    const json::json_pointer at = Pointer(key);
    if (!j.contains(at)) return absl::InvalidArgumentError(StrCat("sampler spec: '", key, "' is missing"));
    try {
      out = j[at].template get<std::remove_reference_t<decltype(out)>>();
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(StrCat("sampler spec: '", key, "': ", e.what()));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(WalkSpec(s, get));
  if (auto link = j.find("link"); link != j.end() && !link->is_null()) {
    if (!link->is_object()) return absl::InvalidArgumentError("sampler spec: 'link' must be an object or null");
    s.is_link = true;
    RETURN_IF_ERROR(WalkLink(s, get));
    RETURN_IF_ERROR(Need(s.link.negatives >= 1, StrCat("link.negatives must be >= 1, got ", s.link.negatives)));
    RETURN_IF_ERROR(Need(s.link.edges_per_epoch >= -1,
                         StrCat("link.edges_per_epoch must be -1 (all) or >= 0, got ", s.link.edges_per_epoch)));
  }
  const DistGraphOptions& go = s.graph;
  const SamplerOptions& so = s.sampler;
  // Each value on its own, so the message names the one at fault.
  RETURN_IF_ERROR(Need(s.num_samplers >= 1, StrCat("num_samplers must be >= 1, got ", s.num_samplers)));
  RETURN_IF_ERROR(Need(s.prefetch >= 1, StrCat("prefetch must be >= 1, got ", s.prefetch)));
  RETURN_IF_ERROR(Need(s.num_seeds >= 0, StrCat("num_seeds must be >= 0, got ", s.num_seeds)));
  RETURN_IF_ERROR(Need(s.num_cached >= 0, StrCat("num_cached must be >= 0, got ", s.num_cached)));
  RETURN_IF_ERROR(Need(s.first_epoch >= 0, StrCat("first_epoch must be >= 0, got ", s.first_epoch)));
  RETURN_IF_ERROR(Need(s.num_epochs >= 0, StrCat("num_epochs must be >= 0, got ", s.num_epochs)));
  RETURN_IF_ERROR(Need(s.first_step >= 0, StrCat("first_step must be >= 0, got ", s.first_step)));
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
