// Liveness signal from fanout's long-running processes to fanout-launch. A process started by
// the launcher (which sets FANOUT_HEARTBEAT_S) writes kHeartbeatMarker to stderr from a thread
// of its own every that many seconds; the launcher strips the markers from the stream (they
// never reach a console or log, and one written in the middle of a line does not split it) and
// stops the job when a process that has been sending them goes silent: stopped (SIGSTOP),
// frozen, or on a machine the launch host can no longer hear from. Local and ssh processes
// alike, with no port of its own. It does not detect a deadlock of the main thread; collective
// timeouts (--comm-timeout) and call deadlines cover those.
#pragma once

#include <string_view>

namespace fanout::base {

inline constexpr std::string_view kHeartbeatMarker = "\x1e" "fanout-alive" "\x1e";
inline constexpr const char* kHeartbeatEnv = "FANOUT_HEARTBEAT_S";

// Starts the heartbeat thread when FANOUT_HEARTBEAT_S holds a positive number of seconds;
// returns whether it did. Call early in main (before slow start-up work).
bool StartHeartbeatFromEnvironment();

}  // namespace fanout::base
