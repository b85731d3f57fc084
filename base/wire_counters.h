// Bytes a trainer and its sampler processes put on the network and took off it, by kind, in one
// page of shared memory: the trainer makes it, its sampler processes map it (fanout-sampler
// --wire-counters-fd), every graph client of theirs adds the messages of its calls to other
// machines' servers (request sent, reply received: the protobuf payload, not HTTP/2, TLS or TCP
// framing), and the trainer's communicator adds its collectives (a ring's share: an all-reduce of
// B bytes over N ranks sends and receives 2 (N - 1) / N B on each). The interfaces' own counters
// are the ground truth; what these do not explain is protocol overhead (docs/benchmarks.md).
// Thread- and process-safe: relaxed atomics on a MAP_SHARED page.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fanout::base {

enum class WireKind : int { kSampling = 0, kRowPulls, kRowWrites, kCollectives, kControl };
inline constexpr int kNumWireKinds = 5;
// "sampling", "row_pulls", "row_writes", "collectives", "control".
std::string_view WireKindName(WireKind kind);

struct WireTotals {
  std::array<int64_t, kNumWireKinds> sent{}, received{};
  int64_t total() const;
  int64_t total_sent() const;
  int64_t total_received() const;
  WireTotals operator-(const WireTotals& earlier) const;
  WireTotals& operator+=(const WireTotals& other);
  // "312.4 MB (sampling 20.1, row_pulls 270.2, collectives 22.1)": sent plus received, in MB
  // (10^6 bytes), kinds with none left out.
  std::string Describe() const;
};

// The line a trainer prints at exit with its totals (its sampler processes' included), which
// fanout-launch sums per machine: "fanout-wire: sampling=S:R row_pulls=S:R ..." (bytes sent and
// received of every kind).
std::string WireLine(const WireTotals& t);
// Parses a WireLine found anywhere in `line`; nullopt when it is not one.
std::optional<WireTotals> ParseWireLine(std::string_view line);

class WireCounters {
 public:
  // A fresh page (memfd); fd() passes it to a child.
  static absl::StatusOr<std::shared_ptr<WireCounters>> Create();
  // The page another process made, from its descriptor (which this takes over and closes).
  static absl::StatusOr<std::shared_ptr<WireCounters>> Map(int fd);
  ~WireCounters();
  WireCounters(const WireCounters&) = delete;
  WireCounters& operator=(const WireCounters&) = delete;

  int fd() const { return fd_; }
  void Add(WireKind kind, int64_t sent, int64_t received);
  WireTotals Read() const;

 private:
  struct Page {
    std::atomic<int64_t> sent[kNumWireKinds];
    std::atomic<int64_t> received[kNumWireKinds];
  };
  WireCounters(int fd, Page* page) : fd_(fd), page_(page) {}
  int fd_ = -1;
  Page* page_ = nullptr;
};

}  // namespace fanout::base
