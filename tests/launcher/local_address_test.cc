#include "launcher/local_address.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace fanout::launcher {
namespace {

TEST(LocalAddress, HostNamesResolveAndLiteralsStayAsWritten) {
  auto lit = ResolveHost("10.1.2.3");
  ASSERT_TRUE(lit.ok());
  EXPECT_EQ(*lit, std::vector<std::string>{"10.1.2.3"});
  auto local = ResolveHost("localhost");  // /etc/hosts on every Debian machine
  ASSERT_TRUE(local.ok()) << local.status();
  bool loopback = false;
  for (const std::string& a : *local) loopback |= IsLocalAddress(a, {});
  EXPECT_TRUE(loopback);
  auto bad = ResolveHost("no-such-host.invalid");  // .invalid never resolves (RFC 2606)
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("host 'no-such-host.invalid' does not resolve"), std::string::npos)
      << bad.status();
}

TEST(LocalAddress, LoopbackIsAlwaysLocal) {
  for (const char* ip : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "0:0::1",
                         "::ffff:127.0.0.2"}) {
    EXPECT_TRUE(IsLocalAddress(ip, {})) << ip;
  }
}

TEST(LocalAddress, InterfaceAddressesAreLocalOthersAreNot) {
  const std::vector<std::string> mine = {"10.1.2.3", "fe80::abcd:1", "192.168.0.7"};
  EXPECT_TRUE(IsLocalAddress("10.1.2.3", mine));
  EXPECT_TRUE(IsLocalAddress("::ffff:10.1.2.3", mine));          // IPv4-mapped form
  EXPECT_TRUE(IsLocalAddress("fe80:0:0:0:0:0:abcd:1", mine));    // another spelling
  EXPECT_FALSE(IsLocalAddress("10.1.2.4", mine));
  EXPECT_FALSE(IsLocalAddress("128.0.0.1", mine));
  EXPECT_FALSE(IsLocalAddress("fe80::abcd:2", mine));
  EXPECT_FALSE(IsLocalAddress("node1", mine));
  EXPECT_FALSE(IsLocalAddress("", mine));
}

TEST(LocalAddress, ThisHostsInterfacesIncludeLoopback) {
  auto addrs = InterfaceAddresses();
  ASSERT_TRUE(addrs.ok()) << addrs.status();
  ASSERT_FALSE(addrs->empty());
  EXPECT_NE(std::find(addrs->begin(), addrs->end(), "127.0.0.1"), addrs->end());
  for (const std::string& a : *addrs) EXPECT_TRUE(IsLocalAddress(a, *addrs)) << a;
}

}  // namespace
}  // namespace fanout::launcher
