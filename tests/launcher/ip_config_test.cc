#include "base/ip_config.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::base {
namespace {

using ::testing::HasSubstr;

TEST(IpConfig, CommentsBlankLinesDefaultPortAndIpv6) {
  auto m = base::ParseIpConfig(
      "# cluster\n"
      "\n"
      "10.0.0.1\n"
      "  10.0.0.2   31000   # second machine\n"
      "\t::1\t40000\r\n"
      "   \n"
      "fe80::1",
      "ip_config.txt");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[0].ip, "10.0.0.1");
  EXPECT_EQ((*m)[0].port, 30050);  // DGL's default
  EXPECT_EQ((*m)[0].line, 3);
  EXPECT_EQ((*m)[1].ip, "10.0.0.2");
  EXPECT_EQ((*m)[1].port, 31000);
  EXPECT_EQ((*m)[1].line, 4);
  EXPECT_EQ((*m)[2].ip, "::1");
  EXPECT_EQ((*m)[2].port, 40000);
  EXPECT_EQ((*m)[3].ip, "fe80::1");
  EXPECT_EQ((*m)[3].port, kDefaultIpConfigPort);
}

TEST(IpConfig, BadPortNamesFileLineAndValue) {
  for (const char* port : {"abc", "0", "65536", "-1", "30050x"}) {
    auto m = base::ParseIpConfig(std::string("10.0.0.1\n10.0.0.2 ") + port + "\n", "ip.txt");
    ASSERT_FALSE(m.ok()) << port;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr("ip.txt:2: port '")) << port;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr("1..65535")) << port;
  }
  EXPECT_TRUE(base::ParseIpConfig("10.0.0.1 65535", "ip.txt").ok());
}

TEST(IpConfig, BadAddressNamesFileLineAndValue) {
  for (const char* ip : {"10.0.0.256", "10.0.0", "[::1]", "10.0.0.1:30050", "node_1", "-node", "node-", "a..b",
                         "n\xc3\xb6" "de"}) {
    auto m = base::ParseIpConfig(std::string("# c\n") + ip + " 30050\n", "ip.txt");
    ASSERT_FALSE(m.ok()) << ip;
    EXPECT_EQ(m.status().message(),
              std::string("ip.txt:2: '") + ip + "' is not an IPv4 or IPv6 address or a host name");
  }
  EXPECT_FALSE(base::ParseIpConfig(std::string(64, 'a') + ".example\n", "ip.txt").ok()) << "a label over 63";
  // Found by the fuzzer: a NUL after a valid literal ("::") passed inet_pton, which stops at it.
  EXPECT_FALSE(base::ParseIpConfig(std::string("::\0\1]:\n", 7), "ip.txt").ok());
}

TEST(IpConfig, HostNamesAreAccepted) {
  // Machines by IP or host name (Kubernetes pod DNS names, Slurm node names).
  auto m = base::ParseIpConfig("node1\nfanout-0.fanout.default.svc.cluster.local 31000\nlocalhost\nGPU-7\n", "ip.txt");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[1].ip, "fanout-0.fanout.default.svc.cluster.local");
  EXPECT_EQ((*m)[1].port, 31000);
  EXPECT_EQ(base::HostPort((*m)[1].ip, (*m)[1].port), "fanout-0.fanout.default.svc.cluster.local:31000");
}

TEST(IpConfig, ExtraFieldsAreAnError) {
  // DGL once took a third column (servers per machine); fanout takes --num-servers.
  auto m = base::ParseIpConfig("10.0.0.1 30050 2\n", "ip.txt");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("ip.txt:1: expected 'HOST [PORT]', found 3 fields"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("--num-servers"));
}

TEST(IpConfig, EmptyFileIsAnError) {
  for (const char* text : {"", "\n\n", "# only a comment\n  # another\n"}) {
    auto m = base::ParseIpConfig(text, "ip.txt");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().message(), "ip.txt: lists no machines (expected one 'HOST [PORT]' per line)");
  }
}

TEST(IpConfig, LoadReadsTheFileAndNamesIt) {
  testing::TempDir dir;
  const std::string path = dir.Sub("ip_config.txt");
  testing::WriteText(path, "127.0.0.1 30100\n127.0.0.2\n");
  auto m = base::LoadIpConfig(path);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[1].ip, "127.0.0.2");

  testing::WriteText(path, "127.0.0.1 x\n");
  m = base::LoadIpConfig(path);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr(path + ":1: port 'x'"));

  m = base::LoadIpConfig(dir.Sub("missing.txt"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), dir.Sub("missing.txt") + ": cannot open ip_config");
  m = base::LoadIpConfig(dir.path());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("is a folder"));
}

TEST(IpConfig, HostPortBracketsIpv6) {
  EXPECT_EQ(base::HostPort("10.0.0.1", 30050), "10.0.0.1:30050");
  EXPECT_EQ(base::HostPort("::1", 30050), "[::1]:30050");
}

