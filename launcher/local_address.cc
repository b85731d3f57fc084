#include "launcher/local_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include "base/strings.h"
#include "base/unique_fd.h"

namespace fanout::launcher {
namespace {

// An address in binary form; IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) become IPv4.
struct Ip {
  int family = AF_UNSPEC;
  std::array<unsigned char, 16> bytes{};
  bool operator==(const Ip&) const = default;
};

std::optional<Ip> ParseIp(const std::string& text) {
  Ip ip;
  if (inet_pton(AF_INET, text.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (inet_pton(AF_INET6, text.c_str(), ip.bytes.data()) != 1) return std::nullopt;
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.bytes.data(), kMapped, 12) == 0) {
    std::memmove(ip.bytes.data(), ip.bytes.data() + 12, 4);
    std::memset(ip.bytes.data() + 4, 0, 12);
    ip.family = AF_INET;
  } else {
    ip.family = AF_INET6;
  }
  return ip;
}

bool IsLoopback(const Ip& ip) {
  if (ip.family == AF_INET) return ip.bytes[0] == 127;
  static constexpr std::array<unsigned char, 16> kLoopback6 = {0, 0, 0, 0, 0, 0, 0, 0,
                                                              0, 0, 0, 0, 0, 0, 0, 1};
  return ip.bytes == kLoopback6;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> InterfaceAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return absl::InternalError(base::StrCat("getifaddrs: ", std::strerror(errno)));
  }
  std::vector<std::string> out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
      inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
      inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));
    } else {
      continue;
    }
    out.emplace_back(text);
  }
  freeifaddrs(list);
  return out;
}

bool IsLocalAddress(const std::string& ip, const std::vector<std::string>& interface_addresses) {
  std::optional<Ip> want = ParseIp(ip);
  if (!want) return false;
  if (IsLoopback(*want)) return true;
  for (const std::string& a : interface_addresses) {
    if (ParseIp(a) == want) return true;
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> ResolveHost(const std::string& host) {
  if (ParseIp(host)) return std::vector<std::string>{host};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return absl::NotFoundError(base::StrCat("host '", host, "' does not resolve: ", gai_strerror(rc)));
  }
  std::vector<std::string> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text, sizeof(text));
    } else {
      continue;
    }
    out.emplace_back(text);
  }
  freeaddrinfo(found);
  if (out.empty()) return absl::NotFoundError(base::StrCat("host '", host, "' has no IPv4 or IPv6 address"));
  return out;
}

bool AcceptsConnections(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a != nullptr && !ok; a = a->ai_next) {
    const base::UniqueFd fd(socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p = {fd.get(), POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      ok = poll(&p, 1, timeout_ms) == 1 && getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
  }
  freeaddrinfo(found);
  return ok;
}

}  // namespace fanout::launcher
