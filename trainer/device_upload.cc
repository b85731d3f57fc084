#include "trainer/device_upload.h"

#ifdef FANOUT_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fanout::trainer {

#ifdef FANOUT_WITH_CUDA
struct DeviceUploader::Cuda {
  explicit Cuda(c10::DeviceIndex index) : side(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index)) {}
  c10::cuda::CUDAStream side;
};
#else
struct DeviceUploader::Cuda {};
#endif

DeviceUploader::DeviceUploader(const c10::Device& device) : device_(device) {
#ifdef FANOUT_WITH_CUDA
  if (device_.is_cuda()) cuda_ = std::make_unique<Cuda>(device_.index());
#endif
}

DeviceUploader::~DeviceUploader() = default;

std::vector<at::Tensor> DeviceUploader::Upload(const std::vector<at::Tensor>& host) {
  std::vector<at::Tensor> out(host.size());
  if (cuda_ == nullptr) {
    for (size_t i = 0; i < host.size(); ++i) {
      if (host[i].defined()) out[i] = host[i].to(device_);
    }
    return out;
  }
#ifdef FANOUT_WITH_CUDA
  const c10::cuda::CUDAGuard device_guard(device_);
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
  {
    const c10::cuda::CUDAStreamGuard on_side(cuda_->side);
    for (size_t i = 0; i < host.size(); ++i) {
      if (!host[i].defined()) continue;
      // pin_memory copies into a block of LibTorch's caching host allocator, which keeps the
      // block until the copy queued from it has run (an event on this stream), so it is never
      // rewritten under the copy.
      const at::Tensor pinned = host[i].is_pinned() ? host[i] : host[i].contiguous().pin_memory();
      out[i] = pinned.to(device_, /*non_blocking=*/true);
    }
    at::cuda::CUDAEvent copied;
    copied.record(cuda_->side);
    copied.block(compute);  // the compute stream waits; the host does not
  }
  // The device memory was allocated on the side stream: tell the caching allocator it is used on
  // the compute stream too, so it is not handed out again before that use is done.
  for (at::Tensor& t : out) {
    if (t.defined()) t.record_stream(compute);
  }
#endif
  return out;
}

}  // namespace fanout::trainer
