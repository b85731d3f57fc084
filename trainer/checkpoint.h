// Checkpoints other tools can read: one file in PyTorch's own format (torch::pickle_save, the zip
// + pickle layout torch.save writes), so `torch.load(path)` in Python returns a plain dict:
//
//   {"format": "fanout.checkpoint", "version": 2,
//    "hyper_parameters": {"model": "sage", "in_dim": 1433, "hidden": 256, ...},
//    "state_dict": {"layers.0.fc_self.weight": Tensor, ...},   # GnnModel::StateDict names
//    "epoch": 7, ...                                            # what the writer adds
//    "optimizer": uint8 Tensor,                                 # resume state, last.rank<r>.pt only
//    "embeddings": {"author.ids": Tensor, "author.rows": Tensor, "author.state": Tensor, ...}}
//                                       # learnable rows this rank owns, last.rank<r>.pt only
//
// The state dict of a built-in model loads into python/fanout's models.GNN of the same kind with
// load_state_dict. Format: docs/models.md, "Checkpoints".
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "trainer/models.h"

namespace fanout::trainer {

inline constexpr char kCheckpointFormat[] = "fanout.checkpoint";
inline constexpr int kCheckpointVersion = 2;

struct Checkpoint {
  // Everything but the tensors: hyper_parameters, epoch and what else the writer records.
  // Values are JSON scalars, lists and objects (they become Python ints, floats, str, lists and
  // dicts). "format" and "version" are set by WriteCheckpoint.
  nlohmann::json info = nlohmann::json::object();
  std::vector<std::pair<std::string, at::Tensor>> state_dict;
  std::string optimizer;  // a LibTorch optimizer archive's bytes; empty: none
  // The learnable embeddings' rows this rank owns, with their IDs and optimizer state
  // (DistEmbeddings::Tables); empty: none.
  std::vector<std::pair<std::string, at::Tensor>> embeddings;
};

// The model's hyper-parameters as a checkpoint records them (model kind, widths, layers,
// dropout, heads per layer, fused, the script's path for a scripted model).
nlohmann::json HyperParameters(const ModelOptions& options);

// Writes `c` to `path` through a temporary file made durable before it is renamed into place,
// so a crash never leaves a torn checkpoint (and the previous one survives).
absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& c);

// Where a last.rank<r>.pt continues, as one number ordered as (epoch, step) (exact in a double:
// epochs < 2^21): its "resume_at" [epoch, step], or for checkpoints written before that key,
// after its "epoch".
double ResumeKey(const Checkpoint& c);
int64_t KeyEpoch(double key);
int64_t KeyStep(double key);
// `keys` holds every rank's two keys (last, previous; -1: none) as keys[2r], keys[2r + 1]: the
// newest key that every rank holds in one of its two, or -1. A rank killed while the others
// replaced their epoch-E checkpoints still holds E's as its last, so E is found.
double NewestKeyEveryRankHolds(const std::vector<double>& keys);

// Before `path` is replaced by a newer checkpoint: makes `previous` another name of the file at
// `path` (a hard link that replaces `previous` atomically), so the older one survives the
// replacement. Nothing when `path` does not exist. Errors name the paths.
absl::Status KeepAsPrevious(const std::string& path, const std::string& previous);

// Reads a checkpoint WriteCheckpoint wrote. NOT_FOUND without the file; INVALID_ARGUMENT, naming
// the file, for anything else (not a checkpoint, an older fanout's format, a missing field).
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

// Copies c.state_dict into `model` after checking that both hold the same tensor names with the
// same shapes; otherwise INVALID_ARGUMENT names the checkpoint, the first tensor that differs with
// both shapes, and both models' hyper-parameters. Nothing is copied unless everything matches.
absl::Status LoadStateDict(GnnModel& model, const Checkpoint& c, const std::string& path);

}  // namespace fanout::trainer
