// Graph servers of every partition of a partitioned graph, in this process on 127.0.0.1 port 0:
// what integration tests of the client, sampler and trainer run against.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/partition_config.h"
#include "server/graph_server.h"

namespace fanout::testing {

struct ServerCluster {
  core::PartitionConfig config;
  std::vector<std::unique_ptr<server::GraphServer>> servers;  // servers[k] serves partition k

  // Starts one server per partition; fails the test (gtest assertions) on error.
  void Start(const std::string& config_path, server::ServerOptions o = {});
  // "0=127.0.0.1:P0,1=127.0.0.1:P1,..." (sampler::ParseServerList's format).
  std::string ServerList() const;
  // Stops partition k's server now (in-flight calls cancelled).
  void Stop(int k);
};

}  // namespace fanout::testing
