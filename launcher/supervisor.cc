#include "launcher/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <utility>

#include "base/strings.h"
#include "launcher/local_address.h"
#include "launcher/signals.h"

namespace fanout::launcher {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using std::chrono::milliseconds;

std::string LogName(const ProcessSpec& spec) {
  std::string name = spec.Label();
  std::replace(name.begin(), name.end(), ' ', '-');
  return name + ".log";
}

std::chrono::milliseconds Seconds(double s) { return milliseconds(static_cast<int64_t>(s * 1000)); }

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? StrCat("SIG", abbrev) : StrCat("signal ", sig);
}

}  // namespace

JobSupervisor::JobSupervisor(JobPlan plan, SupervisorOptions options)
    : plan_(std::move(plan)), options_(std::move(options)) {}

JobSupervisor::~JobSupervisor() {
  // Run() leaves nothing behind; this only matters if it never ran to its end.
  children_.clear();
}

void JobSupervisor::Say(const std::string& message) {
  std::string line = StrCat("fanout-launch: ", message);
  WriteAll(options_.console_err, line + "\n");
  if (launcher_log_fd_.valid()) WriteAll(launcher_log_fd_.get(), StampedLine(line));
}

std::string JobSupervisor::Who(const Child& c) const {
  return StrCat(c.spec->Label(), " (", c.spec->Describe(), "; ",
                c.spec->remote ? StrCat(c.spec->via, " pid ") : "pid ", c.process.pid(), ")");
}

int JobSupervisor::ReadyServers() const {
  int n = 0;
  for (const auto& c : children_) n += c->spec->role == Role::kServer && c->ready;
  return n;
}

