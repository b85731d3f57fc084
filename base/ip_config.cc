#include "base/ip_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "base/text_reader.h"

namespace fanout::base {
namespace {

using base::StrCat;

bool IsIpLiteral(const std::string& s) {
  if (s.find('\0') != std::string::npos) return false;  // inet_pton would stop at it
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// A host name as RFC 1123 allows: dot-separated labels of letters, digits and inner hyphens,
// 1-63 characters each, 253 in all, and a last label that is not all digits (that would be a
// malformed IPv4 address, such as 10.0.0.256).
bool IsHostName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  bool last_all_digits = false;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    const std::string_view label(s.data() + start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    last_all_digits = true;
    for (char c : label) {
      const bool digit = c >= '0' && c <= '9';
      if (!digit && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && c != '-') return false;
      last_all_digits &= digit;
    }
    start = dot + 1;
  }
  return !last_all_digits;
}

// Splits on spaces, tabs and carriage returns (files written on Windows end lines with \r\n).
std::vector<std::string> Fields(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (i < line.size()) {
    while (i < line.size() && blank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !blank(line[i])) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<MachineEntry>> ParseIpConfig(std::string_view text,
                                                        std::string_view filename) {
  std::vector<MachineEntry> machines;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string> f = Fields(line);
    if (f.empty()) continue;
    const std::string where = StrCat(filename, ":", line_no, ": ");
    if (f.size() > 2) {
      return absl::InvalidArgumentError(StrCat(
          where, "expected 'HOST [PORT]', found ", f.size(),
          " fields (the number of servers per machine is --num-servers, not part of the file)"));
    }
    MachineEntry m;
    m.line = line_no;
    m.ip = f[0];
    if (!IsIpLiteral(m.ip) && !IsHostName(m.ip)) {
      return absl::InvalidArgumentError(
          StrCat(where, "'", m.ip, "' is not an IPv4 or IPv6 address or a host name"));
    }
    if (f.size() == 2) {
      int64_t port = 0;
      if (!base::ParseInt64(f[1], &port) || port < 1 || port > 65535) {
        return absl::InvalidArgumentError(
            StrCat(where, "port '", f[1], "' is not a number in 1..65535"));
      }
      m.port = static_cast<int>(port);
    }
    machines.push_back(std::move(m));
  }
  if (machines.empty()) {
    return absl::InvalidArgumentError(
        StrCat(filename, ": lists no machines (expected one 'HOST [PORT]' per line)"));
  }
  return machines;
}

absl::StatusOr<std::vector<MachineEntry>> LoadIpConfig(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(StrCat(path, ": is a folder, not an ip_config file"));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(StrCat(path, ": cannot open ip_config"));
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) return absl::DataLossError(StrCat(path, ": cannot read ip_config"));
  return ParseIpConfig(text.str(), path);
}

absl::Status CheckMachinesMatchPartitions(size_t num_machines, const std::string& ip_config_path,
                                          int num_parts, const std::string& part_config_path) {
  if (num_machines == static_cast<size_t>(num_parts)) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat(
      ip_config_path, " lists ", num_machines, " machine", num_machines == 1 ? "" : "s", " but ",
      part_config_path, " has ", num_parts, " partition", num_parts == 1 ? "" : "s",
      " (num_parts); machine k serves partition k, so list exactly ", num_parts,
      " machines or partition the graph into ", num_machines));
}

absl::StatusOr<HostAndPort> SplitHostPort(std::string_view host_port) {
  HostAndPort hp;
  std::string_view port_text;
  if (host_port.starts_with("[")) {  // [v6]:port
    const size_t close = host_port.find("]:");
    if (close != std::string_view::npos) {
      hp.host = std::string(host_port.substr(1, close - 1));
      port_text = host_port.substr(close + 2);
    }
  } else if (const size_t colon = host_port.rfind(':'); colon != std::string_view::npos) {
    hp.host = std::string(host_port.substr(0, colon));
    port_text = host_port.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) hp.host.clear();  // an IPv6 literal needs brackets
  }
  int64_t port = -1;
  if (hp.host.empty() || !ParseInt64(port_text, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError("expected host:port with a port in [0, 65535]");
  }
  hp.port = static_cast<int>(port);
  return hp;
}

std::string HostPort(const std::string& ip, int port) {
  return ip.find(':') != std::string::npos ? StrCat("[", ip, "]:", port) : StrCat(ip, ":", port);
}

std::vector<std::string> ServerMap::CopiesOf(size_t p) const {
  std::vector<std::string> all = p < addresses.size() ? addresses[p] : std::vector<std::string>();
  const std::vector<std::string>& r = ReplicasOf(p);
  all.insert(all.end(), r.begin(), r.end());
  return all;
}

std::string ServerMap::HostOf(int machine) const {
  if (machine < 0 || machine >= static_cast<int>(addresses.size()) || addresses[machine].empty()) return "";
  absl::StatusOr<HostAndPort> hp = SplitHostPort(addresses[machine][0]);
  return hp.ok() ? hp->host : std::string();
}

bool ServerMap::OnMachine(const std::string& address, int machine) const {
  if (machine < 0 || machine >= static_cast<int>(addresses.size())) return false;
  const std::vector<std::string>& own = addresses[machine];
  if (std::find(own.begin(), own.end(), address) != own.end()) return true;
  const std::string host = HostOf(machine);
  if (host.empty()) return false;
  for (const std::vector<std::string>& r : replicas) {
    if (std::find(r.begin(), r.end(), address) == r.end()) continue;
    absl::StatusOr<HostAndPort> hp = SplitHostPort(address);
    return hp.ok() && hp->host == host;
  }
  return false;
}

const std::vector<std::string>& ServerMap::ReplicasOf(size_t p) const {
  static const std::vector<std::string> kNone;
  return p < replicas.size() ? replicas[p] : kNone;
}

absl::StatusOr<ServerMap> ParseServerList(const std::string& text, int num_parts) {
  ServerMap map;
  map.addresses.resize(num_parts);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string entry(StripSpaces(std::string_view(text).substr(pos, comma - pos)));
    pos = comma + 1;
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    const bool replica = eq != std::string::npos && eq > 0 && entry[eq - 1] == 'r';
    int64_t part = -1;
    if (eq == std::string::npos || !ParseInt64(entry.substr(0, replica ? eq - 1 : eq), &part) || part < 0 ||
        part >= num_parts || eq + 1 == entry.size()) {
      return absl::InvalidArgumentError(StrCat("server entry '", entry,
                                               "' is not PART=HOST:PORT (or PARTr=HOST:PORT for a replica) with PART in [0, ",
                                               num_parts, ")"));
    }
    if (replica) {
      map.replicas.resize(num_parts);
      map.replicas[part].push_back(entry.substr(eq + 1));
    } else {
      map.addresses[part].push_back(entry.substr(eq + 1));
    }
  }
  return map;
}

