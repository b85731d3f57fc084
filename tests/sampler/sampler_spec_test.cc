// The sampler spec: everything a trainer sets reaches its sampler processes unchanged.
#include "sampler/sampler_spec.h"

#include <gtest/gtest.h>

namespace fanout::sampler {
namespace {

SamplerSpec EveryFieldSet() {
  SamplerSpec s;
  s.loader.part_config_path = "/data/g/g.json";
  DistGraphOptions& g = s.graph;
  g.machine_id = 3;
  g.read_local_files = false;
  g.servers.addresses = {{"10.0.0.1:1", "10.0.0.1:2"}, {}, {"h2:7"}, {"h3:8"}};
  g.client.deadline_seconds = 12.5;
  g.client.max_attempts = 9;
  g.client.max_message_bytes = 123456789;
  g.client.own_connection = true;
  g.security.tls_cert = "c.pem";
  g.security.tls_key = "k.pem";
  g.security.tls_ca = "ca.pem";
  g.security.tls_server_name = "fanout.internal";
  g.security.auth_token_file = "/run/secrets/token";
  g.connect_timeout_seconds = 4.25;
  g.cache_field = "emb";
  g.cache_max_bytes = 1 << 20;
  g.cache_from_counts = true;
  g.local_row_cache_bytes = 3 << 20;
  g.local_row_cache_policy = core::CachePolicy::kLru;
  SamplerOptions& o = s.sampler;
  o.fanouts = {25, -1, 3};
  o.relation_fanouts = {{1, 2}, {-1, 0}, {3, 4}};
  o.batch_size = 77;
  o.replace = true;
  o.shuffle = false;
  o.seed = 0xfedcba9876543210ull;
  o.rank = 5;
  o.seeds_per_epoch = 1000;
  o.feature_field = "x";
  o.label_field = "";
  o.edge.weight_field = "w";
  o.edge.feature_field = "ef";
  s.loader.first_epoch = 2;
  s.loader.num_epochs = 7;
  s.loader.first_step = 3;
  s.loader.samplers_ignore_sigterm = true;
  s.loader.num_samplers = 4;
  s.loader.prefetch = 6;
  s.loader.sampler_nice = 13;
  s.num_seeds = 31337;
  s.num_cached = 4242;
  s.seed_range_first = 1 << 20;
  s.is_link = true;
  s.link.draw.negatives = 11;
  s.link.draw.negative_sampling = NegativeSampling::kDegreePow75;
  s.link.exclude_seed_edges = false;
  s.link.draw.edges_per_epoch = 999;
  s.link.draw.hard_negative_field = "hard";
  s.link.draw.hard_negatives = 5;
  return s;
}

void ExpectSameSampling(const SamplerOptions& o, const SamplerOptions& wo) {
  EXPECT_EQ(o.fanouts, wo.fanouts);
  EXPECT_EQ(o.relation_fanouts, wo.relation_fanouts);
  EXPECT_EQ(o.batch_size, wo.batch_size);
  EXPECT_EQ(o.replace, wo.replace);
  EXPECT_EQ(o.shuffle, wo.shuffle);
  EXPECT_EQ(o.seed, wo.seed);
  EXPECT_EQ(o.rank, wo.rank);
  EXPECT_EQ(o.seeds_per_epoch, wo.seeds_per_epoch);
  EXPECT_EQ(o.feature_field, wo.feature_field);
  EXPECT_EQ(o.label_field, wo.label_field);
  EXPECT_EQ(o.edge.weight_field, wo.edge.weight_field);
  EXPECT_EQ(o.edge.feature_field, wo.edge.feature_field);
}

TEST(SamplerSpecTest, EveryFieldRoundTrips) {
  const SamplerSpec want = EveryFieldSet();
  auto got = ReadSamplerSpec(WriteSamplerSpec(want));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->loader.part_config_path, want.loader.part_config_path);
  const DistGraphOptions &g = got->graph, &wg = want.graph;
  EXPECT_EQ(g.machine_id, wg.machine_id);
  EXPECT_EQ(g.read_local_files, wg.read_local_files);
  EXPECT_EQ(g.servers.addresses, wg.servers.addresses);
  EXPECT_EQ(g.client.deadline_seconds, wg.client.deadline_seconds);
  EXPECT_EQ(g.client.max_attempts, wg.client.max_attempts);
  EXPECT_EQ(g.client.max_message_bytes, wg.client.max_message_bytes);
  EXPECT_EQ(g.client.own_connection, wg.client.own_connection);
  EXPECT_EQ(g.security.tls_cert, wg.security.tls_cert);
  EXPECT_EQ(g.security.tls_key, wg.security.tls_key);
  EXPECT_EQ(g.security.tls_ca, wg.security.tls_ca);
  EXPECT_EQ(g.security.tls_server_name, wg.security.tls_server_name);
  EXPECT_EQ(g.security.auth_token_file, wg.security.auth_token_file);
  EXPECT_EQ(g.connect_timeout_seconds, wg.connect_timeout_seconds);
  EXPECT_EQ(g.cache_field, wg.cache_field);
  EXPECT_EQ(g.cache_max_bytes, wg.cache_max_bytes);
  EXPECT_EQ(g.cache_from_counts, wg.cache_from_counts);
  EXPECT_EQ(g.local_row_cache_bytes, wg.local_row_cache_bytes);
  EXPECT_EQ(g.local_row_cache_policy, wg.local_row_cache_policy);
  ExpectSameSampling(got->sampler, want.sampler);
  EXPECT_EQ(got->loader.first_epoch, want.loader.first_epoch);
  EXPECT_EQ(got->loader.num_epochs, want.loader.num_epochs);
  EXPECT_EQ(got->loader.first_step, want.loader.first_step);
  EXPECT_EQ(got->loader.samplers_ignore_sigterm, want.loader.samplers_ignore_sigterm);
  EXPECT_EQ(got->loader.num_samplers, want.loader.num_samplers);
  EXPECT_EQ(got->loader.prefetch, want.loader.prefetch);
  EXPECT_EQ(got->loader.sampler_nice, want.loader.sampler_nice);
  EXPECT_EQ(got->num_seeds, want.num_seeds);
  EXPECT_EQ(got->num_cached, want.num_cached);
  EXPECT_EQ(got->seed_range_first, want.seed_range_first);
  EXPECT_TRUE(got->is_link);
  EXPECT_EQ(got->link.draw.negatives, want.link.draw.negatives);
  EXPECT_EQ(got->link.draw.negative_sampling, want.link.draw.negative_sampling);
  EXPECT_EQ(got->link.exclude_seed_edges, want.link.exclude_seed_edges);
  EXPECT_EQ(got->link.draw.edges_per_epoch, want.link.draw.edges_per_epoch);
  EXPECT_EQ(got->link.draw.hard_negative_field, want.link.draw.hard_negative_field);
  EXPECT_EQ(got->link.draw.hard_negatives, want.link.draw.hard_negatives);

