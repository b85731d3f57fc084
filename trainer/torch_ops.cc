#include "trainer/torch_ops.h"

#include <ATen/core/Dict.h>
#include <torch/library.h>

#include <string>

#include "trainer/batch_tensors.h"
#include "trainer/dropout.h"
#include "trainer/message_passing.h"

namespace fanout::trainer {
namespace {

const at::Tensor& Field(const c10::Dict<std::string, at::Tensor>& block, const char* key) {
  auto it = block.find(key);
  TORCH_CHECK(it != block.end(), "fanout op: the block has no '", key, "' (see docs/models.md)");
  return it->value();
}

BlockTensors ToBlock(const c10::Dict<std::string, at::Tensor>& block) {
  BlockTensors b;
  b.indptr = Field(block, "indptr");
  b.src = Field(block, "src");
  b.dst = Field(block, "dst");
  b.in_degree = Field(block, "in_degree");
  b.num_src = Field(block, "num_src").item<int64_t>();
  b.num_dst = Field(block, "num_dst").item<int64_t>();
  TORCH_CHECK(b.indptr.dim() == 1 && b.indptr.size(0) == b.num_dst + 1 && b.src.dim() == 1 &&
                  b.dst.sizes() == b.src.sizes() && b.in_degree.dim() == 1 && b.in_degree.size(0) == b.num_dst,
              "fanout op: the block's indptr, src, dst and in_degree do not fit num_dst = ", b.num_dst);
  return b;
}

Reduce ToReduce(c10::string_view reduce) {
  if (reduce == "mean") return Reduce::kMean;
  TORCH_CHECK(reduce == "sum", "fanout op: reduce must be 'sum' or 'mean', got '", std::string(reduce), "'");
  return Reduce::kSum;
}

at::Tensor AggregateOp(const c10::Dict<std::string, at::Tensor>& block, const at::Tensor& x, c10::string_view reduce,
                       const c10::optional<at::Tensor>& edge_weight) {
  return Aggregate(ToBlock(block), x, ToReduce(reduce), edge_weight.has_value() ? *edge_weight : at::Tensor());
}

at::Tensor AggregateWithSelfOp(const c10::Dict<std::string, at::Tensor>& block, const at::Tensor& x,
                               c10::string_view reduce) {
  return AggregateWithSelf(ToBlock(block), x, ToReduce(reduce));
}

at::Tensor EdgeSoftmaxOp(const c10::Dict<std::string, at::Tensor>& block, const at::Tensor& el, const at::Tensor& er,
                         double negative_slope) {
  return EdgeSoftmax(ToBlock(block), el, er, negative_slope);
}

at::Tensor DropoutOp(const at::Tensor& x, double p, bool training, bool relu) {
  TORCH_CHECK(p >= 0 && p < 1, "fanout op: dropout p must be in [0, 1), got ", p);
  return Dropout(x, p, training, relu);
}

}  // namespace

void EnsureTorchOpsRegistered() {}

// Catch-all kernels: autograd runs through the autograd functions they call.
TORCH_LIBRARY(fanout, m) {
  m.def("aggregate(Dict(str, Tensor) block, Tensor x, str reduce=\"mean\", Tensor? edge_weight=None) -> Tensor",
        &AggregateOp);
  m.def("aggregate_with_self(Dict(str, Tensor) block, Tensor x, str reduce=\"mean\") -> Tensor", &AggregateWithSelfOp);
  m.def("edge_softmax(Dict(str, Tensor) block, Tensor el, Tensor er, float negative_slope=0.2) -> Tensor",
        &EdgeSoftmaxOp);
  m.def("dropout(Tensor x, float p, bool training, bool relu=False) -> Tensor", &DropoutOp);
}

}  // namespace fanout::trainer