std::string FormatServerList(const ServerMap& map) {
  std::vector<std::string> entries;
  for (size_t p = 0; p < map.addresses.size(); ++p) {
    for (const std::string& a : map.addresses[p]) entries.push_back(StrCat(p, "=", a));
  }
  for (size_t p = 0; p < map.replicas.size(); ++p) {
    for (const std::string& a : map.replicas[p]) entries.push_back(StrCat(p, "r=", a));
  }
  return StrJoin(entries, ",");
}

ServerMap ServersOf(const std::vector<MachineEntry>& machines, int num_servers, int replicas) {
  ServerMap map;
  const size_t M = machines.size();
  map.addresses.resize(M);
  for (size_t k = 0; k < M; ++k) {
    for (int s = 0; s < num_servers; ++s) map.addresses[k].push_back(HostPort(machines[k].ip, machines[k].port + s));
  }
  if (replicas > 0) {
    map.replicas.assign(M, std::vector<std::string>(replicas));
    for (size_t k = 0; k < M; ++k) {
      for (int j = 0; j < replicas; ++j) {
        map.replicas[ReplicaPart(static_cast<int>(k), j, static_cast<int>(M))][j] =
            HostPort(machines[k].ip, machines[k].port + num_servers + j);
      }
    }
  }
  return map;
}

int ReplicaPart(int machine, int j, int num_machines) {
  return ((machine - 1 - j) % num_machines + num_machines) % num_machines;
}

absl::StatusOr<ServerMap> ResolveServers(const std::string& servers, const std::string& job_servers,
                                         const std::string& ip_config, const std::string& part_config,
                                         int num_servers, int num_parts) {
  if (!servers.empty()) return ParseServerList(servers, num_parts);
  if (!job_servers.empty()) {
    absl::StatusOr<ServerMap> map = ParseServerList(job_servers, num_parts);
    if (!map.ok()) return absl::InvalidArgumentError(StrCat("FANOUT_SERVERS: ", map.status().message()));
    return map;
  }
  if (ip_config.empty()) {
    ServerMap map;
    map.addresses.resize(num_parts);
    if (num_parts == 1) return map;  // the single partition is read from its files
    return absl::InvalidArgumentError(
        "--servers or --ip-config (FANOUT_IP_CONFIG) is needed to reach the other partitions");
  }
  absl::StatusOr<std::vector<MachineEntry>> machines = LoadIpConfig(ip_config);
  if (!machines.ok()) return machines.status();
  if (absl::Status s = CheckMachinesMatchPartitions(machines->size(), ip_config, num_parts, part_config); !s.ok()) {
    return s;
  }
  return ServersOf(*machines, num_servers);
}

}  // namespace fanout::base