  // A node-batch spec carries no link settings.
  SamplerSpec node = want;
  node.is_link = false;
  got = ReadSamplerSpec(WriteSamplerSpec(node));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->is_link);
  EXPECT_EQ(got->link.draw.negatives, LinkSamplerOptions{}.draw.negatives);
}

TEST(SamplerSpecTest, BadSpecsNameTheKeyAtFault) {
  EXPECT_EQ(ReadSamplerSpec("[1, 2]").status().message(), "sampler spec: not a JSON object");
  EXPECT_FALSE(ReadSamplerSpec("{\"part_config\": ").ok());
  std::string text = WriteSamplerSpec(EveryFieldSet());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return ReadSamplerSpec(t).status();
  };
  absl::Status s = replaced("\"max_attempts\":9", "\"max_attempts\":0");
  EXPECT_NE(s.message().find("graph.client.max_attempts must be >= 1, got 0"), std::string::npos) << s;
  s = replaced("\"batch_size\":77", "\"batch_size\":\"77\"");
  EXPECT_NE(s.message().find("'sampler.batch_size'"), std::string::npos) << s;
  s = replaced("\"prefetch\":6", "\"prefetch_ahead\":6");
  EXPECT_EQ(s.message(), "sampler spec: 'prefetch' is missing");
  s = replaced("\"negative_sampling\":\"degree\"", "\"negative_sampling\":\"zipf\"");
  EXPECT_NE(s.message().find("'link.negative_sampling': 'zipf' is not a negative sampling: uniform, degree, joint, in-batch or local"), std::string::npos)
      << s;
  s = replaced("\"negatives\":11", "\"negatives\":0");
  EXPECT_NE(s.message().find("link.negatives must be >= 1, got 0"), std::string::npos) << s;
}

