#include "base/wire_counters.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "base/enum_names.h"
#include "base/strings.h"

namespace fanout::base {

namespace {

constexpr std::pair<WireKind, std::string_view> kWireKindNames[] = {{WireKind::kSampling, "sampling"},
                                                                    {WireKind::kRowPulls, "row_pulls"},
                                                                    {WireKind::kRowWrites, "row_writes"},
                                                                    {WireKind::kCollectives, "collectives"},
                                                                    {WireKind::kControl, "control"}};
static_assert(std::size(kWireKindNames) == kNumWireKinds);

}  // namespace

std::string_view WireKindName(WireKind kind) { return EnumName(kWireKindNames, kind); }

int64_t WireTotals::total() const {
  int64_t t = 0;
  for (int k = 0; k < kNumWireKinds; ++k) t += sent[k] + received[k];
  return t;
}

int64_t WireTotals::total_sent() const {
  int64_t t = 0;
  for (int64_t b : sent) t += b;
  return t;
}

int64_t WireTotals::total_received() const {
  int64_t t = 0;
  for (int64_t b : received) t += b;
  return t;
}

WireTotals& WireTotals::operator+=(const WireTotals& other) {
  for (int k = 0; k < kNumWireKinds; ++k) {
    sent[k] += other.sent[k];
    received[k] += other.received[k];
  }
  return *this;
}

namespace {
constexpr std::string_view kWirePrefix = "fanout-wire:";
}  // namespace

std::string WireLine(const WireTotals& t) {
  std::string out(kWirePrefix);
  for (int k = 0; k < kNumWireKinds; ++k) {
    out += StrCat(" ", WireKindName(static_cast<WireKind>(k)), "=", t.sent[k], ":", t.received[k]);
  }
  return out;
}

std::optional<WireTotals> ParseWireLine(std::string_view line) {
  const size_t at = line.find(kWirePrefix);
  if (at == std::string_view::npos) return std::nullopt;
  WireTotals t;
  int found = 0;
  std::string_view rest = line.substr(at + kWirePrefix.size());
  for (int k = 0; k < kNumWireKinds; ++k) {
    const std::string key = StrCat(" ", WireKindName(static_cast<WireKind>(k)), "=");
    const size_t p = rest.find(key);
    if (p == std::string_view::npos) continue;
    long long s = 0, r = 0;
    if (std::sscanf(std::string(rest.substr(p + key.size(), 48)).c_str(), "%lld:%lld", &s, &r) != 2) return std::nullopt;
    t.sent[k] = s;
    t.received[k] = r;
    ++found;
  }
  if (found == 0) return std::nullopt;
  return t;
}

WireTotals WireTotals::operator-(const WireTotals& earlier) const {
  WireTotals d;
  for (int k = 0; k < kNumWireKinds; ++k) {
    d.sent[k] = sent[k] - earlier.sent[k];
    d.received[k] = received[k] - earlier.received[k];
  }
  return d;
}

std::string WireTotals::Describe() const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(total()) / 1e6);
  std::string out = buf, parts;
  for (int k = 0; k < kNumWireKinds; ++k) {
    const int64_t b = sent[k] + received[k];
    if (b == 0) continue;
    std::snprintf(buf, sizeof(buf), "%s%s %.1f", parts.empty() ? "" : ", ",
                  std::string(WireKindName(static_cast<WireKind>(k))).c_str(), static_cast<double>(b) / 1e6);
    parts += buf;
  }
  return parts.empty() ? out : StrCat(out, " (", parts, ")");
}

absl::StatusOr<std::shared_ptr<WireCounters>> WireCounters::Create() {
  const int fd = memfd_create("fanout-wire", MFD_CLOEXEC);
  if (fd < 0) return absl::InternalError(StrCat("memfd_create: ", std::strerror(errno)));
  if (ftruncate(fd, sizeof(Page)) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::InternalError(StrCat("ftruncate: ", std::strerror(err)));
  }
  return Map(fd);  // the page starts zeroed
}

absl::StatusOr<std::shared_ptr<WireCounters>> WireCounters::Map(int fd) {
  void* p = mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    return absl::InternalError(StrCat("cannot map the wire counters (fd ", fd, "): ", std::strerror(err)));
  }
  return std::shared_ptr<WireCounters>(new WireCounters(fd, static_cast<Page*>(p)));
}

WireCounters::~WireCounters() {
  munmap(page_, sizeof(Page));
  ::close(fd_);
}

void WireCounters::Add(WireKind kind, int64_t sent, int64_t received) {
  const int k = static_cast<int>(kind);
  if (sent != 0) page_->sent[k].fetch_add(sent, std::memory_order_relaxed);
  if (received != 0) page_->received[k].fetch_add(received, std::memory_order_relaxed);
}

WireTotals WireCounters::Read() const {
  WireTotals t;
  for (int k = 0; k < kNumWireKinds; ++k) {
    t.sent[k] = page_->sent[k].load(std::memory_order_relaxed);
    t.received[k] = page_->received[k].load(std::memory_order_relaxed);
  }
  return t;
}

}  // namespace fanout::base
