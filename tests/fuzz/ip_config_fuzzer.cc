// Fuzzes the ip_config.txt parser (launcher/ip_config.cc) on the file's text. What it accepts is a
// non-empty machine list of IP literals and ports in 1..65535, each naming a real line.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "core/ip_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto machines = fanout::core::ParseIpConfig(text, "ip_config.txt");
  if (!machines.ok()) return 0;
  FANOUT_CHECK(!machines->empty());
  int last_line = 0;
  for (const auto& m : *machines) {
    FANOUT_CHECK(m.port >= 1 && m.port <= 65535) << m.port;
    FANOUT_CHECK(m.line > last_line);
    last_line = m.line;
    unsigned char buf[16];
    FANOUT_CHECK(inet_pton(AF_INET, m.ip.c_str(), buf) == 1 ||
                 inet_pton(AF_INET6, m.ip.c_str(), buf) == 1)
        << m.ip;
    std::string hp = fanout::core::HostPort(m.ip, m.port);
    FANOUT_CHECK(hp.size() > m.ip.size());
  }
  return 0;
}
