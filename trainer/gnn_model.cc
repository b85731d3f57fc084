#include "trainer/gnn_model.h"

namespace fanout::trainer {

bool UsesHeads(ModelKind kind) {
  return kind == ModelKind::kGat || kind == ModelKind::kRgat || kind == ModelKind::kHgt;
}

int64_t HeadsOf(const ModelOptions& o, int64_t layer) {
  return o.layer_heads.empty() ? o.heads : o.layer_heads[layer];
}

std::vector<std::pair<std::string, at::Tensor>> GnnModel::StateDict() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : named_parameters(/*recurse=*/true)) out.emplace_back(PublicName(p.key()), p.value());
  for (const auto& b : named_buffers(/*recurse=*/true)) out.emplace_back(PublicName(b.key()), b.value());
  return out;
}

}  // namespace fanout::trainer
