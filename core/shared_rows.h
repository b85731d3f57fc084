// Rows in shared memory that another process of the same user on the same machine can map: the
// node fields a job creates on its graph servers (CreateNodeField: DistTensor, learnable
// embeddings and their optimizer state), so that a trainer on the server's machine reads and
// updates its own partition's rows in place, as DistDGL's trainers use their machine's KVStore
// shard, instead of sending every row and gradient through the server.
//
// The server makes the rows in a memfd (no name in any file system, gone with the server) whose
// first page holds a header: a magic, a random 16-byte token, the payload's size. It tells a
// client, in its answer to CreateNodeField, its pid, the descriptor's number and the token. A
// client maps /proc/PID/fd/FD, which the kernel opens only for a process allowed to inspect the
// server (the same user, not barred by ptrace rules), and uses the mapping only if the file is a
// regular one of the announced size and carries the token: a server on another machine (whose
// pid means nothing here) or a process that may not inspect it falls back to the RPCs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace fanout::core {

// What a client needs to map a server's rows (the proto's SharedField).
struct SharedRowsInfo {
  int64_t pid = 0;
  int fd = -1;
  std::string token;     // 16 random bytes
  int64_t bytes = 0;     // the payload's size (the rows), after the header page
};

// A mapping of shared rows: the server's own (Create) or a client's (Map). Unmapped (and the
// descriptor closed) when destroyed. Thread-compatible; the rows' bytes are the caller's to guard.
class SharedRows {
 public:
  static constexpr size_t kHeaderBytes = 4096;

  // `bytes` zero-filled bytes in a new memfd named after `name` (shown in /proc/PID/maps).
  static absl::StatusOr<std::unique_ptr<SharedRows>> Create(const std::string& name, int64_t bytes);
  // Maps another process's rows, read-write; FAILED_PRECONDITION (saying why) where they cannot
  // be mapped from here (another machine, another user, another size or token).
  static absl::StatusOr<std::unique_ptr<SharedRows>> Map(const SharedRowsInfo& info);
  ~SharedRows();
  SharedRows(const SharedRows&) = delete;
  SharedRows& operator=(const SharedRows&) = delete;

  char* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  // For a client of this process's rows (Create's side).
  SharedRowsInfo info() const;

 private:
  SharedRows() = default;
  int fd_ = -1;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  char* data_ = nullptr;
  int64_t bytes_ = 0;
  std::string token_;
};

}  // namespace fanout::core
