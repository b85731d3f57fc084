#include "launcher/local_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/strings.h"

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
    return absl::InternalError(core::StrCat("getifaddrs: ", std::strerror(errno)));
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
    return absl::NotFoundError(core::StrCat("host '", host, "' does not resolve: ", gai_strerror(rc)));
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
  if (out.empty()) return absl::NotFoundError(core::StrCat("host '", host, "' has no IPv4 or IPv6 address"));
  return out;
}

}  // namespace fanout::launcher
