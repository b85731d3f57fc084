#include "partition/mpi_comm.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "absl/strings/cord.h"
#include "base/strings.h"

namespace fanout::partition {

using base::StrCat;

absl::Status MpiComm::Init(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return absl::InternalError("MPI_Init_thread failed");
  }
  // Errors of MPI calls end the job (MPI_ERRORS_ARE_FATAL, the default): no rank waits forever on
  // one that could not send.
  if (provided < MPI_THREAD_MULTIPLE) {
    return absl::FailedPreconditionError(
        StrCat("this MPI library gives thread level ", provided,
               ", PT-Scotch needs MPI_THREAD_MULTIPLE (Open MPI from Debian gives it)"));
  }
  return absl::OkStatus();
}

void MpiComm::Finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

MpiComm::MpiComm() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  host_ = name;
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
}

namespace {
constexpr char kAgreed[] = "fanout.dev/mpi-agreed";
}  // namespace

absl::Status MpiComm::Agree(const absl::Status& local) const {
  int mine = local.ok() ? INT_MAX : rank_, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return absl::OkStatus();
  int code = static_cast<int>(local.code());
  MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
  const bool agreed = local.GetPayload(kAgreed).has_value();
  std::string msg = Broadcast(
      first != rank_ ? "" : agreed ? std::string(local.message()) : StrCat("rank ", rank_, " on ", host_, ": ", local.message()),
      first);
  absl::Status out(static_cast<absl::StatusCode>(code), msg);
  out.SetPayload(kAgreed, absl::Cord("1"));
  return out;
}

void MpiComm::Barrier() const { MPI_Barrier(MPI_COMM_WORLD); }

int64_t MpiComm::SumInt64(int64_t v) const {
  int64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

int64_t MpiComm::MaxInt64(int64_t v) const {
  int64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

double MpiComm::MaxDouble(double v) const {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

std::vector<int64_t> MpiComm::AllGather(const std::vector<int64_t>& v) const {
  std::vector<int64_t> out(v.size() * size_);
  MPI_Allgather(v.data(), static_cast<int>(v.size()), MPI_INT64_T, out.data(), static_cast<int>(v.size()),
                MPI_INT64_T, MPI_COMM_WORLD);
  return out;
}

std::vector<int64_t> MpiComm::AllSum(std::vector<int64_t> v) const {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

std::string MpiComm::Broadcast(std::string s, int root) const {
  int64_t n = static_cast<int64_t>(s.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
  s.resize(n);
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, root, MPI_COMM_WORLD);
  return s;
}

std::vector<int64_t> MpiComm::ExchangeCounts(const std::vector<int64_t>& bytes) const {
  std::vector<int64_t> in(size_, 0);
  MPI_Alltoall(bytes.data(), 1, MPI_INT64_T, in.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  return in;
}

int64_t MpiComm::IncomingTotal(const std::vector<int64_t>& count) const {
  int64_t total = 0;
  for (int64_t c : ExchangeCounts(count)) total += c;
  return total;
}

void MpiComm::AllToAllRaw(const std::vector<const char*>& send, const std::vector<int64_t>& send_bytes,
                          const std::vector<char*>& recv, const std::vector<int64_t>& recv_bytes) const {
  // Each round moves at most `per` bytes of every (sender, receiver) pair, packed so that MPI's
  // int counts and displacements stay small; the round count is agreed, so every rank takes part
  // in every round even when it has nothing left to send.
  const int64_t per = std::max<int64_t>(1, kRoundBytes / size_);
  int64_t largest = 0;
  for (int d = 0; d < size_; ++d) largest = std::max({largest, send_bytes[d], recv_bytes[d]});
  const int64_t rounds = (MaxInt64(largest) + per - 1) / per;
  std::vector<char> out, in;
  std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t at = round * per;
    int s_total = 0, r_total = 0;
    for (int p = 0; p < size_; ++p) {
      sc[p] = static_cast<int>(std::clamp<int64_t>(send_bytes[p] - at, 0, per));
      rc[p] = static_cast<int>(std::clamp<int64_t>(recv_bytes[p] - at, 0, per));
      sd[p] = s_total;
      rd[p] = r_total;
      s_total += sc[p];
      r_total += rc[p];
    }
    out.resize(s_total);
    in.resize(r_total);
    for (int p = 0; p < size_; ++p) {
      if (sc[p] > 0) std::memcpy(out.data() + sd[p], send[p] + at, sc[p]);
    }
    MPI_Alltoallv(out.data(), sc.data(), sd.data(), MPI_BYTE, in.data(), rc.data(), rd.data(), MPI_BYTE,
                  MPI_COMM_WORLD);
    for (int p = 0; p < size_; ++p) {
      if (rc[p] > 0) std::memcpy(recv[p] + at, in.data() + rd[p], rc[p]);
    }
  }
}

}  // namespace fanout::partition
