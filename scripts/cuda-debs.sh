#!/usr/bin/env bash
# Downloads into DIR (default cuda-debs/) the Debian 12 packages that scripts/build-cuda.sh
# unpacks on a GPU machine that has PyTorch but none of Debian's -dev packages (and perhaps no
# network): the headers, CMake files and libraries of gRPC, Protocol Buffers (with protoc and the
# gRPC plugin), Abseil, METIS, Gloo's headers, GoogleTest, Google Benchmark, nlohmann-json and
# zlib, with the libraries they load. About 20 MB. Run it on a Debian 12 machine (this project's
# build machine), then copy DIR next to the clone on the GPU machine.
# Usage: scripts/cuda-debs.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-cuda-debs}
# What fanout builds against (scripts/setup.sh's list without LibTorch and the tools), and the
# libraries those load that a machine with PyTorch need not have. The C library, the C++ runtime
# and the rest of a base system are the machine's own.
PKGS=(
  libgrpc++-dev libgrpc-dev libgrpc++1.51 libgrpc29 protobuf-compiler-grpc
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 libprotoc32 protobuf-compiler
  libabsl-dev libabsl20220623 libc-ares-dev libc-ares2 libre2-dev libre2-9 libssl-dev libssl3 zlib1g-dev
  libmetis-dev libmetis5 libgloo-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian
)
command -v apt-get >/dev/null || { echo "cuda-debs: needs apt-get (a Debian 12 machine)" >&2; exit 1; }
mkdir -p "$DIR"
# apt-get download writes into the current folder; an up-to-date package list first.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -print -quit 2>/dev/null)" ]; then
  apt-get update -qq
fi
(cd "$DIR" && apt-get download "${PKGS[@]}")
echo "cuda-debs: $(ls "$DIR"/*.deb | wc -l) packages in $DIR ($(du -sh "$DIR" | cut -f1)); on the GPU machine:"
echo "  FANOUT_DEBS=$DIR scripts/build-cuda.sh"
