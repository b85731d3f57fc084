#include "trainer/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/relu.h>
#include <torch/csrc/autograd/custom_function.h>

#include <mutex>

#include "kernels/kernels.h"

namespace fanout::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kGrain = 1 << 15;  // elements per parallel task

uint64_t DrawSeed() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double p, bool relu,
                            bool in_place) {
    RECORD_USER_SCOPE("fanout::dropout");
    kernels::Dropout op{DrawSeed(), static_cast<float>(p), relu};
    at::Tensor out = in_place ? x : at::empty_like(x);
    const float* xp = x.data_ptr<float>();
    float* outp = out.data_ptr<float>();
    at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
      kernels::DropoutForward(op, xp, outp, begin, end);
    });
    if (in_place) ctx->mark_dirty({x});
    // With relu the output alone says which elements pass a gradient; without, the mask is
    // recomputed from the seed.
    if (relu) ctx->save_for_backward({out});
    ctx->saved_data["seed"] = static_cast<int64_t>(op.seed);
    ctx->saved_data["p"] = p;
    ctx->saved_data["relu"] = relu;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE("fanout::dropout_backward");
    kernels::Dropout op{static_cast<uint64_t>(ctx->saved_data["seed"].toInt()),
                        static_cast<float>(ctx->saved_data["p"].toDouble()),
                        ctx->saved_data["relu"].toBool()};
    const at::Tensor grad_out = grads[0].contiguous();
    at::Tensor grad_x = at::empty_like(grad_out);
    const float* out = nullptr;
    at::Tensor saved;
    if (op.relu) {
      saved = ctx->get_saved_variables()[0];
      out = saved.data_ptr<float>();
    }
    const float* g = grad_out.data_ptr<float>();
    float* gx = grad_x.data_ptr<float>();
    at::parallel_for(0, grad_out.numel(), kGrain, [&](int64_t begin, int64_t end) {
      kernels::DropoutBackward(op, out, g, gx, begin, end);
    });
    return {grad_x, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor Run(const at::Tensor& x, double p, bool training, bool relu, bool in_place) {
  if (!training || p <= 0.0) {
    if (!relu) return x;
    if (!in_place) return at::relu(x);
    // The caller's fresh output (evaluation's [nodes, hidden] among them): no second copy.
    at::Tensor y = x;
    return at::relu_(y);
  }
  if (!x.device().is_cpu() || x.scalar_type() != at::kFloat || !x.is_contiguous()) {
    return at::dropout(relu ? at::relu(x) : x, p, /*train=*/true);
  }
  return DropoutFunction::apply(x, p, relu, in_place);
}

}  // namespace

at::Tensor Dropout(const at::Tensor& x, double p, bool training, bool relu) {
  return Run(x, p, training, relu, /*in_place=*/false);
}

at::Tensor ReluDropoutInPlace(const at::Tensor& x, double p, bool training) {
  return Run(x, p, training, /*relu=*/true, /*in_place=*/true);
}

}  // namespace fanout::trainer
