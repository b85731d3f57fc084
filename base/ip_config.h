// ip_config.txt, DGL's machine list: one machine per line, `HOST [PORT]` (an IPv4 or IPv6
// address or a host name), `#` starts a comment,
// blank lines are skipped. Machine k (the k-th listed) hosts partition k; server s of a machine
// listens on PORT + s. The launcher reads it to start the job, trainers (FANOUT_IP_CONFIG) to
// find the servers: it lives in core so that neither depends on the other. Also the one
// host:port formatter and parser of the project.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::base {

// DGL's default base port, used when a line gives none.
inline constexpr int kDefaultIpConfigPort = 30050;

struct MachineEntry {
  std::string ip;                   // an IPv4 or IPv6 literal or a host name, as written
  int port = kDefaultIpConfigPort;  // base port: server s listens on port + s
  int line = 0;                     // 1-based line of the file it came from
};

// Parses the text of an ip_config file. `filename` only names the file in messages, which read
// "<filename>:<line>: <what is wrong>". At least one machine is required.
absl::StatusOr<std::vector<MachineEntry>> ParseIpConfig(std::string_view text,
                                                        std::string_view filename);

// Reads and parses the file at `path`.
absl::StatusOr<std::vector<MachineEntry>> LoadIpConfig(const std::string& path);

// Checks that ip_config lists one machine per partition; the message names both files and both
// numbers.
absl::Status CheckMachinesMatchPartitions(size_t num_machines, const std::string& ip_config_path,
                                          int num_parts, const std::string& part_config_path);

// "ip:port", with the IPv6 literal in brackets ("[::1]:30050").
std::string HostPort(const std::string& ip, int port);

// The inverse: "host:port" or "[v6]:port" with a port in [0, 65535]; INVALID_ARGUMENT otherwise
// ("expected host:port ...", for the caller to prefix with what the address is for).
struct HostAndPort {
  std::string host;
  int port = 0;
};
absl::StatusOr<HostAndPort> SplitHostPort(std::string_view host_port);

// Where the servers of each partition listen: addresses[p] lists the servers of partition p
// (machine p); a client rotates its calls among them. replicas[p] lists servers of partition p
// on other machines (fanout-launch --replicas): a client reads from them when one is on its own
// machine, or when none of addresses[p] answers; writes go to all of them. The machine's
// reachability is watched through addresses[p] alone, so a replica does not hide a cut link.
struct ServerMap {
  std::vector<std::vector<std::string>> addresses;
  std::vector<std::vector<std::string>> replicas;  // empty, or one list per partition

  // Partition p's primary servers, then its replicas: every copy a write must reach.
  std::vector<std::string> CopiesOf(size_t p) const;
  // Partition p's replicas ({} when it has none).
  const std::vector<std::string>& ReplicasOf(size_t p) const;
  // Machine k's host as this map names it: its own partition's first server's ("" when it has
  // none or k is not a machine).
  std::string HostOf(int machine) const;
  // Whether the server at `address` runs on machine `machine` (-1: none), so that a call to it
  // crosses no link: one of its own partition's servers, or a replica on its host.
  bool OnMachine(const std::string& address, int machine) const;
  bool operator==(const ServerMap&) const = default;
};

// The servers of a job laid out as ip_config says: server s of machine k on PORT_k + s, and
// with `replicas` R, machine k's servers num_servers + j (j < R) serve partition (k - 1 - j) mod M
// as replicas. The one place of that rule.
ServerMap ServersOf(const std::vector<MachineEntry>& machines, int num_servers, int replicas = 0);
// The partition that machine `machine`'s replica j serves: (machine - 1 - j) mod num_machines.
int ReplicaPart(int machine, int j, int num_machines);

// "P=HOST:PORT,Pr=HOST:PORT,..." (several entries per partition allowed; "Pr" is a replica of
// partition P): --servers, and FANOUT_SERVERS as the launcher writes it with FormatServerList.
absl::StatusOr<ServerMap> ParseServerList(const std::string& text, int num_parts);
std::string FormatServerList(const ServerMap& map);

// Where a client process finds every partition's servers, in order of precedence: an explicit
// list (`servers`, --servers), the launcher's resolved list (`job_servers`, FANOUT_SERVERS),
// else `ip_config` with `num_servers` per machine (machine k = partition k, server s on
// PORT + s). With none of them, a one-partition graph needs no server (it is read from its
// files); more partitions are an error naming what is missing. fanout-train and the Python
// data plane (python/fanout) share it.
absl::StatusOr<ServerMap> ResolveServers(const std::string& servers, const std::string& job_servers,
                                         const std::string& ip_config, const std::string& part_config,
                                         int num_servers, int num_parts);

}  // namespace fanout::base
