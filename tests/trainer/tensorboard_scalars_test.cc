// The metrics-file records as TensorBoard scalars (trainer/training.h): tags and steps. The
// event file itself is tested in core_test and read back by tensorboard in
// trainer.Observability.tensorboard (skipped without PyPI); this runs everywhere.
#include <map>

#include "gtest/gtest.h"
#include "trainer/training.h"

namespace fanout::trainer {
namespace {

std::map<std::string, float> AsMap(const std::vector<std::pair<std::string, float>>& scalars) {
  return {scalars.begin(), scalars.end()};
}

TEST(TensorBoardScalarsTest, EpochAndTestRecordsGetGroupedTagsAndTheirStep) {
  int64_t step = -1;
  const auto epoch = AsMap(TensorBoardScalars(
      {{"event", "epoch"}, {"epoch", 7}, {"loss", 0.5}, {"train_acc", 0.75}, {"val_acc", 0.625},
       {"val_mrr", 0.25}, {"sample_seconds", 1.5}, {"epoch_seconds", 3.0}, {"seeds_per_second", 1000},
       {"steps", 12}, {"world_size", 2}, {"note", "text is skipped"}},
      &step));
  EXPECT_EQ(step, 7);
  EXPECT_EQ(epoch, (std::map<std::string, float>{{"train/loss", 0.5f},
                                                 {"train/acc", 0.75f},
                                                 {"val/acc", 0.625f},
                                                 {"val/mrr", 0.25f},
                                                 {"time/sample", 1.5f},
                                                 {"time/epoch", 3.0f},
                                                 {"epoch/seeds_per_second", 1000.f}}));
  step = 10;  // a test record has no epoch: the caller's step stays
  const auto test = AsMap(TensorBoardScalars(
      {{"event", "test"}, {"test_acc", 0.8}, {"final_test_acc", 0.79}, {"best_val_acc", 0.81}, {"best_epoch", 4}},
      &step));
  EXPECT_EQ(step, 10);
  EXPECT_EQ(test, (std::map<std::string, float>{{"test/acc", 0.8f},
                                                {"test/final_acc", 0.79f},
                                                {"val/best_acc", 0.81f},
                                                {"test/best_epoch", 4.f}}));
}

}  // namespace
}  // namespace fanout::trainer
