// Host-to-device copies of mini-batches that do not stop the host: each batch's tensors are
// staged in pinned (page-locked) host memory and copied on a side CUDA stream, and the device's
// compute stream waits for that copy, not the host. The host can thus queue the next batch's copy
// while the device still computes the current step, and the copy overlaps that compute. A plain
// `tensor.to(cuda)` from pageable memory would block the host until the copy is done, which
// waits for everything queued before it.
//
// Without a CUDA LibTorch (Debian's) this is a plain copy to the device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <vector>

namespace fanout::trainer {

// One per trainer and device. Not thread-safe: one thread uploads (the training loop).
class DeviceUploader {
 public:
  explicit DeviceUploader(const c10::Device& device);
  ~DeviceUploader();
  DeviceUploader(const DeviceUploader&) = delete;
  DeviceUploader& operator=(const DeviceUploader&) = delete;

  const c10::Device& device() const { return device_; }

  // `host` (CPU tensors, undefined ones passed through) on the device, in order. The results are
  // ready for use on the device's current stream; the host returns before the copy has run.
  std::vector<at::Tensor> Upload(const std::vector<at::Tensor>& host);

 private:
  struct Cuda;  // the side stream, only in CUDA builds
  c10::Device device_;
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace fanout::trainer
