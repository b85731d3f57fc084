// The fused kernels' copies for each instruction set this CPU has (kernels/kernels.h: AVX-512,
// AVX2 + FMA, the baseline) against the baseline copy on the same inputs: every kernel, with and
// without edge weights, several heads, ranges that split the work. The copies differ only in how
// the compiler vectorised the same loops and whether it fused a * b + c into one FMA, so values
// agree within float rounding (|x - baseline| <= 1e-5 * (1 + max |baseline|)), and the dropout
// masks, integer arithmetic, agree exactly. A CPU without AVX2 tests the baseline against itself
// and says which copies it skipped.
#include "kernels/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::kernels {
namespace {

struct Graph {
  std::vector<int64_t> indptr{0}, indices;
  Csc csc() const {
    Csc g;
    g.indptr = indptr.data();
    g.indices = indices.data();
    g.num_dst = static_cast<int64_t>(indptr.size()) - 1;
    g.num_src = num_src;
    return g;
  }
  int64_t num_src = 0;
};

// Destinations with 0 to 20 in-edges (repeats and a hub of 200 included), sources in [0, num_src).
Graph RandomGraph(int64_t num_dst, int64_t num_src, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  g.num_src = num_src;
  for (int64_t v = 0; v < num_dst; ++v) {
    const int64_t degree = v == 7 ? 200 : static_cast<int64_t>(rng() % 21);
    for (int64_t k = 0; k < degree; ++k) g.indices.push_back(static_cast<int64_t>(rng() % num_src));
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
  }
  return g;
}

std::vector<float> RandomFloats(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) scale = std::max(scale, std::abs(static_cast<double>(w)));
  const double tolerance = 1e-5 * (1 + scale);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::abs(static_cast<double>(got[i]) - want[i]), tolerance)
        << what << ": element " << i << " is " << got[i] << ", the baseline's " << want[i];
  }
}

// Runs `body` with the kernels switched to `isa`, then back to the set they ran before.
std::vector<float> With(Isa isa, const std::function<std::vector<float>()>& body) {
  const Isa before = ActiveIsa();
  EXPECT_TRUE(SetIsa(isa));
  EXPECT_EQ(ActiveIsa(), isa) << "the kernels did not switch to " << IsaName(isa);
  std::vector<float> out = body();
  SetIsa(before);
  return out;
}

class KernelIsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!IsaSupported(GetParam())) GTEST_SKIP() << "this CPU has no " << IsaName(GetParam());
  }
  // The same computation on the copy under test and on the baseline.
  void Compare(const std::string& what, const std::function<std::vector<float>()>& body) {
    const std::vector<float> want = With(Isa::kBaseline, body);
    const std::vector<float> got = With(GetParam(), body);
    ExpectClose(got, want, what + " (" + IsaName(GetParam()) + " against baseline)");
  }
};

TEST_P(KernelIsaTest, AggregationForwardAndBackwardAgreeWithTheBaseline) {
  const Graph g = RandomGraph(300, 500, 11);
  for (int64_t heads : {1, 3}) {
    for (int64_t width : {5, 16, 100}) {
      for (bool weighted : {false, true}) {
        for (bool mean : {false, true}) {
          Spmm op;
          op.graph = g.csc();
          op.heads = heads;
          op.width = width;
          op.mean = mean;
          const std::vector<float> w = RandomFloats(g.indices.size() * heads, 3, 0, 2);
          if (weighted) op.edge_weight = w.data();
          const std::vector<float> x = RandomFloats(g.num_src * op.row_elems(), 4);
          const std::vector<float> grad_out = RandomFloats(op.graph.num_dst * op.row_elems(), 5);
          const std::string what = "heads " + std::to_string(heads) + ", width " + std::to_string(width) +
                                   (weighted ? ", weighted" : "") + (mean ? ", mean" : ", sum");
          Compare("SpmmForward, " + what, [&] {
            std::vector<float> out(op.graph.num_dst * op.row_elems(), -7.0f);
            SpmmForward(op, x.data(), out.data(), 0, 120);  // two ranges, as threads split it
            SpmmForward(op, x.data(), out.data(), 120, op.graph.num_dst);
            return out;
          });
          Compare("SpmmBackwardX, " + what, [&] {
            std::vector<float> grad_x(g.num_src * op.row_elems(), 0.0f);
            const int64_t cols = op.row_elems(), half = cols / 2;
            SpmmBackwardX(op, grad_out.data(), grad_x.data(), 0, half);
            SpmmBackwardX(op, grad_out.data(), grad_x.data(), half, cols);
            return grad_x;
          });
          if (weighted) {
            Compare("SpmmBackwardWeight, " + what, [&] {
              std::vector<float> grad_w(g.indices.size() * heads, -7.0f);
              SpmmBackwardWeight(op, x.data(), grad_out.data(), grad_w.data(), 0, op.graph.num_dst);
              return grad_w;
            });
          }
        }
      }
    }
  }
}

