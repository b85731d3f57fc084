// The few MPI collectives the distributed partitioner needs, over MPI_COMM_WORLD, with 64-bit
// sizes (MPI's counts are int) and one rule for errors: a rank that fails does not leave the
// others waiting in a collective. Every fallible local step ends in Agree(), which every rank
// calls; it returns the first failing rank's error on all of them, so they all stop together.
// (A rank that dies outright is Open MPI's to handle: mpirun ends the job.)
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"

namespace fanout::partition {

class MpiComm {
 public:
  // MPI_Init_thread(MPI_THREAD_MULTIPLE) (PT-Scotch runs threads); once per process.
  static absl::Status Init(int* argc, char*** argv);
  static void Finalize();

  MpiComm();
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks on this machine (MPI_COMM_TYPE_SHARED), for sharing its cores.
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }

  // Collective. OK on every rank when `local` is OK on every rank; otherwise the error of the
  // lowest failing rank, prefixed "rank R on HOST: ", on every rank. An error that an earlier
  // Agree() returned (every rank holds it) passes through unchanged.
  absl::Status Agree(const absl::Status& local) const;

  void Barrier() const;
  int64_t SumInt64(int64_t v) const;
  int64_t MaxInt64(int64_t v) const;
  double MaxDouble(double v) const;
  // Every rank's `v`, in rank order (the same length on every rank).
  std::vector<int64_t> AllGather(const std::vector<int64_t>& v) const;
  // Element-wise sum of `v` over ranks (the same length on every rank).
  std::vector<int64_t> AllSum(std::vector<int64_t> v) const;
  // Rank `root`'s string on every rank.
  std::string Broadcast(std::string s, int root) const;

  // Personalised all-to-all: send[d] goes to rank d; returns recv[s] from rank s. Any sizes
  // (64-bit): the data moves in rounds of at most kRoundBytes per rank, so the only memory beyond
  // the buffers themselves is two rounds' worth.
  template <typename T>
  std::vector<std::vector<T>> AllToAll(const std::vector<std::vector<T>>& send) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<const char*> from(size_);
    std::vector<int64_t> bytes(size_, 0);
    for (int d = 0; d < size_ && d < static_cast<int>(send.size()); ++d) {
      from[d] = reinterpret_cast<const char*>(send[d].data());
      bytes[d] = static_cast<int64_t>(send[d].size() * sizeof(T));
    }
    const std::vector<int64_t> incoming = ExchangeCounts(bytes);
    std::vector<std::vector<T>> out(size_);
    std::vector<char*> to(size_);
    for (int s = 0; s < size_; ++s) {
      out[s].resize(incoming[s] / sizeof(T));
      to[s] = reinterpret_cast<char*>(out[s].data());
    }
    AllToAllRaw(from, bytes, to, incoming);
    return out;
  }

  // The all-to-all of counts behind AllToAll: bytes[d] to rank d; returns what each rank sends here.
  std::vector<int64_t> ExchangeCounts(const std::vector<int64_t>& bytes) const;
  // Collective: with count[d] items about to go to rank d from each rank, how many arrive here in
  // all (to allocate for them once).
  int64_t IncomingTotal(const std::vector<int64_t>& count) const;
  // Moves send[d] (send_bytes[d] bytes) to recv[s] of rank d (recv_bytes[s] bytes, as
  // ExchangeCounts said), in rounds.
  void AllToAllRaw(const std::vector<const char*>& send, const std::vector<int64_t>& send_bytes,
                   const std::vector<char*>& recv, const std::vector<int64_t>& recv_bytes) const;

  static constexpr int64_t kRoundBytes = 64 << 20;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  std::string host_;
};

}  // namespace fanout::partition
