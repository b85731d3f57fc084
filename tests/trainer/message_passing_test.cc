// The fused message-passing kernels against the ATen composition they replace (index_select /
// index_add / segment_reduce, kept as AggregateReference / EdgeSoftmaxReference): values and
// gradients, on random blocks with destinations without in-edges, self loops, repeated edges, a
// hub destination and edge weights, at 1 and 3 intra-op threads.
//
// Tolerance: both sides compute in float32 but sum in different orders (and the kernels may use
// FMA), so values are compared as |fused - reference| <= 1e-5 * (1 + max |reference|).
#include "trainer/message_passing.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::trainer {
namespace {

constexpr double kRelTolerance = 1e-5;

struct BlockSpec {
  int64_t num_dst = 40;
  int64_t num_src = 60;
  int64_t max_degree = 8;
  int64_t hub_degree = 300;  // destination 3 gets this many in-edges (0: no hub)
  uint64_t seed = 1;
};

// A block in the trainer's CSC form. About a fifth of the destinations have no in-edges; the
// others draw sources with repetition from a small pool (repeated edges), and every third adds
// its own self loop (destination j is source j).
BlockTensors RandomBlock(const BlockSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::vector<int64_t> indptr{0}, src, dst;
  for (int64_t j = 0; j < spec.num_dst; ++j) {
    int64_t degree = rng() % 5 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % spec.max_degree);
    if (j == 3 && spec.hub_degree > 0) degree = spec.hub_degree;
    for (int64_t k = 0; k < degree; ++k) {
      src.push_back(k == 0 && j % 3 == 0 ? j : static_cast<int64_t>(rng() % spec.num_src));
      dst.push_back(j);
    }
    indptr.push_back(static_cast<int64_t>(src.size()));
  }
  BlockTensors b;
  b.num_src = spec.num_src;
  b.num_dst = spec.num_dst;
  b.indptr = at::tensor(indptr, at::kLong);
  b.src = at::tensor(src, at::kLong);
  b.dst = at::tensor(dst, at::kLong);
  b.in_degree = b.indptr.slice(0, 1) - b.indptr.slice(0, 0, -1);
  return b;
}

BlockTensors EmptyBlock(int64_t num_dst, int64_t num_src) {
  BlockTensors b;
  b.num_src = num_src;
  b.num_dst = num_dst;
  b.indptr = at::zeros({num_dst + 1}, at::kLong);
  b.src = at::empty({0}, at::kLong);
  b.dst = at::empty({0}, at::kLong);
  b.in_degree = at::zeros({num_dst}, at::kLong);
  return b;
}

void ExpectClose(const at::Tensor& fused, const at::Tensor& reference, const std::string& what) {
  ASSERT_TRUE(fused.defined()) << what << ": undefined";
  ASSERT_EQ(fused.sizes(), reference.sizes()) << what;
  if (reference.numel() == 0) return;
  const double scale = 1.0 + reference.abs().max().item<double>();
  const double diff = (fused - reference).abs().max().item<double>();
  EXPECT_LE(diff, kRelTolerance * scale) << what << ": max |fused - reference| = " << diff;
}

// Runs `threads` intra-op threads for the scope, then restores the previous count.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(at::get_num_threads()) { at::set_num_threads(threads); }
  ~ThreadScope() { at::set_num_threads(saved_); }

 private:
  int saved_;
};

struct AggregateCase {
  int64_t heads;     // 0: x is 2-d [num_src, width]
  int64_t width;
  bool weighted;
  Reduce reduce;
  int threads;
};

std::string Name(const ::testing::TestParamInfo<AggregateCase>& info) {
  const AggregateCase& c = info.param;
  return (c.heads == 0 ? std::string("flat") : "heads" + std::to_string(c.heads)) + "_w" +
         std::to_string(c.width) + (c.weighted ? "_weighted" : "") +
         (c.reduce == Reduce::kMean ? "_mean" : "_sum") + "_t" + std::to_string(c.threads);
}

