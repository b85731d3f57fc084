#include "sampler/sampler_priority.h"

#include <gtest/gtest.h>

#include <utility>

namespace fanout::sampler {
namespace {

// Batches fed until AfterBatch says to lower (its 1-based index), or 0 if it never does.
template <typename Timing>
int LowersAt(SamplerPriority& p, int batches, Timing timing) {
  for (int i = 1; i <= batches; ++i) {
    const auto [waited, made] = timing(i);
    if (p.AfterBatch(waited, made)) return i;
  }
  return 0;
}

TEST(SamplerPriorityTest, LowersOnceAfterAWindowAheadOfTheStep) {
  SamplerPriority p(10);
  // Ahead: each batch waited as long as it took to make.
  EXPECT_EQ(LowersAt(p, 100, [](int) { return std::pair{0.1, 0.1}; }), SamplerPriority::kWindow);
  EXPECT_EQ(LowersAt(p, 100, [](int) { return std::pair{0.1, 0.1}; }), 0) << "once and for good";
  EXPECT_EQ(p.nice(), 10);
}

TEST(SamplerPriorityTest, HalfTheMakingTimeInWaitsIsEnough) {
  SamplerPriority half(10), less(10);
  EXPECT_EQ(LowersAt(half, 20, [](int) { return std::pair{0.05, 0.1}; }), SamplerPriority::kWindow);
  EXPECT_EQ(LowersAt(less, 100, [](int) { return std::pair{0.049, 0.1}; }), 0);
}

TEST(SamplerPriorityTest, ADataBoundJobsSamplerKeepsTheTrainersPriority) {
  SamplerPriority p(10);
  // The trainer takes every batch at once (no wait), except for a long evaluation pause every
  // 50 batches: a pause counts as one batch's making time, not as the window.
  EXPECT_EQ(LowersAt(p, 1000, [](int i) { return std::pair{i % 50 == 0 ? 30.0 : 0.0, 0.04}; }), 0);
}

TEST(SamplerPriorityTest, TheWindowSlidesFromDataBoundToAhead) {
  SamplerPriority p(10);
  // 40 data-bound batches, then the step slows: lowered once the window's waits reach half its
  // making, i.e. after half a window of batches that each waited (at least) their making time.
  EXPECT_EQ(LowersAt(p, 100, [](int i) { return std::pair{i <= 40 ? 0.0 : 0.2, 0.1}; }),
            40 + SamplerPriority::kWindow / 2);
}

TEST(SamplerPriorityTest, NiceZeroNeverLowersAndNoWaitNeverCounts) {
  SamplerPriority zero(0), timeless(10);
  EXPECT_EQ(LowersAt(zero, 100, [](int) { return std::pair{1.0, 0.1}; }), 0);
  EXPECT_EQ(LowersAt(timeless, 100, [](int) { return std::pair{0.0, 0.0}; }), 0);
}

}  // namespace
}  // namespace fanout::sampler
