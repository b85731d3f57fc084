#include "trainer/torch_util.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <charconv>
#include <new>
#include <string>

#include "base/strings.h"

namespace fanout::trainer {

absl::StatusOr<c10::Device> ParseDevice(std::string_view spec) {
  if (spec == "cpu") return c10::Device(c10::kCPU);
  int index = 0;
  if (spec != "cuda") {
    const std::string_view digits = spec.starts_with("cuda:") ? spec.substr(5) : "";
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || index < 0) {
      return absl::InvalidArgumentError(
          base::StrCat("device '", spec, "': expected cpu, cuda or cuda:N"));
    }
  }
  const int count = CudaDeviceCount();
  if (index >= count) {
    return absl::FailedPreconditionError(
        base::StrCat("device '", spec, "': this LibTorch sees ", count, " CUDA device(s)",
                     count == 0 ? " (CPU-only build or no GPU; see docs/training.md)" : ""));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

int CudaDeviceCount() { return at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0; }

std::string LocalRankDevice(int local_rank, int gpus) {
  return base::StrCat("cuda:", gpus > 0 && local_rank >= 0 ? local_rank % gpus : 0);
}

absl::Status SetIntraOpThreads(int n) {
  if (n < 1) {
    return absl::InvalidArgumentError(base::StrCat("intra-op threads: ", n, " is not >= 1"));
  }
  at::set_num_threads(n);
  return absl::OkStatus();
}

int IntraOpThreads() { return at::get_num_threads(); }

void SeedTorch(uint64_t seed) { at::manual_seed(seed); }

absl::Status TorchErrorToStatus(std::string_view what, const c10::Error& e) {
  std::string message = base::StrCat(what, ": ", e.what_without_backtrace());
  if (dynamic_cast<const c10::IndexError*>(&e) || dynamic_cast<const c10::ValueError*>(&e) ||
      dynamic_cast<const c10::TypeError*>(&e)) {
    return absl::InvalidArgumentError(message);
  }
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

absl::Status ExceptionToStatus(std::string_view what, const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) {
    return absl::ResourceExhaustedError(base::StrCat(what, ": out of memory"));
  }
  return absl::InternalError(base::StrCat(what, ": ", e.what()));
}

}  // namespace fanout::trainer
