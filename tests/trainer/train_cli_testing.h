// What the fanout-train process tests share (train_cli_test.cc, typed_train_cli_test.cc): ranks of
// a job as child processes with the environment fanout-launch would give them. FANOUT_TRAIN_BIN
// comes from tests/trainer/CMakeLists.txt.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "base/strings.h"
#include "nlohmann/json.hpp"
#include "tests/launcher/launcher_test_util.h"

namespace fanout::testing {

using RankProcess = launcher::testing::ChildRun;

// A port nothing listens on now (the kernel's pick for a throwaway socket).
inline int FreePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// Every rank of a job as a process, with the environment fanout-launch would give it.
inline std::vector<std::unique_ptr<RankProcess>> StartRanks(int world, const std::vector<std::string>& args) {
  const std::string coord = base::StrCat("127.0.0.1:", FreePort());
  std::vector<std::unique_ptr<RankProcess>> ranks;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> a = {FANOUT_TRAIN_BIN};
    a.insert(a.end(), args.begin(), args.end());
    ranks.push_back(std::make_unique<RankProcess>(
        a, "",
        std::vector<std::string>{base::StrCat("FANOUT_RANK=", r), base::StrCat("FANOUT_WORLD_SIZE=", world),
                                 base::StrCat("FANOUT_COORDINATOR=", coord)}));
  }
  return ranks;
}

// The figures a run printed (step and epoch losses and accuracies, test accuracy), one per line,
// without the timings: what two runs that must train alike compare.
inline std::string TrainingFigures(const std::string& text) {
  static const std::regex figures(
      "(epoch [0-9]+ step [0-9]+/[0-9]+ \\| loss [0-9.e-]+ \\| acc [0-9.e-]+|epoch [0-9]+ \\| loss [0-9.]+|test accuracy [0-9.]+)");
  std::string out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), figures); it != std::sregex_iterator(); ++it) {
    out += (*it)[0].str() + "\n";
  }
  return out;
}

inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace fanout::testing
