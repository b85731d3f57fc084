#include "tests/testing/server_cluster.h"

#include "base/strings.h"
#include "core/partition_store.h"
#include "gtest/gtest.h"

namespace fanout::testing {

void ServerCluster::Start(const std::string& config_path, server::ServerOptions o) {
  auto cfg = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  config = *cfg;
  o.host = "127.0.0.1";
  o.port = 0;
  if (o.num_threads == 0) o.num_threads = 2;
  for (int k = 0; k < config.num_parts; ++k) {
    auto store = core::PartitionStore::Open(config, k);
    ASSERT_TRUE(store.ok()) << store.status();
    auto srv = server::GraphServer::Start(std::move(*store), o);
    ASSERT_TRUE(srv.ok()) << srv.status();
    ASSERT_GT((*srv)->port(), 0);
    servers.push_back(std::move(*srv));
  }
}

std::string ServerCluster::ServerList() const {
  std::vector<std::string> entries;
  for (size_t k = 0; k < servers.size(); ++k) {
    if (servers[k] != nullptr) entries.push_back(base::StrCat(k, "=", servers[k]->address()));
  }
  return base::StrJoin(entries, ",");
}

void ServerCluster::Stop(int k) {
  servers[k]->Shutdown(std::chrono::milliseconds(0));
  servers[k].reset();
}

}  // namespace fanout::testing
