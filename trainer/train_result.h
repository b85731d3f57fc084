// What one trainer rank's job returns (trainer/training.h's RunTraining): the epochs it ran and
// the figures of the --metric it selected by.
#pragma once

#include <cstdint>

namespace fanout::trainer {

struct TrainResult {
  int64_t epochs_run = 0;
  // Values of TrainOptions::metric.
  double best_val_metric = -1;  // -1 when never evaluated
  int64_t best_epoch = -1;
  double test_metric = -1;        // of the best-validation model (the final one without val)
  double final_test_metric = -1;  // of the model after the last epoch
};

}  // namespace fanout::trainer
