// Whether the other machines of a job still answer, watched from one process: a link cut (a cable,
// a switch, a namespace's veth set down) makes no TCP error for minutes, so a trainer blocked in an
// all-reduce or a sampler waiting on a reply would wait out their timeouts (--comm-timeout,
// --deadline: minutes) with the job silent. The watch calls a server of every other machine
// each interval (GetMetadata, a few hundred bytes, on a connection of its own) and reports a
// machine that has answered none of them for `timeout_s`.
//
// A slow link is not a dead one: the calls are tiny and need only to arrive within the timeout,
// whatever else the link carries (at 10 Mbit/s a full socket buffer drains in about 3 s).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/ip_config.h"
#include "rpc/client_options.h"

namespace fanout::rpc {

struct ReachabilityOptions {
  double interval_s = 1;   // between calls to one machine
  double timeout_s = 10;   // silent this long: unreachable (<= 0: no watch)
};

// Thread-safe; the watch stops when the object is destroyed.
class ReachabilityWatch {
 public:
  // Watches every machine of `servers` but `self` (a machine answers when any of its servers
  // does; a machine with none is not watched). `on_unreachable` is called once, from the watch's
  // own thread, with a message naming the machine and its address; when no other machine has
  // answered (and there are at least two), the message says that this machine's own link is down
  // instead. Returns null with nothing to watch (one machine, or timeout_s <= 0).
  static std::unique_ptr<ReachabilityWatch> Start(const base::ServerMap& servers, int self,
                                                  const ClientOptions& client, const ReachabilityOptions& options,
                                                  std::function<void(const std::string&)> on_unreachable);
  ~ReachabilityWatch();

  ReachabilityWatch(const ReachabilityWatch&) = delete;
  ReachabilityWatch& operator=(const ReachabilityWatch&) = delete;

 private:
  struct Peer {
    int machine = 0;
    std::vector<std::string> addresses;  // its servers
    double last_answer = 0;  // seconds on the watch's clock
  };
  ReachabilityWatch() = default;
  void Watch(size_t peer, ClientOptions client);
  // Called with mu_ held after peer `p` failed: reports once when it is past the timeout.
  void CheckLocked(size_t p, double now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double Now() const;

  int self_ = 0;
  std::string self_address_;
  ReachabilityOptions options_;
  std::function<void(const std::string&)> on_unreachable_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool reported_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Peer> peers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
  double start_ = 0;
};

}  // namespace fanout::rpc
