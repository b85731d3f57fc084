// LibTorch at the trainer's edge: device names, the intra-op thread count, seeding, and turning
// LibTorch's exceptions (c10::Error) into absl::Status.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// LibTorch 2.5 and later (PyTorch's own CUDA builds, scripts/build-cuda.sh) changed a few
// interfaces fanout implements (c10::Allocator, c10d::Store); Debian's LibTorch is 1.13. The
// builds in between use the pre-C++11 ABI, which trainer/CMakeLists.txt refuses.
#define FANOUT_LIBTORCH_2 (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))

namespace fanout::trainer {

// "cpu", "cuda" (= "cuda:0") or "cuda:N". A CUDA device must exist in this process's LibTorch:
// FAILED_PRECONDITION names how many there are (0 with Debian's CPU-only LibTorch).
absl::StatusOr<c10::Device> ParseDevice(std::string_view spec);

// Number of CUDA devices LibTorch can use; 0 without a CUDA build of LibTorch or without a GPU.
int CudaDeviceCount();
// What `--device cuda` means for the trainer of local rank `local_rank` on a machine that sees
// `gpus` GPUs: "cuda:<local_rank mod gpus>", one GPU per trainer while there are enough; "cuda:0"
// (refused later, clearly) when there are none.
std::string LocalRankDevice(int local_rank, int gpus);

// LibTorch's intra-op thread pool size (at::set_num_threads), process-wide. Debian's LibTorch
// starts with 1 here; a trainer sets it deliberately from its options. n must be >= 1.
absl::Status SetIntraOpThreads(int n);
int IntraOpThreads();

// Seeds LibTorch's default CPU and CUDA generators, which dropout draws from. Process-wide; call
// it with a seed derived from (global seed, epoch, step, rank) to make a run repeatable.
void SeedTorch(uint64_t seed);

// `what` failed with `e`: INVALID_ARGUMENT for LibTorch's index/value/type errors,
// RESOURCE_EXHAUSTED for out-of-memory, INTERNAL otherwise. The message leaves out the C++
// backtrace LibTorch attaches.
absl::Status TorchErrorToStatus(std::string_view what, const c10::Error& e);
absl::Status ExceptionToStatus(std::string_view what, const std::exception& e);

// Runs f() and turns what it throws into a Status. Returns absl::Status when f returns void,
// absl::StatusOr<R> when it returns R:
//   ASSIGN_OR_RETURN(at::Tensor loss, CatchTorch("forward", [&] { return model->Forward(b, x); }));
template <typename F>
auto CatchTorch(std::string_view what, F&& f) {
  using R = std::invoke_result_t<F>;
  using Result = std::conditional_t<std::is_void_v<R>, absl::Status, absl::StatusOr<R>>;
  try {
    if constexpr (std::is_void_v<R>) {
      f();
      return Result(absl::OkStatus());
    } else {
      return Result(f());
    }
  } catch (const c10::Error& e) {
    return Result(TorchErrorToStatus(what, e));
  } catch (const std::exception& e) {
    return Result(ExceptionToStatus(what, e));
  }
}

}  // namespace fanout::trainer
