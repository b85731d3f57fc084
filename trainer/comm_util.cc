#include "trainer/comm_util.h"

#include "base/ip_config.h"
#include "base/strings.h"

namespace fanout::trainer::internal {

using base::StrCat;

absl::StatusOr<Endpoint> ParseEndpoint(std::string_view host_port) {
  auto hp = base::SplitHostPort(host_port);
  if (!hp.ok()) return absl::InvalidArgumentError(StrCat("coordinator '", host_port, "': ", hp.status().message()));
  return Endpoint{hp->host, hp->port};
}

absl::Status CheckAllToAll(const at::Tensor& input, const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows, int world_size, c10::Device device) {
  if (static_cast<int>(send_rows.size()) != world_size || static_cast<int>(recv_rows.size()) != world_size) {
    return absl::InvalidArgumentError(StrCat("all-to-all: ", send_rows.size(), " send and ", recv_rows.size(),
                                             " receive counts for ", world_size, " ranks"));
  }
  int64_t total = 0;
  for (const std::vector<int64_t>* v : {&send_rows, &recv_rows}) {
    for (int64_t n : *v) {
      if (n < 0) return absl::InvalidArgumentError(StrCat("all-to-all: negative row count ", n));
    }
  }
  for (int64_t n : send_rows) total += n;
  if (!input.defined() || input.dim() < 1 || !input.is_contiguous() || input.device() != device ||
      input.size(0) != total) {
    return absl::InvalidArgumentError(StrCat("all-to-all: the input must be a contiguous tensor on ", device.str(),
                                             " with ", total, " rows (the sum of the send counts)"));
  }
  return absl::OkStatus();
}

}  // namespace fanout::trainer::internal
