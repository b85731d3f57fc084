// Internal to trainer/: what every Communicator shares, below the c10d backend: the
// coordinator's host:port, and the argument checks of Communicator::AllToAll.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fanout::trainer::internal {

struct Endpoint {
  std::string host;
  int port = 0;
};

// "host:port", "[v6addr]:port"; port in [0, 65535].
absl::StatusOr<Endpoint> ParseEndpoint(std::string_view host_port);

// The argument checks of Communicator::AllToAll: world_size entries each, none negative, input
// contiguous on `device` with sum(send_rows) rows.
absl::Status CheckAllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows, int world_size, c10::Device device);

}  // namespace fanout::trainer::internal