TEST(IpConfig, SplitHostPortInvertsHostPort) {
  for (const auto& [host, port] : std::vector<std::pair<std::string, int>>{
           {"10.0.0.1", 30050}, {"::1", 0}, {"fe80::1", 65535}, {"node-3.cluster.local", 29500}}) {
    auto hp = base::SplitHostPort(base::HostPort(host, port));
    ASSERT_TRUE(hp.ok()) << hp.status();
    EXPECT_EQ(hp->host, host);
    EXPECT_EQ(hp->port, port);
  }
  for (const char* bad : {"", "10.0.0.1", ":80", "h:", "h:65536", "h:-1", "h:8x", "[::1]", "[::1]80", "::1"}) {
    EXPECT_FALSE(base::SplitHostPort(bad).ok()) << bad;
  }
}

// Server s of machine k on PORT_k + s, written as the launcher hands it to trainers
// (FANOUT_SERVERS) and read back as --servers is.
TEST(ServerMapTest, ServersOfFollowsIpConfigAndRoundTripsThroughItsText) {
  const std::vector<MachineEntry> machines = {{"10.0.0.1", 30050, 1}, {"::1", 31000, 2}};
  const base::ServerMap map = base::ServersOf(machines, 2);
  const std::string text = base::FormatServerList(map);
  EXPECT_EQ(text, "0=10.0.0.1:30050,0=10.0.0.1:30051,1=[::1]:31000,1=[::1]:31001");
  absl::StatusOr<ServerMap> back = base::ParseServerList(text, 2);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->addresses, map.addresses);
  EXPECT_FALSE(base::ParseServerList(text, 1).ok());  // names partition 1 of a one-partition graph
}

// --replicas R: machine k also serves partitions k-1 .. k-R on the ports after its own servers;
// replicas travel as "Pr=" entries, which no reader can take for a partition's own server.
TEST(ServerMapTest, ReplicasSitOnTheNextMachinesAndRoundTripAsTheirOwnEntries) {
  const std::vector<MachineEntry> machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.2", 30050, 2}, {"10.0.0.3", 30050, 3}};
  const base::ServerMap map = base::ServersOf(machines, 1, 2);
  EXPECT_EQ(map.addresses, (std::vector<std::vector<std::string>>{{"10.0.0.1:30050"}, {"10.0.0.2:30050"}, {"10.0.0.3:30050"}}));
  // Partition 0 on machine 1 (its first replica port) and machine 2 (its second).
  EXPECT_EQ(map.ReplicasOf(0), (std::vector<std::string>{"10.0.0.2:30051", "10.0.0.3:30052"}));
  EXPECT_EQ(map.ReplicasOf(2), (std::vector<std::string>{"10.0.0.1:30051", "10.0.0.2:30052"}));
  EXPECT_EQ(map.CopiesOf(1), (std::vector<std::string>{"10.0.0.2:30050", "10.0.0.3:30051", "10.0.0.1:30052"}));
  const std::string text = base::FormatServerList(map);
  EXPECT_EQ(text, "0=10.0.0.1:30050,1=10.0.0.2:30050,2=10.0.0.3:30050,0r=10.0.0.2:30051,0r=10.0.0.3:30052,"
                  "1r=10.0.0.3:30051,1r=10.0.0.1:30052,2r=10.0.0.1:30051,2r=10.0.0.2:30052");
  absl::StatusOr<ServerMap> back = base::ParseServerList(text, 3);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, map);
  // Without replicas nothing changes, and a map without them answers for none.
  EXPECT_TRUE(base::ServersOf(machines, 1).replicas.empty());
  EXPECT_TRUE(base::ServersOf(machines, 1).ReplicasOf(0).empty());
  for (const char* bad : {"0x=h:1", "r=h:1", "3r=h:1", "0rr=h:1", "0r="}) {
    absl::StatusOr<ServerMap> m = base::ParseServerList(bad, 3);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_THAT(std::string(m.status().message()), ::testing::HasSubstr("PARTr=HOST:PORT for a replica")) << bad;
  }
}

// Which servers a machine's calls reach without crossing a link: its own partition's, and the
// replicas on its host; no other partition's primary, and nothing for no machine.
TEST(ServerMapTest, OnMachineIsItsOwnServersAndTheReplicasOnItsHost) {
  const std::vector<MachineEntry> machines = {{"10.0.0.1", 30050, 1}, {"10.0.0.2", 30050, 2}, {"10.0.0.3", 30050, 3}};
  const base::ServerMap map = base::ServersOf(machines, 1, 1);
  EXPECT_EQ(map.HostOf(1), "10.0.0.2");
  EXPECT_EQ(map.HostOf(3), "");
  EXPECT_TRUE(map.OnMachine("10.0.0.2:30050", 1));   // partition 1's server
  EXPECT_TRUE(map.OnMachine("10.0.0.2:30051", 1));   // partition 0's replica, on machine 1
  EXPECT_FALSE(map.OnMachine("10.0.0.3:30051", 1));  // partition 1's replica, on machine 2
  EXPECT_FALSE(map.OnMachine("10.0.0.1:30050", 1));  // partition 0's own server
  EXPECT_FALSE(map.OnMachine("10.0.0.2:30050", -1));
  EXPECT_FALSE(map.OnMachine("10.0.0.2:30050", 3));
}

}  // namespace
}  // namespace fanout::base
