#!/usr/bin/env bash
# The GPU checks of docs/training.md, on a machine with an NVIDIA GPU and PyTorch (CUDA), from a
# bundle of scripts/gpu-bundle.sh (no build there):
#  1. the GPU tests (trainer_gpu_test: the models on CUDA against the CPU, the device feature
#     cache, NCCL collectives and gradient averaging, Gloo with a model on a shared GPU);
#  2. bench/train_bench.sh's job (products-scale graph, 2 loopback machines, 3-layer GraphSAGE)
#     on the CPU, on CUDA, and on CUDA with the device feature cache, one after the other on the
#     same machine (the trainers share the one GPU, hence Gloo).
# Usage, from a clone's root: BUNDLE/gpu-check.sh BUNDLE [OUT]   (OUT: logs, default /tmp/gpu-check)
#   FANOUT_GPU_CHECK_EPOCHS   epochs per run (default 2; the second is the one to read)
#   FANOUT_GPU_CHECK_THREADS  each trainer's intra-op threads (default 6)
#   FANOUT_GPU_CHECK_SKIP     "tests" or "bench" to leave one out
#   FANOUT_GPU_CHECK_RUNS     which bench runs, in order (default "cpu cuda cuda-cache")
#   FANOUT_GPU_CHECK_SAMPLERS sampler processes per trainer (default 1)
#   FANOUT_GPU_CHECK_TIMEOUT  seconds each step may take (default 600)
#   FANOUT_TORCH_PYTHON       the python3 whose torch (and its CUDA libraries) to run with
set -uo pipefail
BUNDLE=$(cd "${1:?usage: gpu-check.sh BUNDLE [OUT]}" && pwd)
OUT=${2:-/tmp/gpu-check}
EPOCHS=${FANOUT_GPU_CHECK_EPOCHS:-2}
THREADS=${FANOUT_GPU_CHECK_THREADS:-6}
LIMIT=${FANOUT_GPU_CHECK_TIMEOUT:-600}
mkdir -p "$OUT"
[ -f bench/train_bench.sh ] || { echo "gpu-check: run it from a fanout clone's root (no bench/train_bench.sh here)" >&2; exit 1; }
# LibTorch and its CUDA libraries from the machine's PyTorch; the bundle's libraries first.
PY=${FANOUT_TORCH_PYTHON:-python3}
torch_lib=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))') ||
  { echo "gpu-check: $PY cannot import torch" >&2; exit 1; }
libs="$BUNDLE/lib:$torch_lib"
for d in $(find "$(dirname "$(dirname "$torch_lib")")/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | sort); do
  libs="$libs:$d"
done
export LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  nvidia-smi
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
  nproc; free -g
  echo "unresolved libraries:"; ldd "$BUNDLE"/bin/* | grep "not found" | sort -u
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

status=0
if [ "${FANOUT_GPU_CHECK_SKIP:-}" != tests ]; then
  echo "== GPU tests"
  timeout "$LIMIT" "$BUNDLE/bin/trainer_gpu_test" 2>&1 | tee "$OUT/gpu_test.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "${FANOUT_GPU_CHECK_SKIP:-}" != bench ]; then
  work=${TMPDIR:-/tmp}/fanout-train-bench
  run() {  # NAME FLAGS...
    local name=$1; shift
    echo "== train_bench $name: $*" | tee -a "$OUT/bench.log"
    local start=$SECONDS
    FANOUT_BUILD_DIR=$BUNDLE FANOUT_TRAIN_FLAGS="--num-threads $THREADS $*" \
      timeout "$LIMIT" bash bench/train_bench.sh "" "$EPOCHS" "${FANOUT_GPU_CHECK_SAMPLERS:-1}" 2>&1 | tee -a "$OUT/bench.log"
    local rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc, $((SECONDS - start)) s" | tee -a "$OUT/bench.log"
    cp "$work/metrics.jsonl" "$OUT/metrics-$name.jsonl" 2>/dev/null
    if [ "$rc" != 0 ]; then
      status=1
      tail -n 30 "$work"/logs/*/*.log "$work"/logs/*.log 2>/dev/null | tail -n 120 >>"$OUT/bench.log"
    fi
  }
  start=$SECONDS
  # The graph: generated and partitioned by the first run (bench/train_bench.sh).
  for name in ${FANOUT_GPU_CHECK_RUNS:-cpu cuda cuda-cache}; do
    case $name in
      cpu) run cpu ;;
      cuda) run cuda --device cuda --dist-backend gloo ;;
      cuda-cache) run cuda-cache --device cuda --dist-backend gloo --gpu-cache-bytes 4G ;;
      *) echo "gpu-check: unknown run '$name' in FANOUT_GPU_CHECK_RUNS (cpu, cuda, cuda-cache)" >&2; status=1 ;;
    esac
    echo "== $name (with the data on the first): $((SECONDS - start)) s" | tee -a "$OUT/bench.log"
    start=$SECONDS
  done
fi
exit $status
