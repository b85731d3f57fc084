// The distributed partitioner's pieces on one MPI rank (a singleton MPI process: no mpirun): the
// all-to-all's rounds, label-propagation contraction and refinement. Several ranks are covered by
// tests/integration/distributed_partition_test.cc under mpirun.
#include <algorithm>
#include <map>
#include <numeric>

#include "gtest/gtest.h"
#include "partition/dist_coarsen.h"
#include "partition/mpi_comm.h"

namespace fanout::partition {
namespace {

class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    int argc = 0;
    char** argv = nullptr;
    ASSERT_TRUE(MpiComm::Init(&argc, &argv).ok());
  }
  void TearDown() override { MpiComm::Finalize(); }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

// A symmetric graph on one rank from undirected edges.
DistGraph FromEdges(int64_t n, const std::vector<std::pair<int64_t, int64_t>>& edges) {
  std::vector<std::vector<int64_t>> rows(n);
  for (auto [u, v] : edges) rows[u].push_back(v), rows[v].push_back(u);
  DistGraph g;
  g.vtxdist = {0, n};
  g.vert.push_back(0);
  for (auto& r : rows) {
    std::sort(r.begin(), r.end());
    g.adj.insert(g.adj.end(), r.begin(), r.end());
    g.vert.push_back(static_cast<int64_t>(g.adj.size()));
  }
  return g;
}

// Two 6-cliques (0..5, 6..11) joined by the edge (5, 6).
DistGraph TwoCliques() {
  std::vector<std::pair<int64_t, int64_t>> e;
  for (int base : {0, 6}) {
    for (int i = 0; i < 6; ++i) {
      for (int j = i + 1; j < 6; ++j) e.push_back({base + i, base + j});
    }
  }
  e.push_back({5, 6});
  return FromEdges(12, e);
}

TEST(MpiCommTest, AllToAllMovesMoreThanOneRoundIntact) {
  MpiComm comm;
  ASSERT_EQ(comm.size(), 1);
  std::vector<std::vector<int64_t>> send(1);
  send[0].resize(MpiComm::kRoundBytes / 8 * 2 + 12345);  // two rounds and a bit
  std::iota(send[0].begin(), send[0].end(), 7);
  const std::vector<std::vector<int64_t>> got = comm.AllToAll(send);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], send[0]);
  EXPECT_TRUE(comm.Agree(absl::OkStatus()).ok());
  const absl::Status failed = comm.Agree(absl::NotFoundError("edges.npy: gone"));
  EXPECT_EQ(failed.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(failed.message().find("rank 0 on "), std::string::npos) << failed;
  EXPECT_NE(failed.message().find(": edges.npy: gone"), std::string::npos) << failed;
  // An error already agreed passes through without a second prefix.
  EXPECT_EQ(comm.Agree(failed).message(), failed.message());
}

TEST(DistCoarsenTest, ContractionKeepsLoadsAndTheCutOfEveryClusterPartition) {
  MpiComm comm;
  DistGraph g = TwoCliques();
  ArcSlots slots(comm, g);
  std::vector<int64_t> coarse_of;
  DistGraph c = CoarsenByLabelPropagation(comm, g, slots, /*max_cluster_weight=*/6, 5, &coarse_of);
  ASSERT_EQ(coarse_of.size(), 12u);
  // Each clique is one cluster: nothing heavier than 6, and the two cliques are their densest.
  EXPECT_EQ(c.num_global(), 2);
  for (int v = 0; v < 6; ++v) EXPECT_EQ(coarse_of[v], coarse_of[0]) << v;
  for (int v = 6; v < 12; ++v) EXPECT_EQ(coarse_of[v], coarse_of[6]) << v;
  EXPECT_NE(coarse_of[0], coarse_of[6]);
  ASSERT_EQ(c.vw.size(), 2u);
  EXPECT_EQ(c.vw[0] + c.vw[1], 12);
  // The one edge between the cliques is the coarse graph's edge, weight 1, in both directions.
  ASSERT_EQ(c.adj.size(), 2u);
  EXPECT_EQ(c.arc_w, (std::vector<int64_t>{1, 1}));
  // Projection: each fine vertex gets its cluster's value.
  const std::vector<int64_t> fine = ProjectToFine(comm, c, {10, 20}, coarse_of);
  for (int v = 0; v < 12; ++v) EXPECT_EQ(fine[v], coarse_of[v] == 0 ? 10 : 20) << v;
}

TEST(DistCoarsenTest, ClustersStayUnderTheirCap) {
  MpiComm comm;
  DistGraph g = TwoCliques();
  ArcSlots slots(comm, g);
  std::vector<int64_t> coarse_of;
  DistGraph c = CoarsenByLabelPropagation(comm, g, slots, /*max_cluster_weight=*/3, 5, &coarse_of);
  std::map<int64_t, int> size;
  for (int64_t x : coarse_of) ++size[x];
  for (auto [cluster, n] : size) EXPECT_LE(n, 3) << "cluster " << cluster;
  EXPECT_EQ(std::accumulate(c.vw.begin(), c.vw.end(), int64_t{0}), 12);
  // Contracted arcs carry the fine arcs between clusters: their weights add up to the fine
  // arcs that cross clusters.
  int64_t crossing = 0;
  for (int64_t v = 0; v < 12; ++v) {
    for (int64_t j = g.vert[v]; j < g.vert[v + 1]; ++j) crossing += coarse_of[v] != coarse_of[g.adj[j]];
  }
  EXPECT_EQ(std::accumulate(c.arc_w.begin(), c.arc_w.end(), int64_t{0}), crossing);
}

TEST(DistCoarsenTest, RefinementMovesAStrayVertexHomeWithinBalance) {
  MpiComm comm;
  DistGraph g = TwoCliques();
  ArcSlots slots(comm, g);
  // Vertex 2 placed with the other clique, and vertex 9 with the first: swapping them back cuts
  // the edge count from 11 to 1 and keeps both parts at 6.
  std::vector<int64_t> part = {0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1};
  const int64_t moved = RefineByLabelPropagation(comm, g, slots, 2, 0.03, 12, &part);
  EXPECT_GE(moved, 2);
  for (int v = 0; v < 6; ++v) EXPECT_EQ(part[v], part[0]) << v;
  for (int v = 6; v < 12; ++v) EXPECT_EQ(part[v], part[6]) << v;
  EXPECT_NE(part[0], part[6]);
}

}  // namespace
}  // namespace fanout::partition
