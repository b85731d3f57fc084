// How a graph client calls its server: deadline, retries, message limit, connection and
// credentials. Apart from graph_client.h so that options structs that hold it (DistGraphOptions)
// do not pull gRPC's generated stubs into every file that includes them.
#pragma once

#include <cstdint>
#include <memory>

#include "base/wire_counters.h"
#include "rpc/security.h"

namespace fanout::rpc {

// Every client channel's keepalive while calls are in flight (a ping every kKeepaliveTimeMs; no
// answer within kKeepaliveTimeoutMs ends the connection), and how long a new connection may take;
// servers accept pings every kMinPingIntervalMs (GraphServer).
inline constexpr int kKeepaliveTimeMs = 5000;
inline constexpr int kKeepaliveTimeoutMs = 10000;
inline constexpr int kConnectTimeoutMs = 10000;
inline constexpr int kMinPingIntervalMs = 1000;

struct ClientOptions {
  double deadline_seconds = 30;          // per call, retries included
  int max_attempts = 4;                  // for reads, on UNAVAILABLE
  int64_t max_message_bytes = 512ll << 20;
  bool own_connection = false;           // a TCP connection of its own, not shared with other clients
  // Batches' float32 rows (PullRowsAsync) travel as bfloat16, widened on arrival: half the
  // bytes, about 3 significant digits (fanout-train --wire-rows bfloat16).
  bool rows_as_bfloat16 = false;
  Security security;                     // TLS and token (default: plaintext, no token)
  // Where every call's request and reply bytes are added, by kind (base/wire_counters.h); null:
  // not counted. DistGraph leaves it off for its own machine's servers (no link crossed).
  std::shared_ptr<base::WireCounters> wire;
};

}  // namespace fanout::rpc
