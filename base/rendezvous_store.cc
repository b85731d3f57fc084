#include "base/rendezvous_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "base/security_options.h"
#include "base/status.h"
#include "base/strings.h"

namespace fanout::base {
namespace {

using base::StrCat;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxFrame = 16u << 20;
constexpr size_t kMaxKey = 4096;
constexpr size_t kMaxStoredBytes = size_t{64} << 20;
constexpr size_t kMaxConnections = 1024;
constexpr int kHelloTimeoutS = 10;

enum Op : uint8_t { kHello = 1, kSet, kGet, kAdd, kCompareSet, kCheck, kWait, kDelete, kNumKeys };
enum Reply : uint8_t { kOk = 0, kError = 1, kTimeout = 2 };

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void PutI64(std::string* out, int64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }
void PutStr(std::string* out, const std::string& s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Reads fields off a frame; any read past the end marks it bad.
class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == s_.size(); }
  uint8_t U8() { return Take(1) ? static_cast<uint8_t>(s_[pos_ - 1]) : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    if (Take(4)) std::memcpy(&v, s_.data() + pos_ - 4, 4);
    return v;
  }
  int64_t I64() {
    int64_t v = 0;
    if (Take(8)) std::memcpy(&v, s_.data() + pos_ - 8, 8);
    return v;
  }
  std::string Str() {
    uint32_t n = U32();
    if (!ok_ || !Take(n)) return "";
    return s_.substr(pos_ - n, n);
  }

