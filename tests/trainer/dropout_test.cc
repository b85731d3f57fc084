// The fused dropout (trainer/dropout.h): what it keeps and scales, its gradients, repeatability
// under SeedTorch, independence from the thread count, and the in-place variant's guard rails.
#include "trainer/dropout.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "gtest/gtest.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

constexpr int64_t kN = 200000;

TEST(DropoutTest, KeepsAboutOneMinusPAndScalesWhatItKeeps) {
  for (double p : {0.1, 0.5, 0.9}) {
    SeedTorch(1);
    const at::Tensor x = at::rand({kN}) + 0.5;  // all > 0
    const at::Tensor out = Dropout(x, p, /*training=*/true);
    const at::Tensor kept = out.ne(0);
    const double fraction = kept.to(at::kDouble).mean().item<double>();
    // Binomial standard deviation is at most 0.0012 here; 5 sigma.
    EXPECT_NEAR(fraction, 1.0 - p, 0.006) << "p = " << p;
    EXPECT_TRUE(at::allclose(out.index({kept}), x.index({kept}) / (1.0 - p)));
  }
}

TEST(DropoutTest, ReluVariantZeroesNegativesAndPassesGradientOnlyThroughKeptPositives) {
  SeedTorch(2);
  const at::Tensor x0 = at::randn({kN});
  const at::Tensor x = x0.clone().requires_grad_(true);
  const at::Tensor out = Dropout(x, 0.5, /*training=*/true, /*relu=*/true);
  EXPECT_TRUE(out.index({x0.le(0)}).eq(0).all().item<bool>());
  const at::Tensor g = at::randn({kN});
  (out * g).sum().backward();
  const at::Tensor expected = at::where(out.detach().gt(0), g * 2.0, at::zeros_like(g));
  EXPECT_TRUE(at::equal(x.grad(), expected));
}

TEST(DropoutTest, PlainVariantGradientIsTheMaskEvenWhereXIsZero) {
  SeedTorch(3);
  at::Tensor x0 = at::randn({kN});
  x0.index_put_({at::arange(0, kN, 2)}, 0.0f);  // exact zeros, like bag-of-words features
  const at::Tensor ones = at::ones({kN});
  // The mask, read off a run on all-ones input with the same seed.
  SeedTorch(4);
  const at::Tensor mask = Dropout(ones, 0.3, true).ne(0);
  SeedTorch(4);
  const at::Tensor x = x0.clone().requires_grad_(true);
  Dropout(x, 0.3, true).sum().backward();
  EXPECT_TRUE(at::allclose(x.grad(), mask.to(at::kFloat) / 0.7));
}

TEST(DropoutTest, RepeatsUnderSeedTorchAndIgnoresTheThreadCount) {
  const at::Tensor x = at::randn({kN});
  const int saved = at::get_num_threads();
  at::set_num_threads(1);
  SeedTorch(9);
  const at::Tensor a = Dropout(x, 0.5, true, true);
  at::set_num_threads(3);
  SeedTorch(9);
  const at::Tensor b = Dropout(x, 0.5, true, true);
  const at::Tensor c = Dropout(x, 0.5, true, true);  // next draw: another mask
  at::set_num_threads(saved);
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_FALSE(at::equal(b, c));
}

TEST(DropoutTest, EvaluationIsReluOrIdentity) {
  const at::Tensor x = at::randn({1000});
  EXPECT_TRUE(at::equal(Dropout(x, 0.5, /*training=*/false, /*relu=*/true), at::relu(x)));
  EXPECT_TRUE(at::equal(Dropout(x, 0.5, false), x));
  // In place: a layer's fresh output gets no second copy (evaluation's batches are large).
  const at::Tensor expected = at::relu(x);
  at::Tensor y = x.clone();
  const at::Tensor out = ReluDropoutInPlace(y, 0.5, false);
  EXPECT_EQ(out.data_ptr(), y.data_ptr());
  EXPECT_TRUE(at::equal(out, expected));
  // Training without dropout is in place too, and its gradient is ReLU's.
  const at::Tensor w = at::randn({1000}).requires_grad_(true);
  at::Tensor h = w * 2;
  const at::Tensor r = ReluDropoutInPlace(h, 0.0, true);
  EXPECT_EQ(r.data_ptr(), h.data_ptr());
  r.sum().backward();
  EXPECT_TRUE(at::equal(w.grad(), at::where(w.detach().gt(0), at::full({1000}, 2.0f), at::zeros({1000}))));
}

TEST(DropoutTest, InPlaceMatchesOutOfPlaceAndGuardsSavedTensors) {
  const at::Tensor w = at::randn({kN}).requires_grad_(true);
  SeedTorch(5);
  const at::Tensor expected = Dropout(w * 2, 0.5, true, true);
  SeedTorch(5);
  at::Tensor h = w * 2;  // a temporary no backward needs
  const at::Tensor out = ReluDropoutInPlace(h, 0.5, true);
  EXPECT_EQ(out.data_ptr(), h.data_ptr());
  EXPECT_TRUE(at::equal(out, expected));
  out.sum().backward();
  EXPECT_TRUE(at::equal(w.grad(), at::where(out.detach().gt(0), at::full({kN}, 4.0f), at::zeros({kN}))));
  // exp's backward needs its output: overwriting it must be refused, not silently wrong.
  const at::Tensor e = w.exp();
  const at::Tensor bad = ReluDropoutInPlace(e, 0.5, true);
  EXPECT_THROW(bad.sum().backward(), c10::Error);
}

}  // namespace
}  // namespace fanout::trainer