int JobSupervisor::Run() {
  start_time_ = Clock::now();
  // Watch signals before the first fork, so that no SIGCHLD or Ctrl-C can be missed.
  absl::StatusOr<SignalWatch> signals = SignalWatch::Start({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  if (!signals.ok()) {
    Say(StrCat("error: ", signals.status().message()));
    return 1;
  }
  signals_ = &*signals;

  std::error_code ec;
  fs::create_directories(options_.log_dir, ec);
  if (ec || !fs::is_directory(options_.log_dir)) {
    Say(StrCat("error: cannot create the log folder ", options_.log_dir, ": ", ec.message()));
    signals_ = nullptr;
    return 1;
  }
  absl::StatusOr<GroupGuard> guard = GroupGuard::Start();
  if (!guard.ok()) {
    Say(StrCat("error: cannot start the guard process: ", guard.status().message()));
    signals_ = nullptr;
    return 1;
  }
  guard_.emplace(std::move(*guard));
  launcher_log_fd_.reset(open((fs::path(options_.log_dir) / "fanout-launch.log").c_str(),
                             O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  const size_t M = std::max<size_t>(plan_.machines.size(), 1);
  if (plan_.only_machine >= 0) {
    Say(StrCat("job ", plan_.job_id, ": machine ", plan_.only_machine, " of ", M, " (--machine-id), ",
               plan_.servers.size(), " server(s) and ", plan_.trainers.size(), " trainer(s) here; logs in ",
               options_.log_dir));
  } else {
    Say(StrCat("job ", plan_.job_id, ": ", M, " machine", M == 1 ? "" : "s", ", ",
               plan_.servers.size() / M, " server(s) and ", plan_.trainers.size() / M,
               " trainer(s) each; logs in ", options_.log_dir));
  }
  peer_seen_.assign(plan_.peer_servers.size(), false);

  for (const ProcessSpec& spec : plan_.servers) {
    if (!StartProcess(spec)) break;
  }
  if (!stopping_) {
    phase_ = Phase::kWaitingForServers;
    ready_deadline_ = Clock::now() + Seconds(options_.server_timeout_s);
  }

  while (!stopping_) {
    milliseconds timeout(1000);
    if (phase_ == Phase::kWaitingForServers || phase_ == Phase::kWaitingForPeers) {
      auto left = std::chrono::duration_cast<milliseconds>(ready_deadline_ - Clock::now());
      timeout = std::clamp(left + milliseconds(1), milliseconds(0),
                           phase_ == Phase::kWaitingForPeers ? milliseconds(250) : timeout);
    }
    PollOnce(timeout);
    if (stopping_) break;
    CheckHeartbeats();
    if (stopping_) break;
    SampleMemory();
    if (phase_ == Phase::kWaitingForServers && ReadyServers() == static_cast<int>(plan_.servers.size()) &&
        !plan_.peer_servers.empty()) {
      Say(StrCat("this machine's ", plan_.servers.size(), " server(s) ready; waiting for the other machines' ",
                 plan_.peer_servers.size(), " (until ", options_.server_timeout_s, " s after the start)"));
      phase_ = Phase::kWaitingForPeers;
    }
    if (phase_ == Phase::kWaitingForPeers) {
      if (PeersReady()) {
        StartTrainers();
      } else if (Clock::now() >= ready_deadline_) {
        std::vector<std::string> late;
        for (size_t i = 0; i < plan_.peer_servers.size(); ++i) {
          const PeerServer& p = plan_.peer_servers[i];
          if (!peer_seen_[i]) late.push_back(StrCat(p.label, " at ", HostPort(p.host, p.port)));
        }
        Fail(StrCat(base::StrJoin(late, ", "), " did not accept connections within ", options_.server_timeout_s,
                    " s (--server-timeout): is that machine's launcher running, and its port reachable?"),
             1);
      }
    } else if (phase_ == Phase::kWaitingForServers) {
      if (ReadyServers() == static_cast<int>(plan_.servers.size())) {
        StartTrainers();
      } else if (Clock::now() >= ready_deadline_) {
        std::vector<std::string> late;
        for (const auto& c : children_) {
          if (!c->ready) late.push_back(Who(*c));
        }
        Fail(StrCat(base::StrJoin(late, ", "), " did not report ready within ",
                    options_.server_timeout_s, " s (--server-timeout); see the server logs in ",
                    options_.log_dir),
             1);
      }
    } else if (phase_ == Phase::kRunning && trainers_done_ == plan_.trainers.size()) {
      Say(StrCat("all ", trainers_done_, " trainers finished; stopping the servers"));
      BeginStop();
    }
  }
  Teardown();
  for (const std::string& line : memory_.Lines()) Say(line);
  for (const auto& [machine, w] : wire_) {
    Say(StrCat("machine ", machine, " (", w.first, "): its trainers' calls to other machines and collectives moved ",
               w.second.Describe(), "; sent ", static_cast<int64_t>(w.second.total_sent() / 100000) / 10.0,
               " MB, received ", static_cast<int64_t>(w.second.total_received() / 100000) / 10.0, " MB"));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start_time_).count();
  if (exit_code_ == 0) {
    Say(StrCat("job ", plan_.job_id, " done in ", static_cast<int64_t>(secs * 10) / 10.0,
               " s; logs in ", options_.log_dir));
  } else {
    Say(StrCat("job ", plan_.job_id, " failed (exit ", exit_code_, "): ", failure_));
  }
  signals_ = nullptr;
  return exit_code_;
}

bool JobSupervisor::StartProcess(const ProcessSpec& spec) {
  auto c = std::make_unique<Child>();
  c->spec = &spec;
  const std::string log_path = (fs::path(options_.log_dir) / LogName(spec)).string();
  c->log_fd.reset(open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (!c->log_fd.valid()) {
    Fail(StrCat("cannot create ", log_path, ": ", strerror(errno)), 1);
    return false;
  }
  SpawnOptions so;
  so.argv = spec.argv;
  so.env = MergeEnvironment(spec.local_env);
  so.cwd = spec.local_cwd;
  so.stdin_pipe = spec.remote;
  // A remote machine's count is read there, by the script that starts the process (RemoteScript).
  if (!spec.remote) c->oom_kills = ReadOomKillCount();
  absl::StatusOr<Process> p = Process::Spawn(so);
  if (!p.ok()) {
    c->log_fd.reset();
    Fail(StrCat("cannot start ", spec.Label(), " (", spec.Describe(), "): ", p.status().message()), 1);
    return false;
  }
  c->process = std::move(*p);
  guard_->Add(c->process.pid());
  const std::string prefix = StrCat("[", spec.Label(), "] ");
  Child* raw = c.get();
  LineSplitter::LineFn on_line;
  if (spec.role == Role::kServer) {
    on_line = [this, raw](std::string_view line) {
      if (!raw->ready && line.find(kServerReadyMarker) != std::string_view::npos) {
        raw->ready = true;
        Say(StrCat(raw->spec->Label(), " ready on ", raw->spec->address));
      }
    };
  }
  auto on_heartbeat = [raw] {
    raw->heartbeating = true;
    raw->last_heartbeat = Clock::now();
  };
  c->out = std::make_unique<StreamRouter>(prefix, options_.console_out, c->log_fd.get(), on_line, on_heartbeat);
  // The last error line a process wrote to stderr names the job's failure if it is the first.
  auto on_err_line = [this, on_line, raw](std::string_view line) {
    if (on_line) on_line(line);
    // A process's (or, through a trainer's stderr, its samplers') peak memory as it exits.
    if (std::optional<base::MemoryRecord> m = base::ParseMemoryLine(line)) memory_.Add(raw->spec->machine, raw->spec->ip, *m);
    if (std::optional<base::WireTotals> w = base::ParseWireLine(line)) {
      auto& [ip, sum] = wire_[raw->spec->machine];
      ip = raw->spec->ip;
      sum += *w;
    }
    if (LineLevel(line) == 'E') raw->last_error.assign(base::StripSpaces(line).substr(0, 300));
  };
  c->err = std::make_unique<StreamRouter>(prefix, options_.console_err, c->log_fd.get(), on_err_line, on_heartbeat);
  Say(StrCat("started ", spec.Label(), " pid ", c->process.pid(),
             spec.remote ? StrCat(" (", spec.via, spec.via == "ssh" ? " to " : " on ", spec.ip, ")") : std::string(),
             spec.role == Role::kServer
                 ? StrCat(" on ", spec.address, spec.ServedPart() != spec.machine ? StrCat(", replica of partition ", spec.part) : "")
                 : StrCat(" rank ", spec.global_rank)));
  children_.push_back(std::move(c));
  return true;
}

bool JobSupervisor::PeersReady() {
  // Probes take up to 200 ms each (more while a name does not resolve): at most about a second
  // per call, resuming where the last call stopped, so that output keeps flowing meanwhile.
  const Clock::time_point until = Clock::now() + milliseconds(1000);
  const size_t n = plan_.peer_servers.size();
  for (size_t tried = 0; tried < n && Clock::now() < until; ++tried) {
    const size_t i = next_peer_++ % n;
    if (peer_seen_[i]) continue;
    const PeerServer& p = plan_.peer_servers[i];
    peer_seen_[i] = AcceptsConnections(p.host, p.port, 200);
    if (peer_seen_[i]) Say(StrCat(p.label, " answers on ", HostPort(p.host, p.port)));
  }
  return std::all_of(peer_seen_.begin(), peer_seen_.end(), [](bool seen) { return seen; });
}

void JobSupervisor::StartTrainers() {
  const double secs = std::chrono::duration<double>(Clock::now() - start_time_).count();
  Say(StrCat("all ", plan_.servers.size() + plan_.peer_servers.size(), " servers ready after ",
             static_cast<int64_t>(secs * 10) / 10.0, " s; starting ", plan_.trainers.size(),
             " trainers"));
  phase_ = Phase::kRunning;
  for (const ProcessSpec& spec : plan_.trainers) {
    if (!StartProcess(spec)) return;
  }
}

void JobSupervisor::PollOnce(milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, int>> owners;  // per fds entry after the first
  fds.push_back({signals_->fd(), POLLIN, 0});
  for (auto& c : children_) {
    for (int fd : {c->process.stdout_fd(), c->process.stderr_fd()}) {
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.emplace_back(c.get(), fd);
    }
  }
  int n = poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (n < 0 && errno != EINTR) {
    Fail(StrCat("poll: ", strerror(errno)), 1);
    return;
  }
  if (n > 0) {
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) ReadOutput(*owners[i - 1].first, owners[i - 1].second);
    }
    if (fds[0].revents != 0) {
      while (std::optional<int> sig = signals_->Next()) {
        if (*sig != SIGCHLD) OnSignal(*sig);
      }
    }
  }
  // SIGCHLDs coalesce, so every child is checked on every wake-up (cheap: one waitid each).
  CheckExits();
}

void JobSupervisor::ReadOutput(Child& c, int fd) {
  char buf[64 * 1024];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof(buf));
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  StreamRouter& router = fd == c.process.stdout_fd() ? *c.out : *c.err;
  if (n > 0) {
    router.Feed(std::string_view(buf, static_cast<size_t>(n)));
    return;
  }
  // End of file (or an error, treated alike).
  router.Finish();
  if (fd == c.process.stdout_fd()) {
    c.process.CloseStdout();
  } else {
    c.process.CloseStderr();
  }
}

void JobSupervisor::CheckExits() {
  for (auto& c : children_) {
    if (!c->exited && c->process.Poll()) {
      c->exited = true;
      // What it wrote before exiting is read first, so that its last error line is known.
      for (int round = 0; round < 64; ++round) {
        bool more = false;
        for (int fd : {c->process.stdout_fd(), c->process.stderr_fd()}) {
          pollfd p = {fd, POLLIN, 0};
          if (fd >= 0 && poll(&p, 1, 0) == 1) {
            ReadOutput(*c, fd);
            more = true;
          }
        }
        if (!more) break;
      }
      OnExit(*c);
    }
  }
}

void JobSupervisor::CheckHeartbeats() {
  if (options_.heartbeat_timeout_s <= 0) return;
  const Clock::time_point now = Clock::now();
  for (auto& c : children_) {
    if (c->exited || !c->heartbeating) continue;
    const double silent = std::chrono::duration<double>(now - c->last_heartbeat).count();
    if (silent < options_.heartbeat_timeout_s) continue;
    // A stopped process would sit out SIGTERM and the whole grace period: kill it now.
    if (!c->spec->remote) c->process.SignalGroup(SIGKILL);
    if (c->spec->role == Role::kServer && phase_ == Phase::kRunning && OtherLiveServers(*c) > 0) {
      // Its partition has another server: once this one is gone its clients fail over (OnExit).
      if (c->spec->remote) c->process.CloseStdin();
      c->heartbeating = false;
      c->hung = true;
      Say(StrCat(Who(*c), " stopped responding: no heartbeat for ", static_cast<int64_t>(silent * 10) / 10.0,
                 " s; stopping it"));
      continue;
    }
    Fail(StrCat(Who(*c), " stopped responding: no heartbeat for ", static_cast<int64_t>(silent * 10) / 10.0,
                " s (--heartbeat-timeout ", options_.heartbeat_timeout_s,
                "; stopped by a signal, frozen, or its machine unreachable?)"),
         1, {.signature = StrCat(c->spec->Label(), " stopped responding"), .killed = true});
    return;
  }
}

void JobSupervisor::OnExit(Child& c) {
  const ExitStatus& st = *c.process.exit_status();
  std::string what = StrCat(Who(c), " ", st.Describe());
  if (c.spec->remote && !st.signaled && st.value == 255) {
    // argv ends with [user@]host and the remote command.
    const std::string& dest = c.spec->argv[c.spec->argv.size() - 2];
    what += StrCat(" (ssh's own error status: check that `ssh ", dest,
                   " true` works without a password prompt)");
  }
  if (stopping_) {
    if (launcher_log_fd_.valid()) WriteAll(launcher_log_fd_.get(), StampedLine(StrCat("fanout-launch: ", what)));
    return;
  }
  const int code = st.signaled || st.value == 0 ? 1 : st.value;
  // The process's own last error line ends the message (and so the job's last line); a SIGKILL
  // from the kernel's out-of-memory killer says so, where a process has no last word.
  const std::string oom = c.hung ? std::string() : OomKillHint(st, c.oom_kills);
  const std::string own = !oom.empty() ? StrCat(": ", oom)
                          : st.ok() || c.last_error.empty() ? std::string() : StrCat(": ", c.last_error);
  // A remote process killed by signal N comes back as status 128 + N (its shell's, ssh's): as
  // killed as a local one, for the restarts (a preempted machine, the OOM killer).
  const bool killed = st.signaled || (c.spec->remote && st.value > 128 && st.value <= 128 + 64);
  const FailureKind kind = {.signature = StrCat(c.spec->Label(), " ", st.Describe(), own),
                             .killed = killed,
                             .exit_status = st.signaled ? -1 : st.value};
  if (c.spec->role == Role::kServer) {
    // Failover (rpc/remote_graph_source.h): clients move to the partition's other servers, so a
    // partition with a live server left goes on; one with none is a failure as before.
    const int others = OtherLiveServers(c);
    if (phase_ == Phase::kRunning && others > 0) {
      Say(StrCat(what, own, "; partition ", c.spec->ServedPart(), " goes on with its ", others, " other server",
                 others == 1 ? "" : "s"));
      return;
    }
    Fail(StrCat(what, phase_ == Phase::kRunning ? " while trainers were running" : " before all servers were ready",
                own),
         code, kind);
    return;
  }
  if (!st.ok()) {
    Fail(what + own, code, kind);
    return;
  }
  Say(what);
  ++trainers_done_;
}

int JobSupervisor::OtherLiveServers(const Child& c) const {
  int n = 0;
  for (const auto& o : children_) {
    n += o.get() != &c && o->spec->role == Role::kServer && o->spec->ServedPart() == c.spec->ServedPart() && !o->exited &&
         !o->hung;
  }
  return n;
}

void JobSupervisor::OnSignal(int sig) {
  if (stopping_) {
    if (!force_kill_) Say(StrCat("got ", SignalName(sig), " again: killing every process now"));
    force_kill_ = true;
    return;
  }
  Say(StrCat("got ", SignalName(sig), ": stopping the job on every machine"));
  exit_code_ = 128 + sig;
  failure_ = StrCat("stopped by ", SignalName(sig));
  failure_kind_ = {.signature = failure_, .launcher_signal = sig};
  // Trainers first: one that checkpoints on SIGTERM still has its servers for the step it is in.
  BeginStop(/*trainers_first=*/true);
}

void JobSupervisor::Fail(const std::string& reason, int exit_code) { Fail(reason, exit_code, FailureKind{}); }

void JobSupervisor::Fail(const std::string& reason, int exit_code, FailureKind kind) {
  if (stopping_) return;
  failure_ = reason;
  failure_kind_ = std::move(kind);
  if (failure_kind_.signature.empty()) failure_kind_.signature = reason;
  exit_code_ = exit_code;
  Say(StrCat(reason, "; stopping the job"));
  BeginStop();
}

void JobSupervisor::BeginStop(bool trainers_first) {
  stopping_ = true;
  stop_deadline_ = Clock::now() + Seconds(options_.stop_grace_s);
  servers_wait_for_trainers_ = trainers_first;
  for (auto& c : children_) {
    if (!trainers_first || c->spec->role == Role::kTrainer) AskToStop(*c);
  }
}

void JobSupervisor::AskToStop(Child& c) {
  if (c.spec->remote) {
    // The remote script sees end of file on stdin and stops the command there; ssh exits once
    // it has.
    c.process.CloseStdin();
  } else {
    // Also when the child itself has exited: what it started may still be in its group.
    c.process.SignalGroup(SIGTERM);
  }
}

void JobSupervisor::StopServersOnceTrainersAreGone() {
  if (!servers_wait_for_trainers_) return;
  for (const auto& c : children_) {
    if (c->spec->role == Role::kTrainer && !c->exited) return;
  }
  servers_wait_for_trainers_ = false;
  for (auto& c : children_) {
    if (c->spec->role == Role::kServer) AskToStop(*c);
  }
}

void JobSupervisor::SampleMemory() {
  if (Clock::now() < next_memory_sample_) return;
  next_memory_sample_ = Clock::now() + std::chrono::seconds(2);
  std::map<int, std::pair<std::string, std::vector<int>>> machines;  // machine -> (ip, pids)
  for (const auto& c : children_) {
    if (c->spec->remote || c->exited) continue;  // over ssh, its /proc is not ours
    auto& [ip, pids] = machines[c->spec->machine];
    ip = c->spec->ip;
    pids.push_back(c->process.pid());
  }
  std::vector<std::vector<int>> roots;
  for (const auto& [machine, m] : machines) roots.push_back(m.second);
  const std::vector<std::vector<int>> all = base::WithDescendants(roots);  // one scan of /proc
  size_t i = 0;
  for (const auto& [machine, m] : machines) {
    // The machine's RSS every 2 s; its PSS by what holds it (smaps: a walk of every page of
    // every process) only when that may have grown (base::FullReadingPolicy).
    const std::vector<int>& pids = all[i++];
    int64_t rss = 0;
    for (int pid : pids) rss += base::ReadResidentBytes(pid).value_or(0);
    base::FullReadingPolicy& policy = memory_policy_[machine];
    const Clock::time_point at = Clock::now();
    if (!policy.Due(rss, at)) continue;
    memory_.AddSample(machine, m.first, base::ReadMemoryUse(pids), static_cast<int>(pids.size()));
    policy.Took(rss, Clock::now() - at, at);
  }
}

void JobSupervisor::Teardown() {
  if (!stopping_) BeginStop();
  auto all_exited = [&] {
    return std::all_of(children_.begin(), children_.end(), [](const auto& c) { return c->exited; });
  };
  while (!force_kill_ && !all_exited() && Clock::now() < stop_deadline_) {
    StopServersOnceTrainersAreGone();
    auto left = std::chrono::duration_cast<milliseconds>(stop_deadline_ - Clock::now());
    PollOnce(std::clamp(left + milliseconds(1), milliseconds(0), milliseconds(1000)));
  }
  int killed = 0;
  for (auto& c : children_) {
    killed += !c->exited;
    // SIGKILL to the group even when the child has exited, for what it left behind.
    c->process.SignalGroup(SIGKILL);
  }
  if (killed > 0) {
    Say(StrCat(killed, " process", killed == 1 ? "" : "es", " still running after ",
               options_.stop_grace_s, " s (--stop-grace): sent SIGKILL"));
  }
  // Every group is dead, so the pipes reach end of file unless a process left its group
  // (setsid); read what is left, for a bounded time.
  const Clock::time_point drain_deadline = Clock::now() + milliseconds(2000);
  auto open_pipes = [&] {
    return std::any_of(children_.begin(), children_.end(), [](const auto& c) {
      return c->process.stdout_fd() >= 0 || c->process.stderr_fd() >= 0;
    });
  };
  while (open_pipes() && Clock::now() < drain_deadline) {
    PollOnce(milliseconds(100));
  }
  for (auto& c : children_) {
    c->out->Finish();
    c->err->Finish();
    c->process.KillGroupAndReap();
    if (!c->exited) {
      c->exited = true;
      if (launcher_log_fd_.valid()) {
        WriteAll(launcher_log_fd_.get(),
                 StampedLine(StrCat("fanout-launch: ", Who(*c), " ", c->process.exit_status()->Describe())));
      }
    }
    c->log_fd.reset();
  }
  guard_->Disarm();
  guard_.reset();
}

}  // namespace fanout::launcher
