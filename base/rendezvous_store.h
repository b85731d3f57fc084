// The trainers' rendezvous: a small key-value store that rank 0 serves and every rank uses to
// exchange Gloo/NCCL connection details (what c10d's TCPStore does). fanout has its own because
// LibTorch 1.13's TCPStore listens on every interface with no way to choose one and no
// authentication; this one binds the coordinator's address only and, when the job has an auth
// token, refuses connections that do not present it. It has no LibTorch dependency;
// c10d_backend.cc adapts it to c10d::Store.
//
// Bounded by construction: frames over 16 MiB, keys over 4 KiB, more than 64 MiB stored or more
// than 1024 connections are refused, and a connection that has not said hello within 10 s is
// closed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/unique_fd.h"

namespace fanout::base {

class StoreServer {
 public:
  // Listens on host:port (port 0: a free one; see port()). `host` must be an address of this
  // machine; "" or "0.0.0.0" would listen on every interface and is refused. `token` non-empty:
  // clients must present it.
  static absl::StatusOr<std::unique_ptr<StoreServer>> Start(const std::string& host, int port,
                                                            const std::string& token);
  ~StoreServer();  // stops accepting, closes every connection, joins its threads
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const;

  struct State;

 private:
  explicit StoreServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// One connection to a StoreServer. Thread-safe (calls are serialised).
class StoreClient {
 public:
  // Connects, retrying until `timeout` while the server is not up yet, and says hello.
  static absl::StatusOr<std::unique_ptr<StoreClient>> Connect(const std::string& host, int port,
                                                              const std::string& token,
                                                              std::chrono::milliseconds timeout);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  absl::Status Set(const std::string& key, const std::string& value);
  // Waits up to `timeout` for the key to exist; DEADLINE_EXCEEDED names it if it does not.
  absl::StatusOr<std::string> Get(const std::string& key, std::chrono::milliseconds timeout);
  // Adds to the integer stored at `key` (0 when missing); returns the new value.
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta);
  // Sets `key` to `desired` if it holds `expected` (or is missing and `expected` is empty);
  // returns the value it holds afterwards.
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired);
  absl::StatusOr<bool> Check(const std::vector<std::string>& keys);
  absl::Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  absl::StatusOr<bool> Delete(const std::string& key);
  absl::StatusOr<int64_t> NumKeys();

 private:
  StoreClient(base::UniqueFd fd, std::string where) : fd_(std::move(fd)), where_(std::move(where)) {}
  absl::StatusOr<std::string> Call(const std::string& request, std::chrono::milliseconds timeout);

  absl::Mutex mu_;
  base::UniqueFd fd_ ABSL_GUARDED_BY(mu_);
  std::string where_;
};

}  // namespace fanout::base