class AggregateTest : public ::testing::TestWithParam<AggregateCase> {};

// Forward value and gradients of (out * g).sum() for random upstream g.
struct Result {
  at::Tensor out, grad_x, grad_w;
};

template <typename Fn>
Result RunAggregate(Fn fn, const BlockTensors& b, const at::Tensor& x0, const at::Tensor& w0,
                    const at::Tensor& g) {
  at::Tensor x = x0.clone().requires_grad_(true);
  at::Tensor w = w0.defined() ? w0.clone().requires_grad_(true) : at::Tensor();
  const at::Tensor out = fn(b, x, w);
  (out * g).sum().backward();
  return {out.detach(), x.grad(), w.defined() ? w.grad() : at::Tensor()};
}

TEST_P(AggregateTest, ValuesAndGradientsMatchTheComposition) {
  const AggregateCase c = GetParam();
  const ThreadScope threads(c.threads);
  const BlockTensors b = RandomBlock({});
  at::manual_seed(7);
  std::vector<int64_t> shape{b.num_src, c.width};
  std::vector<int64_t> weight_shape{b.num_edges()};
  if (c.heads > 0) {
    shape = {b.num_src, c.heads, c.width};
    weight_shape = {b.num_edges(), c.heads};
  }
  const at::Tensor x = at::randn(shape);
  const at::Tensor w = c.weighted ? at::rand(weight_shape) : at::Tensor();
  std::vector<int64_t> out_shape = shape;
  out_shape[0] = b.num_dst;
  const at::Tensor g = at::randn(out_shape);
  auto fused = [&](const BlockTensors& blk, const at::Tensor& xx, const at::Tensor& ww) {
    return Aggregate(blk, xx, c.reduce, ww);
  };
  auto reference = [&](const BlockTensors& blk, const at::Tensor& xx, const at::Tensor& ww) {
    return AggregateReference(blk, xx, c.reduce, ww);
  };
  const Result f = RunAggregate(fused, b, x, w, g);
  const Result r = RunAggregate(reference, b, x, w, g);
  ExpectClose(f.out, r.out, "output");
  ExpectClose(f.grad_x, r.grad_x, "gradient of x");
  if (c.weighted) ExpectClose(f.grad_w, r.grad_w, "gradient of the edge weights");
  // Destinations without in-edges aggregate to exactly 0.
  const at::Tensor empty_rows = b.in_degree.eq(0);
  ASSERT_GT(empty_rows.sum().item<int64_t>(), 0);
  EXPECT_EQ(f.out.index({empty_rows}).abs().sum().item<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, AggregateTest,
    ::testing::Values(AggregateCase{0, 1, false, Reduce::kSum, 1},
                      AggregateCase{0, 5, false, Reduce::kMean, 1},
                      AggregateCase{0, 37, false, Reduce::kMean, 3},
                      AggregateCase{0, 100, false, Reduce::kSum, 3},
                      AggregateCase{0, 256, false, Reduce::kMean, 1},
                      AggregateCase{0, 37, true, Reduce::kSum, 1},
                      AggregateCase{0, 37, true, Reduce::kMean, 3},
                      AggregateCase{4, 8, true, Reduce::kSum, 1},
                      AggregateCase{4, 8, true, Reduce::kSum, 3},
                      AggregateCase{3, 21, true, Reduce::kMean, 3},
                      AggregateCase{2, 16, false, Reduce::kMean, 1}),
    Name);

TEST(AggregateTest, ResultsDoNotDependOnTheThreadCount) {
  // Every output element is summed in edge order whatever the split, so replicas that run with
  // different --threads still compute bit-identical steps.
  const BlockTensors b = RandomBlock({.num_dst = 500, .num_src = 700, .hub_degree = 2000});
  at::manual_seed(3);
  const at::Tensor x = at::randn({b.num_src, 4, 24});
  const at::Tensor w = at::rand({b.num_edges(), 4});
  const at::Tensor g = at::randn({b.num_dst, 4, 24});
  auto fused = [](const BlockTensors& blk, const at::Tensor& xx, const at::Tensor& ww) {
    return Aggregate(blk, xx, Reduce::kMean, ww);
  };
  Result one, three;
  {
    const ThreadScope threads(1);
    one = RunAggregate(fused, b, x, w, g);
  }
  {
    const ThreadScope threads(3);
    three = RunAggregate(fused, b, x, w, g);
  }
  EXPECT_TRUE(at::equal(one.out, three.out));
  EXPECT_TRUE(at::equal(one.grad_x, three.grad_x));
  EXPECT_TRUE(at::equal(one.grad_w, three.grad_w));
}

TEST(AggregateTest, GradientOnlyForWhatRequiresIt) {
  // The input layer's features need no gradient: only the edge weights get one.
  const BlockTensors b = RandomBlock({});
  const at::Tensor x = at::randn({b.num_src, 2, 6});
  const at::Tensor w = at::rand({b.num_edges(), 2}).requires_grad_(true);
  Aggregate(b, x, Reduce::kSum, w).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  const at::Tensor w_ref = w.detach().clone().requires_grad_(true);
  AggregateReference(b, x, Reduce::kSum, w_ref).sum().backward();
  ExpectClose(w.grad(), w_ref.grad(), "gradient of the edge weights");
}

TEST(AggregateTest, BlockWithoutEdges) {
  const BlockTensors b = EmptyBlock(5, 9);
  const at::Tensor x = at::randn({9, 7}).requires_grad_(true);
  const at::Tensor out = Aggregate(b, x, Reduce::kMean);
  EXPECT_TRUE(at::equal(out, at::zeros({5, 7})));
  out.sum().backward();
  EXPECT_TRUE(at::equal(x.grad(), at::zeros({9, 7})));
}

TEST(AggregateTest, BadShapesAreRefusedWithTheShapes) {
  const BlockTensors b = RandomBlock({});
  try {
    Aggregate(b, at::randn({b.num_src + 1, 3}), Reduce::kSum);
    FAIL() << "accepted a wrong number of source rows";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("source nodes"), std::string::npos) << e.what();
  }
  try {
    Aggregate(b, at::randn({b.num_src, 2, 3}), Reduce::kSum, at::rand({b.num_edges(), 3}));
    FAIL() << "accepted edge weights with the wrong number of heads";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("edge weights"), std::string::npos) << e.what();
  }
}

