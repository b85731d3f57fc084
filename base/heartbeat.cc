#include "base/heartbeat.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace fanout::base {

bool StartHeartbeatFromEnvironment() {
  const char* v = std::getenv(kHeartbeatEnv);
  if (v == nullptr) return false;
  char* end = nullptr;
  const double seconds = std::strtod(v, &end);
  if (end == v || !(seconds > 0) || seconds > 3600) return false;
  std::thread([seconds] {
    const auto period = std::chrono::duration<double>(seconds);
    while (true) {
      // One write: atomic on a pipe, so it never interleaves with another write's bytes.
      if (write(STDERR_FILENO, kHeartbeatMarker.data(), kHeartbeatMarker.size()) < 0) return;
      std::this_thread::sleep_for(period);
    }
  }).detach();
  return true;
}

}  // namespace fanout::base
