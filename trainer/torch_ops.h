// fanout's fused message passing as TorchScript operators, so that a model written in Python
// runs the same kernels as the built-in models:
//   torch.ops.fanout.aggregate(block, x, reduce="mean", edge_weight=None) -> Tensor
//   torch.ops.fanout.aggregate_with_self(block, x, reduce="mean") -> Tensor   ([x_dst | agg])
//   torch.ops.fanout.edge_softmax(block, el, er, negative_slope=0.2) -> Tensor
//   torch.ops.fanout.dropout(x, p, training, relu=False) -> Tensor   (one fused pass, dropout.h)
// `block` is the Dict[str, Tensor] a scripted model receives (docs/models.md). They are
// differentiable (the autograd functions of message_passing.h). fanout-train registers them;
// Python loads them from libfanout_torch_ops.so to script a model that calls them
// (python/fanout/ops.py).
#pragma once

namespace fanout::trainer {

// Makes sure the operators are registered in this process (they register themselves when the
// object is linked; calling this keeps the linker from dropping it from a static library).
void EnsureTorchOpsRegistered();

}  // namespace fanout::trainer
