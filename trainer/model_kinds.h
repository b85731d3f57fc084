// Which built-in models there are, by name, with their defaults, and whether a ModelOptions
// describes one that can be built here: the model table without the models (models.h builds
// them), so that flags, help texts and option checks need none of the layers' code.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/gnn_model.h"

namespace fanout::trainer {

// "sage", "gcn", "gat", "rgcn", "rgat", "hgt", or a TorchScript file (a name ending in .pt or .pth, or any existing
// file: kScripted; the path goes to ModelOptions::script_path). INVALID_ARGUMENT lists the
// valid names.
absl::StatusOr<ModelKind> ParseModelKind(std::string_view name);
std::string_view ModelKindName(ModelKind kind);
// The model's --dropout when none is given: 0.5, or the peers' own where they differ (rgat: 0.2,
// MLPerf's R-GAT).
double DefaultDropout(ModelKind kind);
// The built-in models' names, in ModelKind order ("sage", "gcn", ...): for help texts.
std::vector<std::string_view> BuiltInModelNames();

// OK, or INVALID_ARGUMENT naming the first bad field and its valid range.
absl::Status ValidateModelOptions(const ModelOptions& options);
// OK when a built-in model of `options` fits in `memory_bytes` with its training state (values,
// gradients, Adam's moments); otherwise INVALID_ARGUMENT naming --hidden and both sizes, so that
// a size no machine can hold is refused up front instead of failing inside LibTorch.
// ValidateModelOptions applies it with this machine's usable memory.
absl::Status CheckModelFits(const ModelOptions& options, int64_t memory_bytes);

// Input width of layer l: in_dim, then hidden x `heads` (the previous layer's, for gat).
int64_t LayerIn(const ModelOptions& options, int64_t l, int64_t heads);
// Output width of layer l: hidden, num_classes for the last.
int64_t LayerOut(const ModelOptions& options, int64_t l);

}  // namespace fanout::trainer
