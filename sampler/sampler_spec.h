// What a trainer tells each of its fanout-sampler processes, as one serialised object: the graph
// to open (partition config, machine, servers, client and security settings, halo cache), the
// sampling options and the batch range. WriteSamplerSpec (sampler/loader.cc) is its only writer
// and ReadSamplerSpec (sampler_main.cc) its only reader, so no setting can reach the trainer's
// own sampling and be lost on the way to a sampler process (as the retry count, the message
// size limit and the connection setting once were, when every field was re-encoded as a flag).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/loader_options.h"
#include "sampler/minibatch_sampler.h"

namespace fanout::sampler {

struct SamplerSpec {
  // How the trainer's batches are made: this process uses part_config_path, num_samplers (it
  // makes every N-th batch), prefetch (batches sent ahead), first_epoch, num_epochs, first_step,
  // samplers_ignore_sigterm and sampler_nice (it lowers its priority by this); the other members
  // are the trainer's own and keep their defaults here.
  LoaderOptions loader;
  DistGraphOptions graph;  // everything but client.security, which is loaded from graph.security
  SamplerOptions sampler;
  // The seed list travels beside the spec (a memfd): num_seeds IDs, then the num_cached IDs of
  // sampler.cached_nodes (slot order), which the JSON does not carry. When seed_range_first >= 0
  // the seeds are the range [seed_range_first, seed_range_first + num_seeds) instead (a rank's
  // positive edges, SeedArray::Range), and the memfd holds the cached IDs alone.
  int64_t num_seeds = 0;
  int64_t num_cached = 0;
  int64_t seed_range_first = -1;
  // > 0: the trainer reads this many rows of the feature field in place (loader.machine_rows;
  // sampler/machine_rows.h: its partition's mapped rows and the halo cache), so batches leave
  // them out and say where each is (MiniBatch::feature_slots). The process checks it finds the
  // same number.
  int64_t machine_row_slots = 0;
  // Link prediction: the seeds are positive edge IDs and the batches LinkBatchSampler's, made
  // with `link` (its fanouts, batch size, replace, seed, rank and fields are `sampler`'s).
  bool is_link = false;
  LinkSamplerOptions link;
};

// `spec.link` with the settings it shares with `spec.sampler` taken from there.
LinkSamplerOptions LinkOptionsOf(const SamplerSpec& spec);

// A JSON object with every field.
std::string WriteSamplerSpec(const SamplerSpec& spec);
// Reads what WriteSamplerSpec wrote, and checks every value; errors name the key at fault.
absl::StatusOr<SamplerSpec> ReadSamplerSpec(const std::string& json);

// The settings a script's loader chooses, as the Python data plane (python/native) hands them
// over: one JSON object per struct, keyed as the spec keys it ("fanouts", "edge_weight_field",
// ... as under "sampler"; "negatives", ... as under "link"; LoaderOptions' user-chosen members).
// Every key is required and no other is taken, so a member added in C++ (which the spec's
// compile-time member counts force into its schema) fails every Python loader until Python
// sets it, instead of being left at its default without a word; a misspelt key is refused by
// name. Errors name the key at fault.
std::string WriteSamplerSettings(const SamplerOptions& options);
absl::StatusOr<SamplerOptions> ReadSamplerSettings(const std::string& json);
// The link settings; their node sampling is `sampling`.
std::string WriteLinkSettings(const LinkSamplerOptions& options);
absl::StatusOr<LinkSamplerOptions> ReadLinkSettings(const std::string& json, const SamplerOptions& sampling);
// num_samplers, num_threads, prefetch, first_epoch, num_epochs, sampler_binary,
// batch_timeout_seconds; the others are left at their defaults for the caller to set.
std::string WriteLoaderSettings(const LoaderOptions& options);
absl::StatusOr<LoaderOptions> ReadLoaderSettings(const std::string& json);

}  // namespace fanout::sampler
