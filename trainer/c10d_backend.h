// Internal to trainer/: Communicator over PyTorch's c10d (TCPStore rendezvous, ProcessGroupGloo,
// and ProcessGroupNCCL when FANOUT_WITH_NCCL), and Connect (dist.h), which picks it or the
// one-rank group. Only c10d_backend.cc includes c10d headers.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/comm_util.h"
#include "trainer/dist.h"

namespace fanout::trainer::internal {

// The local IP address (numeric) whose route reaches `host`, found with a connected UDP socket
// (no packet is sent).
absl::StatusOr<std::string> LocalAddressTowards(const std::string& host, int port);

// Connect() for world_size > 1, `options` validated.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectC10d(const DistOptions& options,
                                                          const Endpoint& coordinator);

}  // namespace fanout::trainer::internal