// The settings objects of the Python data plane: every member a script chooses crosses, keyed as
// in the spec.
TEST(SamplerSettingsTest, EveryFieldRoundTrips) {
  const SamplerSpec want = EveryFieldSet();
  auto sampling = ReadSamplerSettings(WriteSamplerSettings(want.sampler));
  ASSERT_TRUE(sampling.ok()) << sampling.status();
  ExpectSameSampling(*sampling, want.sampler);

  auto link = ReadLinkSettings(WriteLinkSettings(want.link), want.sampler);
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->draw.negatives, want.link.draw.negatives);
  EXPECT_EQ(link->draw.negative_sampling, want.link.draw.negative_sampling);
  EXPECT_EQ(link->exclude_seed_edges, want.link.exclude_seed_edges);
  EXPECT_EQ(link->draw.edges_per_epoch, want.link.draw.edges_per_epoch);
  EXPECT_EQ(link->draw.hard_negative_field, want.link.draw.hard_negative_field);
  EXPECT_EQ(link->draw.hard_negatives, want.link.draw.hard_negatives);
  ExpectSameSampling(link->sampling, want.sampler);

  LoaderOptions lo;
  lo.num_samplers = 3;
  lo.num_threads = 5;
  lo.prefetch = 7;
  lo.first_epoch = 2;
  lo.num_epochs = 9;
  lo.sampler_binary = "/opt/fanout/bin/fanout-sampler";
  lo.batch_timeout_seconds = 12.5;
  lo.sampler_nice = 4;
  auto loader = ReadLoaderSettings(WriteLoaderSettings(lo));
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ(loader->num_samplers, 3);
  EXPECT_EQ(loader->num_threads, 5);
  EXPECT_EQ(loader->prefetch, 7);
  EXPECT_EQ(loader->first_epoch, 2);
  EXPECT_EQ(loader->num_epochs, 9);
  EXPECT_EQ(loader->sampler_binary, lo.sampler_binary);
  EXPECT_EQ(loader->batch_timeout_seconds, 12.5);
  EXPECT_EQ(loader->sampler_nice, 4);
  // The caller's own members are not settings: they keep their defaults.
  EXPECT_EQ(loader->first_step, 0);
  EXPECT_FALSE(loader->writable_batches);
}

// Every key is required and no other is taken: a member Python does not set, or sets under a
// misspelt name, is an error naming it, never a default taken in silence.
TEST(SamplerSettingsTest, EveryKeyRequiredAndNoOtherTaken) {
  const std::string text = WriteSamplerSettings(EveryFieldSet().sampler);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return ReadSamplerSettings(t).status();
  };
  absl::Status s = replaced("\"edge_weight_field\":\"w\",", "");
  EXPECT_EQ(s.message(), "sampler settings: 'edge_weight_field' is missing") << s;
  s = replaced("\"edge_weight_field\"", "\"edge_weights\"");
  EXPECT_NE(s.message().find("sampler settings: unknown setting 'edge_weights' (the settings: fanouts, "
                             "relation_fanouts, batch_size,"),
            std::string::npos)
      << s;
  s = replaced("\"rank\":5", "\"rank\":-1");
  EXPECT_EQ(s.message(), "sampler settings: rank must be >= 0, got -1") << s;
  s = replaced("\"batch_size\":77", "\"batch_size\":\"77\"");
  EXPECT_NE(s.message().find("sampler settings: 'batch_size': "), std::string::npos) << s;
  // Numbers the member cannot hold are refused, not wrapped or cut.
  s = replaced("\"seed\":18364758544493064720", "\"seed\":-1");
  EXPECT_EQ(s.message(), "sampler settings: 'seed': -1 is out of range [0, 18446744073709551615]") << s;
  s = replaced("\"rank\":5", "\"rank\":4294967296");
  EXPECT_EQ(s.message(), "sampler settings: 'rank': 4294967296 is out of range [-2147483648, 2147483647]") << s;
  s = replaced("\"rank\":5", "\"rank\":5.5");
  EXPECT_EQ(s.message(), "sampler settings: 'rank': must be an integer, got 5.5") << s;
  s = replaced("\"batch_size\":77", "\"batch_size\":0");
  EXPECT_EQ(s.message(), "sampler settings: batch_size must be >= 1, got 0") << s;
  EXPECT_EQ(ReadSamplerSettings("[]").status().message(), "sampler settings: not a JSON object");

  EXPECT_EQ(ReadLinkSettings("{\"negatives\": 2}", {}).status().message(),
            "link settings: 'negative_sampling' is missing");
  std::string link = WriteLinkSettings(EveryFieldSet().link);
  const std::string eleven = "\"negatives\":11";
  link.replace(link.find(eleven), eleven.size(), "\"negatives\":0");
  EXPECT_EQ(ReadLinkSettings(link, {}).status().message(), "link settings: negatives must be >= 1, got 0");

  std::string loader = WriteLoaderSettings({});
  const std::string zero = "\"num_samplers\":0";
  loader.replace(loader.find(zero), zero.size(), "\"num_samplers\":-2");
  EXPECT_EQ(ReadLoaderSettings(loader).status().message(), "loader settings: num_samplers must be >= 0, got -2");
  loader = WriteLoaderSettings({});
  const std::string ten = "\"sampler_nice\":10";
  loader.replace(loader.find(ten), ten.size(), "\"sampler_nice\":20");
  EXPECT_EQ(ReadLoaderSettings(loader).status().message(), "loader settings: sampler_nice must be in [0, 19], got 20");
  EXPECT_NE(ReadLoaderSettings("{\"first_step\": 3}").status().message().find("unknown setting 'first_step'"),
            std::string::npos);
}

}  // namespace
}  // namespace fanout::sampler
