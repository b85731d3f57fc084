// The training job of one trainer rank: mini-batches from the sampler's loader, the model, the
// optimizer and gradient synchronisation with every other rank, evaluation, checkpoints, and what
// it prints. fanout-train (train_main.cc) fills TrainOptions from flags and the launcher's
// environment and calls RunTraining.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "trainer/train_options.h"
#include "trainer/train_result.h"

namespace fanout::trainer {

// Checks every option a user sets by flag, naming the flag and what is valid: no NaN, no
// negative rate, no zero batch or prefetch (which would hang the loader). RunTraining calls it
// too; fanout-train calls it first so that a bad flag fails before any connection is made.
absl::Status ValidateTrainOptions(const TrainOptions& options);

// Runs the whole job for this rank. Every rank of the job must call it with the same options
// (except rank and machine). Errors name the partition, server, peer or file at fault.
absl::StatusOr<TrainResult> RunTraining(const TrainOptions& options);

// The scalars TensorBoard shows for one metrics-file record: "train/loss", "val/acc",
// "time/sample", "test/final_acc", ...; *step becomes the record's epoch when it has one.
std::vector<std::pair<std::string, float>> TensorBoardScalars(const nlohmann::json& j, int64_t* step);

}  // namespace fanout::trainer