 private:
  bool Take(size_t n) {
    if (!ok_ || s_.size() - pos_ < n) return ok_ = false;
    pos_ += n;
    return true;
  }
  const std::string& s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool WriteFull(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadFull(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFrame(int fd, const std::string& payload) {
  std::string f;
  PutU32(&f, static_cast<uint32_t>(payload.size()));
  f.append(payload);
  return WriteFull(fd, f.data(), f.size());
}

// False on end of file, error, receive timeout or a frame over kMaxFrame.
bool ReadFrame(int fd, std::string* payload) {
  uint32_t n;
  if (!ReadFull(fd, reinterpret_cast<char*>(&n), 4) || n > kMaxFrame) return false;
  payload->resize(n);
  return ReadFull(fd, payload->data(), n);
}

void SetReceiveTimeout(int fd, std::chrono::milliseconds t) {
  timeval tv{.tv_sec = static_cast<time_t>(t.count() / 1000), .tv_usec = static_cast<suseconds_t>(t.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

absl::StatusOr<addrinfo*> Resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return absl::InvalidArgumentError(StrCat("rendezvous host '", host, "': ", gai_strerror(rc)));
  }
  return found;
}

}  // namespace

struct StoreServer::State {
  base::UniqueFd listen_fd;
  int port = 0;
  std::string token;
  base::UniqueFd wake_read, wake_write;  // a byte written wakes the acceptor to stop
  std::thread acceptor;

  absl::Mutex mu;
  absl::CondVar changed;  // signalled when a key is stored or the server stops
  std::map<std::string, std::string> kv ABSL_GUARDED_BY(mu);
  size_t stored_bytes ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::set<int> conns ABSL_GUARDED_BY(mu);  // open connections (each owned by its Serve thread)
  std::vector<std::thread> workers ABSL_GUARDED_BY(mu);

  void Accept();
  void Serve(int fd);
  std::string Handle(const std::string& request);
  bool HasAll(const std::vector<std::string>& keys) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  bool WaitFor(const std::vector<std::string>& keys, std::chrono::milliseconds timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Stores key=value within the store's byte limit; false when it would not fit.
  bool Store(const std::string& key, const std::string& value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

void StoreServer::State::Accept() {
  while (true) {
    pollfd fds[2] = {{listen_fd.get(), POLLIN, 0}, {wake_read.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    base::UniqueFd conn(accept4(listen_fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) {
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    absl::MutexLock lock(&mu);
    if (stopping || conns.size() >= kMaxConnections) continue;  // closed by `conn`
    const int fd = conn.release();  // Serve owns it from here
    conns.insert(fd);
    workers.emplace_back([this, fd] { Serve(fd); });
  }
}

bool StoreServer::State::HasAll(const std::vector<std::string>& keys) const {
  for (const auto& k : keys) {
    if (kv.count(k) == 0) return false;
  }
  return true;
}

bool StoreServer::State::WaitFor(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  while (!HasAll(keys)) {
    if (stopping || changed.WaitWithDeadline(&mu, deadline)) return HasAll(keys);  // true: timed out
  }
  return true;
}

bool StoreServer::State::Store(const std::string& key, const std::string& value) {
  auto it = kv.find(key);
  const size_t before = it == kv.end() ? 0 : key.size() + it->second.size();
  const size_t after = key.size() + value.size();
  if (stored_bytes - before + after > kMaxStoredBytes) return false;
  stored_bytes = stored_bytes - before + after;
  kv[key] = value;
  changed.SignalAll();
  return true;
}

std::string StoreServer::State::Handle(const std::string& request) {
  Reader r(request);
  const uint8_t op = r.U8();
  std::string reply(1, static_cast<char>(kOk));
  auto error = [](const std::string& why) {
    std::string e(1, static_cast<char>(kError));
    e.append(why);
    return e;
  };
  absl::MutexLock lock(&mu);
  switch (op) {
    case kSet: {
      std::string key = r.Str(), value = r.Str();
      if (!r.ok() || !r.done() || key.size() > kMaxKey) return error("malformed set");
      if (!Store(key, value)) return error("the rendezvous store is full (64 MiB)");
      return reply;
    }
    case kGet: {
      std::string key = r.Str();
      int64_t ms = r.I64();
      if (!r.ok() || !r.done() || key.size() > kMaxKey || ms < 0) return error("malformed get");
      if (!WaitFor({key}, std::chrono::milliseconds(ms))) return std::string(1, static_cast<char>(kTimeout));
      reply.append(kv[key]);
      return reply;
    }
    case kAdd: {
      std::string key = r.Str();
      int64_t delta = r.I64();
      if (!r.ok() || !r.done() || key.size() > kMaxKey) return error("malformed add");
      int64_t v = 0;
      auto it = kv.find(key);
      if (it != kv.end()) {
        char* end = nullptr;
        errno = 0;
        v = std::strtoll(it->second.c_str(), &end, 10);
        if (it->second.empty() || *end != '\0' || errno != 0) return error(StrCat("key '", key, "' is not an integer"));
      }
      if (__builtin_add_overflow(v, delta, &v)) return error(StrCat("add to '", key, "' overflows"));
      if (!Store(key, std::to_string(v))) return error("the rendezvous store is full (64 MiB)");
      PutI64(&reply, v);
      return reply;
    }
    case kCompareSet: {
      std::string key = r.Str(), expected = r.Str(), desired = r.Str();
      if (!r.ok() || !r.done() || key.size() > kMaxKey) return error("malformed compare-set");
      auto it = kv.find(key);
      if ((it == kv.end() && expected.empty()) || (it != kv.end() && it->second == expected)) {
        if (!Store(key, desired)) return error("the rendezvous store is full (64 MiB)");
      }
      it = kv.find(key);
      reply.append(it == kv.end() ? expected : it->second);
      return reply;
    }
    case kCheck:
    case kWait: {
      uint32_t n = r.U32();
      if (!r.ok() || n > 65536) return error("malformed key list");
      std::vector<std::string> keys;
      for (uint32_t i = 0; i < n && r.ok(); ++i) keys.push_back(r.Str());
      int64_t ms = op == kWait ? r.I64() : 0;
      if (!r.ok() || !r.done() || ms < 0) return error("malformed key list");
      if (op == kWait) {
        if (!WaitFor(keys, std::chrono::milliseconds(ms))) return std::string(1, static_cast<char>(kTimeout));
        return reply;
      }
      reply.push_back(HasAll(keys) ? 1 : 0);
      return reply;
    }
    case kDelete: {
      std::string key = r.Str();
      if (!r.ok() || !r.done()) return error("malformed delete");
      auto it = kv.find(key);
      bool found = it != kv.end();
      if (found) {
        stored_bytes -= it->first.size() + it->second.size();
        kv.erase(it);
      }
      reply.push_back(found ? 1 : 0);
      return reply;
    }
    case kNumKeys:
      if (!r.done()) return error("malformed num-keys");
      PutI64(&reply, static_cast<int64_t>(kv.size()));
      return reply;
    default:
      return error(StrCat("unknown operation ", static_cast<int>(op)));
  }
}

void StoreServer::State::Serve(int raw_fd) {
  base::UniqueFd own(raw_fd);
  const int fd = own.get();
  std::string frame;
  SetReceiveTimeout(fd, std::chrono::seconds(kHelloTimeoutS));
  bool hello = false;
  if (ReadFrame(fd, &frame)) {
    Reader r(frame);
    std::string token_sent = r.U8() == kHello ? r.Str() : std::string();
    hello = r.ok() && r.done() && (token.empty() || base::SecretsEqual(token_sent, token));
    std::string reply(1, static_cast<char>(hello ? kOk : kError));
    if (!hello) reply.append("wrong or missing auth token for the trainers' rendezvous");
    hello = WriteFrame(fd, reply) && hello;
  }
  if (hello) {
    SetReceiveTimeout(fd, std::chrono::milliseconds(0));  // ranks may be quiet for a long time
    while (ReadFrame(fd, &frame)) {
      if (!WriteFrame(fd, Handle(frame))) break;
    }
  }
  absl::MutexLock lock(&mu);
  conns.erase(fd);
  own.reset();  // under the lock: the destructor's shutdown() must never meet a reused number
}

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(const std::string& host, int port,
                                                                const std::string& token) {
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
    return absl::InvalidArgumentError(
        StrCat("the trainers' rendezvous must bind one address of machine 0, not '", host,
               "' (every interface)"));
  }
  if (port < 0 || port > 65535) return absl::InvalidArgumentError(StrCat("rendezvous port ", port, " out of range"));
  ASSIGN_OR_RETURN(addrinfo * found, Resolve(host, port));
  auto st = std::make_shared<State>();
  st->token = token;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    base::UniqueFd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) continue;
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && listen(fd.get(), 1024) == 0) {
      st->listen_fd = std::move(fd);
      break;
    }
    error = std::strerror(errno);
  }
  freeaddrinfo(found);
  if (!st->listen_fd.valid()) {
    return absl::UnavailableError(StrCat("the trainers' rendezvous cannot listen on ", host, ":", port, ": ", error,
                                         " (in use, or not an address of this machine?)"));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(st->listen_fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  st->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) return absl::InternalError(StrCat("pipe: ", std::strerror(errno)));
  st->wake_read.reset(wake[0]);
  st->wake_write.reset(wake[1]);
  st->acceptor = std::thread([raw = st.get()] { raw->Accept(); });
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(st)));
}

int StoreServer::port() const { return state_->port; }

StoreServer::~StoreServer() {
  State& s = *state_;
  {
    absl::MutexLock lock(&s.mu);
    s.stopping = true;
    for (int fd : s.conns) shutdown(fd, SHUT_RDWR);  // unblocks their reads
    s.changed.SignalAll();
  }
  char x = 0;
  (void)!write(s.wake_write.get(), &x, 1);
  s.acceptor.join();
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&s.mu);
    workers.swap(s.workers);
  }
  for (auto& t : workers) t.join();
  s.listen_fd.reset();
  s.wake_read.reset();
  s.wake_write.reset();
}

absl::StatusOr<std::unique_ptr<StoreClient>> StoreClient::Connect(const std::string& host, int port,
                                                                  const std::string& token,
                                                                  std::chrono::milliseconds timeout) {
  const std::string where = StrCat(host, ":", port);
  const auto deadline = Clock::now() + timeout;
  std::string error = "timed out";
  while (true) {
    ASSIGN_OR_RETURN(addrinfo * found, Resolve(host, port));
    base::UniqueFd fd;
    for (addrinfo* a = found; a != nullptr && !fd.valid(); a = a->ai_next) {
      fd.reset(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (fd.valid() && connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
        error = std::strerror(errno);
        fd.reset();
      }
    }
    freeaddrinfo(found);
    if (fd.valid()) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::unique_ptr<StoreClient> c(new StoreClient(std::move(fd), where));
      std::string hello(1, static_cast<char>(kHello));
      PutStr(&hello, token);
      absl::StatusOr<std::string> r = c->Call(hello, std::chrono::seconds(kHelloTimeoutS + 5));
      if (r.ok()) return c;
      if (r.status().code() == absl::StatusCode::kUnauthenticated) return r.status();
      error = std::string(r.status().message());
    }
    if (Clock::now() + std::chrono::milliseconds(100) >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::UnavailableError(StrCat("cannot reach the trainers' rendezvous at ", where, " within ",
                                       timeout.count(), " ms: ", error));
}

StoreClient::~StoreClient() = default;

absl::StatusOr<std::string> StoreClient::Call(const std::string& request, std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  // The server answers blocking calls at their timeout; allow for the trip on top.
  SetReceiveTimeout(fd_.get(), timeout + std::chrono::seconds(30));
  std::string reply;
  if (!WriteFrame(fd_.get(), request) || !ReadFrame(fd_.get(), &reply) || reply.empty()) {
    return absl::UnavailableError(StrCat("the trainers' rendezvous at ", where_, " closed the connection or did not answer"));
  }
  switch (static_cast<uint8_t>(reply[0])) {
    case kOk: return reply.substr(1);
    case kTimeout: return absl::DeadlineExceededError(StrCat("timed out after ", timeout.count(), " ms"));
    default:
      if (static_cast<uint8_t>(request[0]) == kHello) {
        return absl::UnauthenticatedError(StrCat("the trainers' rendezvous at ", where_, ": ", reply.substr(1)));
      }
      return absl::InternalError(StrCat("the trainers' rendezvous at ", where_, ": ", reply.substr(1)));
  }
}

absl::Status StoreClient::Set(const std::string& key, const std::string& value) {
  std::string q(1, static_cast<char>(kSet));
  PutStr(&q, key);
  PutStr(&q, value);
  return Call(q, std::chrono::seconds(30)).status();
}

absl::StatusOr<std::string> StoreClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  std::string q(1, static_cast<char>(kGet));
  PutStr(&q, key);
  PutI64(&q, timeout.count());
  absl::StatusOr<std::string> r = Call(q, timeout);
  if (r.status().code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(StrCat("key '", key, "' did not appear in the trainers' rendezvous within ",
                                              timeout.count(), " ms"));
  }
  return r;
}

absl::StatusOr<int64_t> StoreClient::Add(const std::string& key, int64_t delta) {
  std::string q(1, static_cast<char>(kAdd));
  PutStr(&q, key);
  PutI64(&q, delta);
  ASSIGN_OR_RETURN(std::string r, Call(q, std::chrono::seconds(30)));
  Reader rd(r);
  int64_t v = rd.I64();
  if (!rd.ok()) return absl::InternalError("malformed add answer");
  return v;
}

absl::StatusOr<std::string> StoreClient::CompareSet(const std::string& key, const std::string& expected,
                                                    const std::string& desired) {
  std::string q(1, static_cast<char>(kCompareSet));
  PutStr(&q, key);
  PutStr(&q, expected);
  PutStr(&q, desired);
  return Call(q, std::chrono::seconds(30));
}

absl::StatusOr<bool> StoreClient::Check(const std::vector<std::string>& keys) {
  std::string q(1, static_cast<char>(kCheck));
  PutU32(&q, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) PutStr(&q, k);
  ASSIGN_OR_RETURN(std::string r, Call(q, std::chrono::seconds(30)));
  return !r.empty() && r[0] == 1;
}

absl::Status StoreClient::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::string q(1, static_cast<char>(kWait));
  PutU32(&q, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) PutStr(&q, k);
  PutI64(&q, timeout.count());
  absl::Status s = Call(q, timeout).status();
  if (s.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(StrCat("keys ", base::StrJoin(keys, ", "),
                                              " did not all appear in the trainers' rendezvous within ",
                                              timeout.count(), " ms"));
  }
  return s;
}

absl::StatusOr<bool> StoreClient::Delete(const std::string& key) {
  std::string q(1, static_cast<char>(kDelete));
  PutStr(&q, key);
  ASSIGN_OR_RETURN(std::string r, Call(q, std::chrono::seconds(30)));
  return !r.empty() && r[0] == 1;
}

absl::StatusOr<int64_t> StoreClient::NumKeys() {
  ASSIGN_OR_RETURN(std::string r, Call(std::string(1, static_cast<char>(kNumKeys)), std::chrono::seconds(30)));
  Reader rd(r);
  int64_t v = rd.I64();
  if (!rd.ok()) return absl::InternalError("malformed num-keys answer");
  return v;
}

}  // namespace fanout::base
