// Models written in Python, scripted with TorchScript and trained by fanout: a scripted
// torch.nn.Module with `forward(blocks: List[Dict[str, Tensor]], x: Tensor) -> Tensor` (the
// block fields are listed in python/fanout/blocks.py and docs/models.md) becomes a GnnModel, so
// the training loop, gradient averaging, checkpoints and evaluation treat it as a built-in one.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/gnn_model.h"

namespace fanout::trainer {

// Loads options.script_path (torch::jit::load) and checks it against `options`: a `forward`
// method, and, when the module declares them, in_dim, num_classes and num_layers equal to the
// graph's feature width, class count and the number of fanouts. Errors name the file and both
// values. The module's parameters and buffers become this Module's (same tensors: the optimizer
// updates what the script computes with), named by their path with '.' replaced by '_'.
// CPU only in this build.
absl::StatusOr<std::shared_ptr<GnnModel>> LoadScriptedModel(const ModelOptions& options);

}  // namespace fanout::trainer
