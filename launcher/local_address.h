// Which ip_config machines are this host: those are started directly, the others over ssh.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::launcher {

// The IPv4 and IPv6 addresses of this host's interfaces (getifaddrs), as text.
absl::StatusOr<std::vector<std::string>> InterfaceAddresses();

// True when `ip` is a loopback address (127.0.0.0/8, ::1, or 127.x written as ::ffff:127.x) or
// equals one of `interface_addresses` (compared as addresses, so "::0:1" equals "::1").
// False for text that is not an IP literal.
bool IsLocalAddress(const std::string& ip, const std::vector<std::string>& interface_addresses);

// The addresses `host` stands for: itself when it is an IP literal, else what the resolver
// (getaddrinfo: /etc/hosts, DNS) gives. NOT_FOUND with the resolver's message when it gives
// nothing.
absl::StatusOr<std::vector<std::string>> ResolveHost(const std::string& host);

// Whether something accepts TCP connections on `host`:`port` (any address `host` resolves to)
// within `timeout_ms`; the connection is closed at once. False when `host` does not resolve
// (yet: a Kubernetes pod's name resolves once the pod runs).
bool AcceptsConnections(const std::string& host, int port, int timeout_ms);

}  // namespace fanout::launcher
