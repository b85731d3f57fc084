// Internal to trainer/: Communicator over PyTorch's c10d (TCPStore rendezvous, ProcessGroupGloo,
// and ProcessGroupNCCL when FANOUT_WITH_NCCL). Only c10d_backend.cc includes c10d headers.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "absl/status/statusor.h"
#include "trainer/dist.h"

namespace fanout::trainer::internal {

struct Endpoint {
  std::string host;
  int port = 0;
};

// "host:port", "[v6addr]:port"; port in [0, 65535].
absl::StatusOr<Endpoint> ParseEndpoint(std::string_view host_port);

// The local IP address (numeric) whose route reaches `host`, found with a connected UDP socket
// (no packet is sent).
absl::StatusOr<std::string> LocalAddressTowards(const std::string& host, int port);

// The argument checks of Communicator::AllToAll: world_size entries each, none negative, input
// contiguous on `device` with sum(send_rows) rows.
absl::Status CheckAllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows, int world_size, c10::Device device);

// Connect() for world_size > 1, `options` validated.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectC10d(const DistOptions& options,
                                                          const Endpoint& coordinator);

}  // namespace fanout::trainer::internal
