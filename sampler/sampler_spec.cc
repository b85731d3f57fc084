#include "sampler/sampler_spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "base/field_count.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/sampling.h"

namespace fanout::sampler {

using base::StrCat;
using nlohmann::json;

// How a NegativeSampling is spelled in the spec.
void to_json(json& j, NegativeSampling n) { j = std::string(NegativeSamplingName(n)); }
void from_json(const json& j, NegativeSampling& n) {
  absl::StatusOr<NegativeSampling> parsed = ParseNegativeSampling(j.get<std::string>());
  if (!parsed.ok()) throw std::invalid_argument(std::string(parsed.status().message()));
  n = *parsed;
}

}  // namespace fanout::sampler

namespace fanout::core {

// How a row cache's policy is spelled in the spec.
void to_json(nlohmann::json& j, CachePolicy p) { j = std::string(CachePolicyName(p)); }
void from_json(const nlohmann::json& j, CachePolicy& p) {
  absl::StatusOr<CachePolicy> parsed = CachePolicyFromName(j.get<std::string>());
  if (!parsed.ok()) throw std::invalid_argument(std::string(parsed.status().message()));
  p = *parsed;
}

}  // namespace fanout::core

namespace fanout::sampler {

namespace {

// The spec's one schema: every member it carries, once, under its key ("graph.client.x" is
// {"graph": {"client": {"x": ...}}}). WriteSamplerSpec and ReadSamplerSpec both walk it (`S` is
// a const or a mutable SamplerSpec; `f(key, member)` returns a Status). The counts below make a
// member added to one of these structs fail the build until it is listed here or said to travel
// otherwise.
static_assert(base::FieldCount<SamplerSpec>() == 9, "list the new SamplerSpec member in WalkSpec");
// (DistGraphOptions::cache_in_shared_memory is the trainer's own; shared_cache_fd travels as
// fanout-sampler --halo-cache-fd.)
static_assert(base::FieldCount<DistGraphOptions>() == 13, "list the new DistGraphOptions member in WalkSpec");
// (ClientOptions::security, the loaded credentials, is not carried: each process loads them
// from graph.security; ClientOptions::wire, the trainer's counters, travels as fanout-sampler
// --wire-counters-fd.)
static_assert(base::FieldCount<rpc::ClientOptions>() == 7, "list the new ClientOptions member in WalkSpec");
static_assert(base::FieldCount<base::SecurityOptions>() == 5, "list the new SecurityOptions member in WalkSpec");
static_assert(base::FieldCount<base::ServerMap>() == 2, "list the new ServerMap member in WalkSpec");
// (SamplerOptions::cached_nodes travels beside the spec, with the seeds.)
static_assert(base::FieldCount<SamplerOptions>() == 12, "list the new SamplerOptions member in WalkSamplerOptions");
static_assert(base::FieldCount<EdgeDataOptions>() == 2, "list the new EdgeDataOptions member in WalkSamplerOptions");

// `f` with `prefix` before every key: a struct's own walk serves the spec (under its object's
// key) and the Python data plane's settings objects (at the top level) alike.
template <typename F>
auto Prefixed(std::string_view prefix, F& f) {
  return [prefix, &f](std::string_view key, auto& member) { return f(StrCat(prefix, key), member); };
}

// SamplerOptions' members, under "sampler" in the spec. (cached_nodes travels beside the spec,
// with the seeds, and is never set from Python.)
template <typename O, typename F>
absl::Status WalkSamplerOptions(O& o, F&& f) {
  RETURN_IF_ERROR(f("fanouts", o.fanouts));
  RETURN_IF_ERROR(f("relation_fanouts", o.relation_fanouts));
  RETURN_IF_ERROR(f("batch_size", o.batch_size));
  RETURN_IF_ERROR(f("replace", o.replace));
  RETURN_IF_ERROR(f("shuffle", o.shuffle));
  RETURN_IF_ERROR(f("seed", o.seed));
  RETURN_IF_ERROR(f("rank", o.rank));
  RETURN_IF_ERROR(f("seeds_per_epoch", o.seeds_per_epoch));
  RETURN_IF_ERROR(f("feature_field", o.feature_field));
  RETURN_IF_ERROR(f("label_field", o.label_field));
  RETURN_IF_ERROR(f("edge_weight_field", o.edge.weight_field));
  RETURN_IF_ERROR(f("edge_feature_field", o.edge.feature_field));
  return absl::OkStatus();
}

// LinkSamplerOptions' own members, under "link" in the spec (its `sampling` is the spec's
// "sampler").
static_assert(base::FieldCount<LinkSamplerOptions>() == 3, "list the new LinkSamplerOptions member in WalkLinkOptions");
static_assert(base::FieldCount<LinkDrawOptions>() == 5, "list the new LinkDrawOptions member in WalkLinkOptions");
template <typename L, typename F>
absl::Status WalkLinkOptions(L& l, F&& f) {
  RETURN_IF_ERROR(f("negatives", l.draw.negatives));
  RETURN_IF_ERROR(f("negative_sampling", l.draw.negative_sampling));
  RETURN_IF_ERROR(f("exclude_seed_edges", l.exclude_seed_edges));
  RETURN_IF_ERROR(f("edges_per_epoch", l.draw.edges_per_epoch));
  RETURN_IF_ERROR(f("hard_negative_field", l.draw.hard_negative_field));
  RETURN_IF_ERROR(f("hard_negatives", l.draw.hard_negatives));
  return absl::OkStatus();
}

// The LoaderOptions a loader's user chooses (machine_rows: fanout-train's --batch-rows, the
// Python loaders' batch_rows; fetch_features: the Python loaders' start). The other five are its caller's: first_step and
// samplers_ignore_sigterm (fanout-train's resume and stop), part_config_path (the graph's),
// writable_batches (the Python data plane's batches are always writable) and features_ahead
// (fanout-train's evaluation).
static_assert(base::FieldCount<LoaderOptions>() == 15, "list the new LoaderOptions member in WalkLoaderSettings");
template <typename L, typename F>
absl::Status WalkLoaderSettings(L& l, F&& f) {
  RETURN_IF_ERROR(f("num_samplers", l.num_samplers));
  RETURN_IF_ERROR(f("num_threads", l.num_threads));
  RETURN_IF_ERROR(f("prefetch", l.prefetch));
  RETURN_IF_ERROR(f("first_epoch", l.first_epoch));
  RETURN_IF_ERROR(f("num_epochs", l.num_epochs));
  RETURN_IF_ERROR(f("sampler_binary", l.sampler_binary));
  RETURN_IF_ERROR(f("batch_timeout_seconds", l.batch_timeout_seconds));
  RETURN_IF_ERROR(f("sampler_nice", l.sampler_nice));
  RETURN_IF_ERROR(f("machine_rows", l.machine_rows));
  RETURN_IF_ERROR(f("fetch_features", l.fetch_features));
  return absl::OkStatus();
}

template <typename S, typename F>
absl::Status WalkSpec(S& s, F&& f) {
  auto& g = s.graph;
  RETURN_IF_ERROR(f("part_config", s.loader.part_config_path));
  RETURN_IF_ERROR(f("graph.machine_id", g.machine_id));
  RETURN_IF_ERROR(f("graph.read_local_files", g.read_local_files));
  RETURN_IF_ERROR(f("graph.servers", g.servers.addresses));
  RETURN_IF_ERROR(f("graph.replicas", g.servers.replicas));
  RETURN_IF_ERROR(f("graph.client.deadline_seconds", g.client.deadline_seconds));
  RETURN_IF_ERROR(f("graph.client.max_attempts", g.client.max_attempts));
  RETURN_IF_ERROR(f("graph.client.max_message_bytes", g.client.max_message_bytes));
  RETURN_IF_ERROR(f("graph.client.own_connection", g.client.own_connection));
  RETURN_IF_ERROR(f("graph.client.rows_as_bfloat16", g.client.rows_as_bfloat16));
  RETURN_IF_ERROR(f("graph.security.tls_cert", g.security.tls_cert));
  RETURN_IF_ERROR(f("graph.security.tls_key", g.security.tls_key));
  RETURN_IF_ERROR(f("graph.security.tls_ca", g.security.tls_ca));
  RETURN_IF_ERROR(f("graph.security.tls_server_name", g.security.tls_server_name));
  RETURN_IF_ERROR(f("graph.security.auth_token_file", g.security.auth_token_file));
  RETURN_IF_ERROR(f("graph.connect_timeout_seconds", g.connect_timeout_seconds));
  RETURN_IF_ERROR(f("graph.cache_field", g.cache_field));
  RETURN_IF_ERROR(f("graph.cache_max_bytes", g.cache_max_bytes));
  RETURN_IF_ERROR(f("graph.cache_from_counts", g.cache_from_counts));
  RETURN_IF_ERROR(f("graph.local_row_cache_bytes", g.local_row_cache_bytes));
  RETURN_IF_ERROR(f("graph.local_row_cache_policy", g.local_row_cache_policy));
  RETURN_IF_ERROR(WalkSamplerOptions(s.sampler, Prefixed("sampler.", f)));
  // The loader's members this process uses (SamplerSpec::loader).
  RETURN_IF_ERROR(f("first_epoch", s.loader.first_epoch));
  RETURN_IF_ERROR(f("num_epochs", s.loader.num_epochs));
  RETURN_IF_ERROR(f("first_step", s.loader.first_step));
  RETURN_IF_ERROR(f("ignore_sigterm", s.loader.samplers_ignore_sigterm));
  RETURN_IF_ERROR(f("num_samplers", s.loader.num_samplers));
  RETURN_IF_ERROR(f("prefetch", s.loader.prefetch));
  RETURN_IF_ERROR(f("nice", s.loader.sampler_nice));
  RETURN_IF_ERROR(f("fetch_features", s.loader.fetch_features));
  RETURN_IF_ERROR(f("num_seeds", s.num_seeds));
  RETURN_IF_ERROR(f("num_cached", s.num_cached));
  RETURN_IF_ERROR(f("seed_range_first", s.seed_range_first));
  RETURN_IF_ERROR(f("machine_rows", s.machine_row_slots));
  return absl::OkStatus();
}

// The "link" object, present (not null) when is_link.
template <typename S, typename F>
absl::Status WalkLink(S& s, F&& f) {
  return WalkLinkOptions(s.link, Prefixed("link.", f));
}

json::json_pointer Pointer(std::string_view key) {
  std::string p = StrCat("/", key);
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

absl::Status Need(bool ok, const std::string& what, std::string_view source = "sampler spec") {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(StrCat(source, ": ", what));
}

// Whether `v` is an integer that T holds.
template <typename T>
absl::Status CheckIntegerFits(const json& v) {
  if (!v.is_number_integer()) return absl::InvalidArgumentError(StrCat("must be an integer, got ", v.dump()));
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                        : v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                              (v.get<int64_t>() < 0 ||
                               static_cast<uint64_t>(v.get<int64_t>()) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
  return fits ? absl::OkStatus()
              : absl::InvalidArgumentError(StrCat(v.dump(), " is out of range [", std::numeric_limits<T>::min(), ", ",
                                                  std::numeric_limits<T>::max(), "]"));
}

// Sets the member at `key` of `j`.
auto Putter(json& j) {
  return [&j](std::string_view key, const auto& value) {
    j[Pointer(key)] = value;
    return absl::OkStatus();
  };
}

// Reads the member at `key` of `j`, naming `source` and the key when it is missing or of the
// wrong type.
auto Getter(const json& j, std::string_view source) {
  return [&j, source](std::string_view key, auto& out) -> absl::Status {
    const json::json_pointer at = Pointer(key);
    if (!j.contains(at)) return absl::InvalidArgumentError(StrCat(source, ": '", key, "' is missing"));
    using T = std::remove_reference_t<decltype(out)>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // nlohmann would wrap -1 into a uint64_t and cut 2^40 into an int without a word.
      if (absl::Status s = CheckIntegerFits<T>(j[at]); !s.ok()) {
        return absl::InvalidArgumentError(StrCat(source, ": '", key, "': ", s.message()));
      }
    }
    try {
      out = j[at].template get<T>();
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(StrCat(source, ": '", key, "': ", e.what()));
    }
    return absl::OkStatus();
  };
}

json Parse(const std::string& text) { return json::parse(text, nullptr, /*allow_exceptions=*/false); }

// What no batch could be made with, whichever process makes it; `prefix` is the options' key in
// the message ("sampler." in the spec).
absl::Status CheckSamplerValues(const SamplerOptions& so, std::string_view prefix, std::string_view source) {
  RETURN_IF_ERROR(core::CheckBatchSize(StrCat(source, ": ", prefix, "batch_size"), so.batch_size));
  RETURN_IF_ERROR(Need(so.seeds_per_epoch >= -1,
                       StrCat(prefix, "seeds_per_epoch must be -1 (all) or >= 0, got ", so.seeds_per_epoch), source));
  return Need(so.rank >= 0, StrCat(prefix, "rank must be >= 0, got ", so.rank), source);
}

absl::Status CheckLinkValues(const LinkSamplerOptions& l, std::string_view prefix, std::string_view source) {
  RETURN_IF_ERROR(
      Need(l.draw.negatives >= 1, StrCat(prefix, "negatives must be >= 1, got ", l.draw.negatives), source));
  return Need(l.draw.edges_per_epoch >= -1,
              StrCat(prefix, "edges_per_epoch must be -1 (all) or >= 0, got ", l.draw.edges_per_epoch), source);
}

// A settings object with exactly the keys `walk` names: every one required, no other taken (an
// unknown key is reported first: it is usually the misspelling of a missing one).
template <typename T, typename Walk>
absl::StatusOr<T> ReadSettings(const std::string& text, std::string_view source, Walk walk) {
  const json j = Parse(text);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError(StrCat(source, ": not a JSON object"));
  T out;
  std::vector<std::string> known;
  (void)walk(out, [&known](std::string_view key, auto&) {
    known.emplace_back(key);
    return absl::OkStatus();
  });
  for (const auto& item : j.items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      return absl::InvalidArgumentError(
          StrCat(source, ": unknown setting '", item.key(), "' (the settings: ", base::StrJoin(known, ", "), ")"));
    }
  }
  RETURN_IF_ERROR(walk(out, Getter(j, source)));
  return out;
}

template <typename T, typename Walk>
std::string WriteSettings(const T& value, Walk walk) {
  json j = json::object();
  (void)walk(value, Putter(j));
  return j.dump();
}

constexpr std::string_view kSamplerSettings = "sampler settings";
constexpr std::string_view kLinkSettings = "link settings";
constexpr std::string_view kLoaderSettings = "loader settings";

}  // namespace

std::string WriteSamplerSpec(const SamplerSpec& s) {
  json j = json::object();
  (void)WalkSpec(s, Putter(j));
  j["link"] = nullptr;
  if (s.is_link) (void)WalkLink(s, Putter(j));
  return j.dump();
}

LinkSamplerOptions LinkOptionsOf(const SamplerSpec& s) {
  LinkSamplerOptions o = s.link;
  o.sampling = s.sampler;  // the spec carries the node sampling once, in `sampler`
  return o;
}

absl::StatusOr<SamplerSpec> ReadSamplerSpec(const std::string& text) {
  const json j = Parse(text);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("sampler spec: not a JSON object");
  SamplerSpec s;
  const auto get = Getter(j, "sampler spec");
  RETURN_IF_ERROR(WalkSpec(s, get));
  if (auto link = j.find("link"); link != j.end() && !link->is_null()) {
    if (!link->is_object()) return absl::InvalidArgumentError("sampler spec: 'link' must be an object or null");
    s.is_link = true;
    RETURN_IF_ERROR(WalkLink(s, get));
    RETURN_IF_ERROR(CheckLinkValues(s.link, "link.", "sampler spec"));
  }
  const DistGraphOptions& go = s.graph;
  // Each value on its own, so the message names the one at fault.
  const LoaderOptions& lo = s.loader;
  RETURN_IF_ERROR(Need(lo.num_samplers >= 1, StrCat("num_samplers must be >= 1, got ", lo.num_samplers)));
  RETURN_IF_ERROR(Need(lo.prefetch >= 1, StrCat("prefetch must be >= 1, got ", lo.prefetch)));
  RETURN_IF_ERROR(Need(lo.sampler_nice >= 0 && lo.sampler_nice <= 19,
                       StrCat("nice must be in [0, 19], got ", lo.sampler_nice)));
  RETURN_IF_ERROR(Need(s.num_seeds >= 0, StrCat("num_seeds must be >= 0, got ", s.num_seeds)));
  RETURN_IF_ERROR(Need(s.num_cached >= 0, StrCat("num_cached must be >= 0, got ", s.num_cached)));
  RETURN_IF_ERROR(Need(s.machine_row_slots >= 0, StrCat("machine_rows must be >= 0, got ", s.machine_row_slots)));
  RETURN_IF_ERROR(Need(s.machine_row_slots == 0 || s.num_cached == 0,
                       "machine_rows and num_cached (a trainer's feature cache) go one at a time"));
  RETURN_IF_ERROR(Need(s.seed_range_first >= -1,
                       StrCat("seed_range_first must be -1 (a list) or a first ID >= 0, got ", s.seed_range_first)));
  RETURN_IF_ERROR(Need(lo.first_epoch >= 0, StrCat("first_epoch must be >= 0, got ", lo.first_epoch)));
  RETURN_IF_ERROR(Need(lo.num_epochs >= 0, StrCat("num_epochs must be >= 0, got ", lo.num_epochs)));
  RETURN_IF_ERROR(Need(lo.first_step >= 0, StrCat("first_step must be >= 0, got ", lo.first_step)));
  RETURN_IF_ERROR(Need(go.client.deadline_seconds > 0,
                       StrCat("graph.client.deadline_seconds must be > 0, got ", go.client.deadline_seconds)));
  RETURN_IF_ERROR(Need(go.client.max_attempts >= 1,
                       StrCat("graph.client.max_attempts must be >= 1, got ", go.client.max_attempts)));
  RETURN_IF_ERROR(Need(go.client.max_message_bytes > 0,
                       StrCat("graph.client.max_message_bytes must be > 0, got ", go.client.max_message_bytes)));
  RETURN_IF_ERROR(Need(go.connect_timeout_seconds > 0, StrCat("graph.connect_timeout_seconds must be > 0, got ",
                                                               go.connect_timeout_seconds)));
  RETURN_IF_ERROR(Need(go.cache_max_bytes >= 0, StrCat("graph.cache_max_bytes must be >= 0, got ", go.cache_max_bytes)));
  RETURN_IF_ERROR(CheckSamplerValues(s.sampler, "sampler.", "sampler spec"));
  return s;
}

std::string WriteSamplerSettings(const SamplerOptions& o) {
  return WriteSettings(o, [](auto& v, auto&& f) { return WalkSamplerOptions(v, f); });
}

absl::StatusOr<SamplerOptions> ReadSamplerSettings(const std::string& json_text) {
  ASSIGN_OR_RETURN(SamplerOptions o, ReadSettings<SamplerOptions>(json_text, kSamplerSettings, [](auto& v, auto&& f) {
                     return WalkSamplerOptions(v, f);
                   }));
  RETURN_IF_ERROR(CheckSamplerValues(o, "", kSamplerSettings));
  return o;
}

std::string WriteLinkSettings(const LinkSamplerOptions& o) {
  return WriteSettings(o, [](auto& v, auto&& f) { return WalkLinkOptions(v, f); });
}

absl::StatusOr<LinkSamplerOptions> ReadLinkSettings(const std::string& json_text, const SamplerOptions& sampling) {
  ASSIGN_OR_RETURN(LinkSamplerOptions o, ReadSettings<LinkSamplerOptions>(json_text, kLinkSettings,
                                                                          [](auto& v, auto&& f) {
                                                                            return WalkLinkOptions(v, f);
                                                                          }));
  RETURN_IF_ERROR(CheckLinkValues(o, "", kLinkSettings));
  o.sampling = sampling;
  return o;
}

std::string WriteLoaderSettings(const LoaderOptions& o) {
  return WriteSettings(o, [](auto& v, auto&& f) { return WalkLoaderSettings(v, f); });
}

absl::StatusOr<LoaderOptions> ReadLoaderSettings(const std::string& json_text) {
  ASSIGN_OR_RETURN(LoaderOptions o, ReadSettings<LoaderOptions>(json_text, kLoaderSettings, [](auto& v, auto&& f) {
                     return WalkLoaderSettings(v, f);
                   }));
  RETURN_IF_ERROR(Need(o.num_samplers >= 0, StrCat("num_samplers must be >= 0, got ", o.num_samplers), kLoaderSettings));
  RETURN_IF_ERROR(Need(o.first_epoch >= 0, StrCat("first_epoch must be >= 0, got ", o.first_epoch), kLoaderSettings));
  RETURN_IF_ERROR(Need(o.batch_timeout_seconds > 0,
                       StrCat("batch_timeout_seconds must be > 0, got ", o.batch_timeout_seconds), kLoaderSettings));
  RETURN_IF_ERROR(Need(o.sampler_nice >= 0 && o.sampler_nice <= 19,
                       StrCat("sampler_nice must be in [0, 19], got ", o.sampler_nice), kLoaderSettings));
  return o;  // the rest is checked by the loader (ValidateLoaderOptions), as for fanout-train
}

}  // namespace fanout::sampler
