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
      w->peers_.push_back({k, servers.addresses[k][0], w->start_});
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
  std::string address;
  {
    absl::MutexLock lock(&mu_);
    address = peers_[p].address;
  }
  std::unique_ptr<GraphClient> c = GraphClient::Connect(address, client);
  const absl::Duration interval = absl::Seconds(options_.interval_s);
  for (;;) {
    const absl::Time next = absl::Now() + interval;
    const bool answered = c->GetMetadata().ok();
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
    message = StrCat("machine ", peers_[p].machine, " (server ", peers_[p].address, ") has not answered machine ",
                     self_, " for ", silent_for, " s: unreachable (its link is down, or it stopped)");
  }
  reported_ = true;
  on_unreachable_(message);
}

}  // namespace fanout::rpc
