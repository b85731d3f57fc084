// Fuzzes the ip_config.txt parser (base/ip_config.cc) on the file's text. What it accepts is a
// non-empty machine list of IP literals or host names (RFC 1123 characters, at most 253) and
// ports in 1..65535, each naming a real line; and every entry survives HostPort/SplitHostPort.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "base/ip_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto machines = fanout::base::ParseIpConfig(text, "ip_config.txt");
  if (!machines.ok()) return 0;
  FANOUT_CHECK(!machines->empty());
  int last_line = 0;
  for (const auto& m : *machines) {
    FANOUT_CHECK(m.port >= 1 && m.port <= 65535) << m.port;
    FANOUT_CHECK(m.line > last_line);
    last_line = m.line;
    unsigned char buf[16];
    const bool literal = inet_pton(AF_INET, m.ip.c_str(), buf) == 1 || inet_pton(AF_INET6, m.ip.c_str(), buf) == 1;
    if (!literal) {
      FANOUT_CHECK(!m.ip.empty() && m.ip.size() <= 253) << m.ip;
      FANOUT_CHECK(m.ip.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") ==
                   std::string::npos)
          << m.ip;
      FANOUT_CHECK(m.ip.front() != '-' && m.ip.front() != '.' && m.ip.back() != '-' && m.ip.back() != '.') << m.ip;
    }
    const std::string hp = fanout::base::HostPort(m.ip, m.port);
    auto back = fanout::base::SplitHostPort(hp);
    FANOUT_CHECK(back.ok()) << hp;
    FANOUT_CHECK(back->host == m.ip && back->port == m.port) << hp;
  }
  return 0;
}
