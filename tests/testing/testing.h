// Shared test helpers: temporary folders, datasets built in memory or written to disk, and the
// checker that proves a partition output's invariants against its source dataset.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "partition/dataset.h"
#include "partition/partitioner.h"

namespace fanout::testing {

// A fresh folder under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The folder of the shared real datasets (../shared/data relative to the source tree, or
// $FANOUT_SHARED_DATA), or "" when absent: tests that need it GTEST_SKIP().
std::string SharedDataDir();

struct RandomGraphSpec {
  int64_t num_nodes = 500;
  int64_t num_edges = 3000;
  int64_t feat_dim = 8;
  int64_t num_classes = 5;
  int64_t self_loops = 10;      // extra (v, v) edges
  int64_t duplicates = 20;      // extra copies of existing edges
  bool edge_field = true;       // an int64 edge field "weight" whose value is the input row
  uint64_t seed = 1;
};

// An in-memory dataset with communities (so METIS has structure to find), features equal to
// node ID-derived values (each row identifies its node), labels, a split and an edge field.
partition::Dataset MakeRandomDataset(const RandomGraphSpec& spec);

// A typed dataset (issue 29): papers, authors and venues; authors write papers, papers cite
// papers (with self loops and repeats) and appear in venues. Papers have features (row p is
// (p, seed, 0.5)), labels (-1 for every 7th) and a split; authors and venues have nothing.
partition::Dataset MakeTypedDataset(uint64_t seed, int64_t papers = 120, int64_t authors = 80, int64_t venues = 4);

// Writes `d` in the plain layout (edges.npy, node_feat.npy, ...) into `dir` (which must exist).
void WritePlainLayout(const partition::Dataset& d, const std::string& dir);
// Writes `d` in OGB's raw layout (raw/*.csv.gz, split/<split>/...) into `dir`.
void WriteOgbLayout(const partition::Dataset& d, const std::string& dir, const std::string& split);
// Writes the one-type `d` (no split) in DGL's chunked graph format into `dir`: metadata.json,
// edges in "csv" (text) or "numpy" chunks cut at `edge_cuts` (first 0, last E), node data cut at
// `node_cuts` (first 0, last N), edge data at `edge_cuts`.
void WriteDglChunkedLayout(const partition::Dataset& d, const std::string& dir, const std::string& format,
                           const std::vector<int64_t>& edge_cuts, const std::vector<int64_t>& node_cuts);
// Writes a gzip-compressed text file.
void WriteGz(const std::string& path, const std::string& text);
void WriteText(const std::string& path, const std::string& text);

// Loads the output at `config_path` and checks, with gtest assertions, every invariant the
// partition format promises for `d` partitioned with `o`: nodes owned exactly once, every edge
// stored exactly once in its destination's partition, halo complete, partition book round-trip,
// out-edge index exact, node/edge data on the right rows after relabelling.
void ExpectValidPartition(const partition::Dataset& d, const partition::PartitionOptions& o,
                          const std::string& config_path);

// The whole graph's ID maps (partition/id_maps.h) beside `config_path` agree with every
// partition's graph/orig_{nids,eids}.npy, both ways. ExpectValidPartition checks it too.
void ExpectIdMapsMatchPartitions(const std::string& config_path);

// Partitions `d` (random graph from `spec` when d is null) into `parts` with METIS under
// dir/parts and returns the config path; fails the test on error.
std::string PartitionRandom(const TempDir& dir, const RandomGraphSpec& spec, int parts,
                            partition::Dataset* d = nullptr);

// Partitions typed dataset `d` into `parts` with METIS and reverse relations (rev_REL) under
// dir/parts and returns the config path; fails the test on error.
std::string PartitionTyped(const TempDir& dir, const partition::Dataset& d, int parts);

// Runs `args` (args[0] is the binary's path) with stdin from /dev/null and stdout/stderr
// captured into *out / *err (when non-null); returns the exit code (128 + signal if killed).
int RunProcess(const std::vector<std::string>& args, std::string* out, std::string* err);

// mpirun's path (Open MPI, from scripts/setup.sh), or "" when it is not installed: tests of
// fanout-partition --distributed GTEST_SKIP() then.
std::string MpirunPath();
// Runs `args` (args[0] is the binary's path) as `ranks` MPI ranks on this machine (mpirun
// --oversubscribe, root allowed), with mpirun's own `mpi_flags` (e.g. {"-x", "VAR=value"}), under
// a 300 s limit so that a hang fails the test instead of stalling it (exit 124); returns the
// exit code as RunProcess does.
int RunMpi(int ranks, const std::vector<std::string>& args, std::string* out, std::string* err,
           const std::vector<std::string>& mpi_flags = {});

// Test certificates made with openssl under `dir`: a CA, a certificate for the servers (and
// clients) valid for 127.0.0.1, 127.0.0.2 and localhost, signed by it, and an unrelated CA.
struct TestPki {
  std::string ca, cert, key, other_ca;
};
// Fails the test (gtest assertion) when openssl is missing or fails.
void MakeTestPki(const TempDir& dir, TestPki* pki);

// Writes `token` and a newline to dir/name, mode 0600; returns the path.
std::string WriteTokenFile(const TempDir& dir, const std::string& name, const std::string& token);

// Edges whose endpoints are in different partitions, over the stored edges.
int64_t EdgeCut(const std::string& config_path);
// Maps a partition's ID array (indices, out_indices, out_eids), expecting `expected` (the config's
// width), as int64 (a copy when it is stored as int32).
core::NpyArray MapIdsAsInt64(const std::string& path, core::DType expected);

// Waits until `condition` holds, checking it every millisecond, for at most `limit`; returns
// whether it held. For moments a test must act at (a server stopping, calls queued) that have no
// event of their own to wait on: never a fixed sleep that hopes the moment has come.
bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds limit = std::chrono::seconds(30));

// A memory cgroup of its own, removed at the end: v1 (memory.limit_in_bytes) or v2 (memory.max).
// A test puts a process in it by writing the pid to path() + "/cgroup.procs".
class MemoryCgroup {
 public:
  // False (and the reason) where neither hierarchy lets us make one (not root, no controller).
  bool Create(int64_t limit_bytes, std::string* why);
  ~MemoryCgroup();  // moves this process back first when it entered
  const std::string& path() const { return path_; }
  // Moves this whole process (its later children with it) into the group, until destruction.
  bool Enter();
  int64_t OomKills() const;   // OOM kills in the group so far
  int64_t PeakBytes() const;  // its peak usage, -1 where unknown

 private:
  std::string path_;
  bool v2_ = false;
  std::string home_procs_;  // the cgroup.procs this process came from (Enter)
};

}  // namespace fanout::testing
