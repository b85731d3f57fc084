#include "rpc/reachability.h"

#include <chrono>

#include "base/strings.h"
#include "rpc/graph_client.h"

namespace fanout::rpc {

using base::StrCat;

std::unique_ptr<ReachabilityWatch> ReachabilityWatch::Start(const base::ServerMap& servers, int self,
                                                            const ClientOptions& client,
                                                            const ReachabilityOptions& options,
                                                            std::function<void(const std::string&)> on_unreachable) {
  if (options.timeout_s <= 0) return nullptr;
  std::unique_ptr<ReachabilityWatch> w(new ReachabilityWatch());
  w->self_ = self;
  w->options_ = options;
  w->on_unreachable_ = std::move(on_unreachable);
  w->start_ = w->Now();
  const int n = static_cast<int>(servers.addresses.size());
  if (self >= 0 && self < n && !servers.addresses[self].empty()) w->self_address_ = servers.addresses[self][0];
  size_t peers = 0;
  {
    absl::MutexLock lock(&w->mu_);
    for (int k = 0; k < n; ++k) {
      if (k == self || servers.addresses[k].empty()) continue;
      w->peers_.push_back({k, servers.addresses[k], w->start_});
    }
    if (w->peers_.empty()) return nullptr;
    peers = w->peers_.size();
  }
  // One call at a time per machine, on its own connection (not queued behind the job's calls on
  // a shared one), no retries: the next interval is the retry.
  ClientOptions watch = client;
  watch.own_connection = true;
  watch.max_attempts = 1;
  watch.deadline_seconds = std::max(1.0, std::min(options.timeout_s / 2, 5.0));
  for (size_t p = 0; p < peers; ++p) w->threads_.emplace_back([w = w.get(), p, watch] { w->Watch(p, watch); });
  return w;
}

ReachabilityWatch::~ReachabilityWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

double ReachabilityWatch::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void ReachabilityWatch::Watch(size_t p, ClientOptions client) {
  std::vector<std::unique_ptr<GraphClient>> servers;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& address : peers_[p].addresses)
      servers.push_back(GraphClient::Connect(address, client));
  }
  const absl::Duration interval = absl::Seconds(options_.interval_s);
  size_t at = 0;  // the server that answered last: asked first
  for (;;) {
    const absl::Time next = absl::Now() + interval;
    // The machine answers when any of its servers does (a replica stands in for a stopped one).
    bool answered = false;
    for (size_t i = 0; i < servers.size() && !answered; ++i) {
      answered = servers[(at + i) % servers.size()]->GetMetadata().ok();
      if (answered) at = (at + i) % servers.size();
    }
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    const double now = Now();
    if (answered) {
      peers_[p].last_answer = now;
    } else {
      CheckLocked(p, now);
    }
    if (mu_.AwaitWithDeadline(absl::Condition(&stopping_), next)) return;
  }
}

void ReachabilityWatch::CheckLocked(size_t p, double now) {
  if (reported_ || now - peers_[p].last_answer < options_.timeout_s) return;
  // Is it them, or us? When no other machine answered recently either, it is this machine's link.
  int silent = 0;
  for (const Peer& q : peers_) silent += now - q.last_answer >= options_.timeout_s / 2;
  std::string message;
  const int silent_for = static_cast<int>(now - peers_[p].last_answer);
  if (peers_.size() >= 2 && silent == static_cast<int>(peers_.size())) {
    message = StrCat("machine ", self_, " (", self_address_, ") has reached none of the other ", peers_.size(),
                     " machines for ", silent_for, " s: its own network link is down (or every other machine is)");
  } else {
    const std::vector<std::string>& at = peers_[p].addresses;
    message = StrCat("machine ", peers_[p].machine, " (server", at.size() > 1 ? "s " : " ",
                     base::StrJoin(at, ", "), ") has not answered machine ", self_, " for ",
                     silent_for, " s: unreachable (its link is down, or it stopped)");
  }
  reported_ = true;
  on_unreachable_(message);
}

}  // namespace fanout::rpc
