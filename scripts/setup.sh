#!/usr/bin/env bash
# Installs everything fanout needs from Debian 12 packages. Idempotent; run as root (or with sudo).
# Usage: scripts/setup.sh            # build + test dependencies
#        FANOUT_SETUP_QUIET=1 ...    # less apt noise
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libmetis-dev libabsl-dev libgloo-dev zlib1g-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libopenblas0-openmp
  # Features read from disk (fanout-launch --features-from-disk-mb): io_uring.
  liburing-dev
  python3 python3-numpy
  # The Python data plane's extension (python/, fanout.distributed): Python's headers and pybind11.
  python3-dev pybind11-dev
  # Authoring and exporting TorchScript models (python/fanout): the same PyTorch 1.13 as the
  # LibTorch fanout links, so that what it exports always loads.
  python3-torch
  openssl util-linux
  # fanout-partition --distributed: Open MPI (mpirun and its libraries) and PT-Scotch's parallel
  # partitioner, 64-bit build (docs/partitioning.md).
  libopenmpi-dev openmpi-bin libptscotch-dev
  # Checking the Kubernetes manifests of deploy/kubernetes against the API's schema (tests only).
  python3-yaml python3-kubernetes
  # scripts/plot_metrics.py, and the throwaway venv in which a test reads TensorBoard files back.
  python3-matplotlib python3-venv
  # The sanitizer and fuzzing stage (scripts/sanitize.sh): clang, its ASan/UBSan/libFuzzer
  # runtimes, and llvm-symbolizer for readable stack traces.
  clang-14 libclang-rt-14-dev llvm-14
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
