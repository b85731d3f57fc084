#include "launcher/ip_config.h"

#include <arpa/inet.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/strings.h"
#include "core/text_reader.h"

namespace fanout::launcher {
namespace {

using core::StrCat;

bool IsIpLiteral(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
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
          where, "expected 'IP [PORT]', found ", f.size(),
          " fields (the number of servers per machine is --num-servers, not part of the file)"));
    }
    MachineEntry m;
    m.line = line_no;
    m.ip = f[0];
    if (!IsIpLiteral(m.ip)) {
      return absl::InvalidArgumentError(
          StrCat(where, "'", m.ip, "' is not an IPv4 or IPv6 address (machines are listed by IP)"));
    }
    if (f.size() == 2) {
      int64_t port = 0;
      if (!core::ParseInt64(f[1], &port) || port < 1 || port > 65535) {
        return absl::InvalidArgumentError(
            StrCat(where, "port '", f[1], "' is not a number in 1..65535"));
      }
      m.port = static_cast<int>(port);
    }
    machines.push_back(std::move(m));
  }
  if (machines.empty()) {
    return absl::InvalidArgumentError(
        StrCat(filename, ": lists no machines (expected one 'IP [PORT]' per line)"));
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

std::string HostPort(const std::string& ip, int port) {
  return ip.find(':') != std::string::npos ? StrCat("[", ip, "]:", port) : StrCat(ip, ":", port);
}

}  // namespace fanout::launcher