class AggregateWithSelfTest : public ::testing::TestWithParam<int> {};

TEST_P(AggregateWithSelfTest, MatchesTheConcatenatedComposition) {
  const ThreadScope threads(GetParam());
  const BlockTensors b = RandomBlock({.seed = 9});
  at::manual_seed(13);
  const at::Tensor x = at::randn({b.num_src, 37});
  const at::Tensor g = at::randn({b.num_dst, 74});
  for (Reduce reduce : {Reduce::kMean, Reduce::kSum}) {
    auto fused = [&](const BlockTensors& blk, const at::Tensor& xx, const at::Tensor&) {
      return AggregateWithSelf(blk, xx, reduce);
    };
    auto reference = [&](const BlockTensors& blk, const at::Tensor& xx, const at::Tensor&) {
      return at::cat({xx.narrow(0, 0, blk.num_dst), AggregateReference(blk, xx, reduce)}, 1);
    };
    const Result f = RunAggregate(fused, b, x, at::Tensor(), g);
    const Result r = RunAggregate(reference, b, x, at::Tensor(), g);
    ExpectClose(f.out, r.out, "output");
    ExpectClose(f.grad_x, r.grad_x, "gradient of x");
    // The self half is the destinations' rows, exactly.
    EXPECT_TRUE(at::equal(f.out.narrow(1, 0, 37), x.narrow(0, 0, b.num_dst)));
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, AggregateWithSelfTest, ::testing::Values(1, 3));

// R-GCN's self-loop and aggregation of one input: both outputs' gradients reach x, the head's
// added into x's first rows, equal to the narrow-and-aggregate composition (bit for bit: the
// same sums, in either order); outputs used alone or not at all; x that needs no gradient.
TEST_P(AggregateWithSelfTest, AggregateAndHeadEqualsTheNarrowAndTheAggregate) {
  const ThreadScope threads(GetParam());
  const BlockTensors b = RandomBlock({.seed = 21});
  at::manual_seed(17);
  const at::Tensor x0 = at::randn({b.num_src, 19});
  const at::Tensor g_agg = at::randn({b.num_dst, 19}), g_head = at::randn({b.num_dst, 19});
  for (Reduce reduce : {Reduce::kMean, Reduce::kSum}) {
    for (int use : {3, 1, 2}) {  // bit 1: the aggregate, bit 2: the head
      SCOPED_TRACE(use);
      const at::Tensor xf = x0.clone().requires_grad_(true), xr = x0.clone().requires_grad_(true);
      const auto [agg, head] = AggregateAndHead(b, xf, reduce, b.num_dst);
      const at::Tensor agg_r = AggregateReference(b, xr, reduce), head_r = xr.narrow(0, 0, b.num_dst);
      ExpectClose(agg, agg_r, "aggregate");
      EXPECT_TRUE(at::equal(head, head_r));
      at::Tensor lf = at::zeros({}), lr = at::zeros({});
      if (use & 1) {
        lf = lf + (agg * g_agg).sum();
        lr = lr + (agg_r * g_agg).sum();
      }
      if (use & 2) {
        lf = lf + (head * g_head).sum();
        lr = lr + (head_r * g_head).sum();
      }
      lf.backward();
      lr.backward();
      ExpectClose(xf.grad(), xr.grad(), "gradient of x");
      if (use == 2) {
        EXPECT_TRUE(at::equal(xf.grad().narrow(0, 0, b.num_dst), g_head));
      }
      // The fused aggregate's own gradient plus the head's, as the engine would add them.
      const at::Tensor xa = x0.clone().requires_grad_(true);
      (Aggregate(b, xa, reduce) * g_agg).sum().backward();
      if (use == 3) {
        EXPECT_TRUE(at::equal(xf.grad().narrow(0, 0, b.num_dst), xa.grad().narrow(0, 0, b.num_dst) + g_head));
        EXPECT_TRUE(at::equal(xf.grad().narrow(0, b.num_dst, b.num_src - b.num_dst),
                              xa.grad().narrow(0, b.num_dst, b.num_src - b.num_dst)));
      }
    }
  }
  // No gradient asked for: forward only.
  const auto [agg, head] = AggregateAndHead(b, x0, Reduce::kMean, 3);
  EXPECT_FALSE(agg.requires_grad());
  EXPECT_TRUE(at::equal(head, x0.narrow(0, 0, 3)));
  EXPECT_THROW(AggregateAndHead(b, x0, Reduce::kMean, b.num_src + 1), c10::Error);
}

class EdgeSoftmaxTest : public ::testing::TestWithParam<int> {};

TEST_P(EdgeSoftmaxTest, ValuesAndGradientsMatchTheComposition) {
  const ThreadScope threads(GetParam());
  const BlockTensors b = RandomBlock({.seed = 5});
  at::manual_seed(11);
  const int64_t heads = 3;
  // Logits up to about +-150: exp without the max shift would overflow float32.
  const at::Tensor el = at::randn({b.num_src, heads}) * 50;
  const at::Tensor er = at::randn({b.num_dst, heads}) * 50;
  const at::Tensor g = at::randn({b.num_edges(), heads});
  auto run = [&](auto fn) {
    at::Tensor l = el.clone().requires_grad_(true), r = er.clone().requires_grad_(true);
    const at::Tensor a = fn(b, l, r, 0.2);
    (a * g).sum().backward();
    return Result{a.detach(), l.grad(), r.grad()};
  };
  const Result f = run(EdgeSoftmax);
  const Result ref = run(EdgeSoftmaxReference);
  ASSERT_FALSE(f.out.isnan().any().item<bool>());
  ExpectClose(f.out, ref.out, "attention");
  ExpectClose(f.grad_x, ref.grad_x, "gradient of el");
  ExpectClose(f.grad_w, ref.grad_w, "gradient of er");
  // Each destination's attention sums to 1 per head (0 without in-edges).
  at::Tensor sums = at::zeros({b.num_dst, heads}).index_add(0, b.dst, f.out);
  ExpectClose(sums, b.in_degree.gt(0).to(at::kFloat).unsqueeze(1).expand({b.num_dst, heads}),
              "attention sums");
}

INSTANTIATE_TEST_SUITE_P(Kernels, EdgeSoftmaxTest, ::testing::Values(1, 3));

class EdgeDotTest : public ::testing::TestWithParam<int> {};

// Per-edge dot products (HGT's scores) against index_select on both sides, values and both
// gradients, at 1 and 3 threads, on a block with a hub, repeated edges and empty destinations.
TEST_P(EdgeDotTest, ValuesAndGradientsMatchTheComposition) {
  const ThreadScope threads(GetParam());
  const BlockTensors b = RandomBlock({.seed = 9});
  at::manual_seed(13);
  for (int64_t width : {1, 16, 37}) {
    const int64_t heads = 4;
    const at::Tensor x0 = at::randn({b.num_src, heads, width});
    const at::Tensor y0 = at::randn({b.num_dst, heads, width});
    const at::Tensor g = at::randn({b.num_edges(), heads});
    auto run = [&](auto fn) {
      at::Tensor x = x0.clone().requires_grad_(true), y = y0.clone().requires_grad_(true);
      const at::Tensor out = fn(b, x, y);
      (out * g).sum().backward();
      return Result{out.detach(), x.grad(), y.grad()};
    };
    const Result f = run(EdgeDot), ref = run(EdgeDotReference);
    const std::string w = "width " + std::to_string(width);
    ExpectClose(f.out, ref.out, "edge dot, " + w);
    ExpectClose(f.grad_x, ref.grad_x, "gradient of x, " + w);
    ExpectClose(f.grad_w, ref.grad_w, "gradient of y, " + w);
  }
  // Only what requires a gradient gets one; an edgeless block gives [0, heads].
  const at::Tensor x = at::randn({b.num_src, 2, 3}).requires_grad_(true), y = at::randn({b.num_dst, 2, 3});
  EdgeDot(b, x, y).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_EQ(EdgeDot(EmptyBlock(4, 6), at::randn({6, 2, 3}), at::randn({4, 2, 3})).sizes(), (at::IntArrayRef{0, 2}));
  EXPECT_THROW(EdgeDot(b, at::randn({b.num_src, 2, 3}), at::randn({b.num_dst, 2, 4})), c10::ValueError);
}

INSTANTIATE_TEST_SUITE_P(Kernels, EdgeDotTest, ::testing::Values(1, 3));

TEST(EdgeSoftmaxTest, BlockWithoutEdges) {
  const BlockTensors b = EmptyBlock(4, 6);
  const at::Tensor el = at::randn({6, 2}).requires_grad_(true);
  const at::Tensor er = at::randn({4, 2}).requires_grad_(true);
  const at::Tensor a = EdgeSoftmax(b, el, er, 0.2);
  EXPECT_EQ(a.sizes(), (at::IntArrayRef{0, 2}));
}

}  // namespace
}  // namespace fanout::trainer
