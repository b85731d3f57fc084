#include "trainer/scripted_model.h"

#include <ATen/ops/scalar_tensor.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/status.h"
#include "base/strings.h"
#include "trainer/torch_ops.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// kWhyNoJitOptimizer: scripted models run on TorchScript's plain interpreter, its graph optimizer
// off. The default profiling executor re-profiles and guards every call and made a SAGE 2x16
// step 1.25x the built-in one; off, 1.00-1.02x (bench/model_bench, docs/benchmarks.md). The
// optimizer's fusions (NNC) are disabled on CPU in LibTorch 1.13 anyway, so nothing is lost.
// The guard is scoped and per thread: other TorchScript in the process is unaffected.

// The first line of a TorchScript error (the rest is a C++ or TorchScript stack trace).
std::string FirstLine(const std::string& what) { return what.substr(0, what.find('\n')); }

class ScriptedModel final : public GnnModel {
 public:
  ScriptedModel(const ModelOptions& options, torch::jit::script::Module module)
      : GnnModel(options), module_(std::move(module)) {}

  absl::Status RegisterTensors() {
    std::set<std::string> names;
    auto add = [&](const std::string& path, const at::Tensor& t, bool buffer) -> absl::Status {
      std::string name = path;
      std::replace(name.begin(), name.end(), '.', '_');
      public_names_[name] = path;
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(StrCat("model ", options().script_path, ": two tensors are both named '", name,
                                                 "' once dots become underscores; rename one"));
      }
      if (buffer) {
        register_buffer(name, t);
      } else {
        register_parameter(name, t, t.requires_grad());
      }
      return absl::OkStatus();
    };
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) RETURN_IF_ERROR(add(p.name, p.value, false));
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) RETURN_IF_ERROR(add(b.name, b.value, true));
    return absl::OkStatus();
  }

  at::Tensor Forward(const std::vector<BlockTensors>& blocks, const at::Tensor& x) override {
    c10::List<c10::Dict<std::string, at::Tensor>> list;
    for (const BlockTensors& b : blocks) list.push_back(BlockDict(b));
    const torch::jit::GraphOptimizerEnabledGuard plain_interpreter(false);  // see kWhyNoJitOptimizer
    at::Tensor out = module_.forward({list, x}).toTensor();
    const int64_t rows = blocks.empty() ? 0 : blocks.back().num_dst;
    TORCH_CHECK(out.dim() == 2 && out.size(0) == rows && out.size(1) == options().num_classes, "model ",
                options().script_path, " returned a tensor of shape ", out.sizes(), "; expected [", rows, ", ",
                options().num_classes, "] (one row of logits per seed)");
    return out;
  }

  // The script's optional `forward_layer(i: int, block: Dict[str, Tensor], x: Tensor) -> Tensor`
  // (python/fanout's models.GNN has one; it must match forward layer by layer).
  at::Tensor ForwardLayer(int64_t layer, const BlockTensors& block, const at::Tensor& h) override {
    TORCH_CHECK(SupportsLayerwise(), "model ", options().script_path,
                " has no forward_layer method, so it cannot run layer by layer");
    const torch::jit::GraphOptimizerEnabledGuard plain_interpreter(false);  // see kWhyNoJitOptimizer
    return module_.get_method("forward_layer")({layer, BlockDict(block), h}).toTensor();
  }
  bool SupportsLayerwise() const override { return module_.find_method("forward_layer").has_value(); }

  void train(bool on) override {
    GnnModel::train(on);
    module_.train(on);
  }

  void to(torch::Device device, bool non_blocking) override {
    TORCH_CHECK(device.is_cpu(), "scripted models run on the CPU in this build (asked for ", device, ")");
    GnnModel::to(device, non_blocking);
  }

 protected:
  std::string PublicName(const std::string& name) const override {
    auto it = public_names_.find(name);
    return it != public_names_.end() ? it->second : name;
  }

 private:
  c10::Dict<std::string, at::Tensor> BlockDict(const BlockTensors& b) const {
    c10::Dict<std::string, at::Tensor> d;
    d.insert("indptr", b.indptr);
    d.insert("src", b.src);
    d.insert("dst", b.dst);
    d.insert("in_degree", b.in_degree);
    d.insert("num_src", at::scalar_tensor(b.num_src, at::TensorOptions().dtype(at::kLong)));
    d.insert("num_dst", at::scalar_tensor(b.num_dst, at::TensorOptions().dtype(at::kLong)));
    if (b.out_degree.defined()) d.insert("out_degree", b.out_degree);
    // The block's fields by name: "edge_weight", "edge_feat", on typed graphs "etype" (each
    // edge's relation; docs/models.md), and whatever else the batch carries.
    for (const auto& [name, t] : b.fields) d.insert(name, t);
    // Typed graphs: the graph's number of relations and each source's node type
    // (python/fanout's blocks.relation_blocks splits by them).
    if (b.etype().defined()) {
      d.insert("num_relations", at::scalar_tensor(options().num_relations, at::TensorOptions().dtype(at::kLong)));
    }
    if (b.src_type.defined()) d.insert("src_type", b.src_type);
    return d;
  }

  torch::jit::script::Module module_;
  std::map<std::string, std::string> public_names_;  // registered name ('.' -> '_') -> the script's
};

}  // namespace

absl::StatusOr<std::shared_ptr<GnnModel>> LoadScriptedModel(const ModelOptions& o) {
  EnsureTorchOpsRegistered();  // torch.ops.fanout.* for models that call fanout's kernels
  torch::jit::script::Module m;
  try {
    m = torch::jit::load(o.script_path, torch::kCPU);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(StrCat("model ", o.script_path, ": cannot load it as TorchScript: ",
                                             FirstLine(e.what()),
                                             " (export it with torch.jit.script(model).save(path); see docs/models.md)"));
  }
  if (!m.find_method("forward")) {
    return absl::InvalidArgumentError(StrCat("model ", o.script_path, " has no forward method"));
  }
  struct Expect {
    const char* attr;
    int64_t want;
    const char* what;
  };
  for (const Expect& e : {Expect{"in_dim", o.in_dim, "the feature width of the graph"},
                          Expect{"num_classes", o.num_classes, "the number of classes of the graph"},
                          Expect{"num_layers", o.num_layers, "the number of --fanouts"}}) {
    if (!m.hasattr(e.attr)) continue;
    const c10::IValue v = m.attr(e.attr);
    if (!v.isInt()) continue;
    if (v.toInt() != e.want) {
      return absl::InvalidArgumentError(StrCat("model ", o.script_path, " has ", e.attr, " = ", v.toInt(), " but ",
                                               e.what, " is ", e.want));
    }
  }
  auto model = std::make_shared<ScriptedModel>(o, std::move(m));
  RETURN_IF_ERROR(model->RegisterTensors());
  if (model->parameters().empty()) {
    return absl::InvalidArgumentError(StrCat("model ", o.script_path, " has no parameters to train"));
  }
  return std::shared_ptr<GnnModel>(std::move(model));
}

}  // namespace fanout::trainer