TEST_P(KernelIsaTest, EdgeSoftmaxAndScatterAgreeWithTheBaseline) {
  const Graph g = RandomGraph(250, 400, 21);
  for (int64_t heads : {1, 4}) {
    EdgeSoftmax op;
    op.graph = g.csc();
    op.heads = heads;
    const std::vector<float> el = RandomFloats(g.num_src * heads, 6, -4, 4);
    const std::vector<float> er = RandomFloats(op.graph.num_dst * heads, 7, -4, 4);
    const std::vector<float> grad_attention = RandomFloats(g.indices.size() * heads, 8);
    const std::string what = "heads " + std::to_string(heads);
    std::vector<float> attention(g.indices.size() * heads);
    Compare("EdgeSoftmaxForward, " + what, [&] {
      EdgeSoftmaxForward(op, el.data(), er.data(), attention.data(), 0, op.graph.num_dst);
      return attention;
    });
    EdgeSoftmaxForward(op, el.data(), er.data(), attention.data(), 0, op.graph.num_dst);  // (the baseline's)
    Compare("EdgeSoftmaxBackward, " + what, [&] {
      std::vector<float> grad_edge(g.indices.size() * heads), grad_er(op.graph.num_dst * heads);
      EdgeSoftmaxBackward(op, el.data(), er.data(), attention.data(), grad_attention.data(), grad_edge.data(),
                          grad_er.data(), 0, op.graph.num_dst);
      grad_edge.insert(grad_edge.end(), grad_er.begin(), grad_er.end());
      return grad_edge;
    });
    Compare("ScatterAddRows, " + what, [&] {
      std::vector<float> out(g.num_src * heads, 0.5f);
      ScatterAddRows(g.indices.data(), static_cast<int64_t>(g.indices.size()), heads, grad_attention.data(),
                     out.data());
      return out;
    });
  }
}

TEST_P(KernelIsaTest, DropoutMasksAreTheSameBitForBit) {
  const int64_t n = 10'000 + 13;  // not a multiple of any vector width
  const std::vector<float> x = RandomFloats(n, 9);
  const std::vector<float> g = RandomFloats(n, 10);
  for (bool relu : {false, true}) {
    const Dropout op{0x1234'5678'9abcULL, 0.4f, relu};
    auto forward = [&] {
      std::vector<float> out(n);
      DropoutForward(op, x.data(), out.data(), 0, 4'001);
      DropoutForward(op, x.data(), out.data(), 4'001, n);
      return out;
    };
    const std::vector<float> want = With(Isa::kBaseline, forward), got = With(GetParam(), forward);
    EXPECT_EQ(got, want) << "dropout forward, relu " << relu;
    auto backward = [&] {
      std::vector<float> grad_x(n);
      DropoutBackward(op, want.data(), g.data(), grad_x.data(), 0, n);
      return grad_x;
    };
    EXPECT_EQ(With(GetParam(), backward), With(Isa::kBaseline, backward)) << "dropout backward, relu " << relu;
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, KernelIsaTest, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(IsaName(i.param)); });

TEST(KernelIsaChoiceTest, TheEnvironmentPicksASupportedSetOrIsRefusedWithWhatThisCpuHas) {
  const char* before = std::getenv("FANOUT_KERNEL_ISA");
  const std::string saved = before != nullptr ? before : "";
  ASSERT_EQ(unsetenv("FANOUT_KERNEL_ISA"), 0);
  absl::StatusOr<Isa> best = IsaFromEnvironment();
  ASSERT_TRUE(best.ok());
  EXPECT_TRUE(IsaSupported(*best));
  EXPECT_EQ(*best, SupportedIsas().back()) << "the best set this CPU has";
  ASSERT_EQ(setenv("FANOUT_KERNEL_ISA", "baseline", 1), 0);
  EXPECT_EQ(IsaFromEnvironment().value(), Isa::kBaseline);
  ASSERT_EQ(setenv("FANOUT_KERNEL_ISA", "sse9", 1), 0);
  absl::StatusOr<Isa> bad = IsaFromEnvironment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("FANOUT_KERNEL_ISA=sse9"), std::string_view::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("baseline"), std::string_view::npos) << bad.status();
  if (!IsaSupported(Isa::kAvx512)) {
    ASSERT_EQ(setenv("FANOUT_KERNEL_ISA", "avx512", 1), 0);
    absl::StatusOr<Isa> lacks = IsaFromEnvironment();
    ASSERT_FALSE(lacks.ok());
    EXPECT_NE(lacks.status().message().find("lacks avx512"), std::string_view::npos) << lacks.status();
  }
  if (saved.empty()) {
    unsetenv("FANOUT_KERNEL_ISA");
  } else {
    setenv("FANOUT_KERNEL_ISA", saved.c_str(), 1);
  }
  EXPECT_FALSE(SetIsa(static_cast<Isa>(99)));
}

}  // namespace
}  // namespace fanout::kernels
