#!/usr/bin/env bash
# The GPU checks of docs/training.md, on a machine with an NVIDIA GPU and PyTorch (CUDA), from a
# bundle of scripts/gpu-bundle.sh (no build there):
#  1. the GPU tests (trainer_gpu_test: the models on CUDA against the CPU, the device feature
#     cache, NCCL collectives and gradient averaging, Gloo with a model on a shared GPU);
#  2. bench/train_bench.sh's job (products-scale graph, 2 loopback machines, 3-layer GraphSAGE)
#     on the CPU, on CUDA, and on CUDA with the device feature cache, one after the other on the
#     same machine (the trainers share the one GPU, hence Gloo); the same job as link prediction
#     (link-*: 1 uniform negative, BCE, FANOUT_GPU_CHECK_LINK_EDGES positives per trainer an
#     epoch); and typed jobs (typed-MODEL-DEVICE, MODEL rgcn, rgat or hgt, DEVICE cpu or cuda) on
#     the ogbn-mag-shaped graph at scale 0.1 (bench/vs_dgl's setup H: learnable rows for the
#     featureless types, updated by the servers) or another typed preset.
# Usage, from a clone's root: BUNDLE/gpu-check.sh BUNDLE [OUT]   (OUT: logs, default /tmp/gpu-check)
#   FANOUT_GPU_CHECK_EPOCHS   epochs per run (default 2; the second is the one to read)
#   FANOUT_GPU_CHECK_THREADS  each trainer's intra-op threads (default 6)
#   FANOUT_GPU_CHECK_SKIP     "tests" or "bench" to leave one out
#   FANOUT_GPU_CHECK_RUNS     which bench runs, in order (default "cpu cuda cuda-cache link-cpu
#                             link-cuda-cache typed-rgcn-cpu typed-rgcn-cuda")
#   FANOUT_GPU_CHECK_LINK_EDGES  link-*: positive edges per trainer an epoch (default 51200)
#   FANOUT_GPU_CHECK_TYPED_PRESET, _SCALE  typed-*: fanout-generate's typed preset and --scale
#                             (default mag, 0.1; e.g. igbh-tiny, 1: MLPerf's R-GAT dataset shape)
#   FANOUT_GPU_CHECK_TYPED_FLAGS  typed-*: fanout-train flags after setup H's (they override them)
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
  nproc; lscpu | grep -E '^(Model name|Flags)' | cut -c1-400; free -g
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
  # A typed job (bench/vs_dgl/run.sh's setup H, the model and device as named) on the mag-shaped
  # graph, generated and partitioned by the first typed run.
  typed() {  # NAME MODEL FLAGS...
    local name=$1 model=$2; shift 2
    local preset=${FANOUT_GPU_CHECK_TYPED_PRESET:-mag} scale=${FANOUT_GPU_CHECK_TYPED_SCALE:-0.1}
    local tw=${TMPDIR:-/tmp}/fanout-typed-bench/$preset-$scale
    echo "== typed $name ($preset x $scale): --model $model $* ${FANOUT_GPU_CHECK_TYPED_FLAGS:-}" | tee -a "$OUT/bench.log"
    local start=$SECONDS rc=0
    mkdir -p "$tw"
    if [ ! -f "$tw/parts/typed.json" ]; then
      "$BUNDLE/bin/fanout-generate" --preset "$preset" --scale "$scale" --out "$tw/data" --overwrite >>"$OUT/bench.log" 2>&1 &&
        "$BUNDLE/bin/fanout-partition" --input "$tw/data" --out "$tw/parts" --num-parts 2 --add-reverse-edges \
          --balance-train --graph-name typed --overwrite --quiet >>"$OUT/bench.log" 2>&1 || rc=$?
    fi
    if [ "$rc" = 0 ]; then
      printf '127.0.0.1 35060\n127.0.0.2 35060\n' >"$tw/ip_config.txt"
      rm -rf "$tw/logs" "$tw/metrics.jsonl"
      (cd "$tw" && timeout "$LIMIT" "$BUNDLE/bin/fanout-launch" --ip-config ip_config.txt --part-config parts/typed.json \
        --num-servers 1 --num-trainers 1 --num-samplers "${FANOUT_GPU_CHECK_SAMPLERS:-1}" --allow-push --log-dir logs -- \
        "$BUNDLE/bin/fanout-train" --model "$model" --fanouts 25,15 --hidden 64 --batch-size 1024 --lr 0.01 \
        --dropout 0.5 --embed-featureless 64 --sparse-optimizer adam --sparse-lr 0.06 --epochs "$EPOCHS" \
        --eval-every "$EPOCHS" --no-test --num-threads "$THREADS" --metrics-file metrics.jsonl "$@" \
        ${FANOUT_GPU_CHECK_TYPED_FLAGS:-} 2>&1 |
        grep -E "trainer 0\] (epoch|fanout-train)|fanout-launch: machine|error" | tee -a "$OUT/bench.log")
      rc=${PIPESTATUS[0]}
      cp "$tw/metrics.jsonl" "$OUT/metrics-$name.jsonl" 2>/dev/null
    fi
    echo "== $name: exit $rc, $((SECONDS - start)) s" | tee -a "$OUT/bench.log"
    if [ "$rc" != 0 ]; then
      status=1
      tail -n 30 "$tw"/logs/*/*.log "$tw"/logs/*.log 2>/dev/null | tail -n 120 >>"$OUT/bench.log"
    fi
  }
  link=(--task link --edges-per-epoch "${FANOUT_GPU_CHECK_LINK_EDGES:-51200}" --negatives 1)
  start=$SECONDS
  # The graph: generated and partitioned by the first run (bench/train_bench.sh).
  for name in ${FANOUT_GPU_CHECK_RUNS:-cpu cuda cuda-cache link-cpu link-cuda-cache typed-rgcn-cpu typed-rgcn-cuda}; do
    case $name in
      cpu) run cpu ;;
      cuda) run cuda --device cuda --dist-backend gloo ;;
      cuda-cache) run cuda-cache --device cuda --dist-backend gloo --gpu-cache-bytes 4G ;;
      link-cpu) run link-cpu "${link[@]}" ;;
      link-cuda-cache) run link-cuda-cache --device cuda --dist-backend gloo --gpu-cache-bytes 4G "${link[@]}" ;;
      typed-rgcn-cpu|typed-rgat-cpu|typed-hgt-cpu) model=${name#typed-}; typed "$name" "${model%-cpu}" ;;
      typed-rgcn-cuda|typed-rgat-cuda|typed-hgt-cuda)
        model=${name#typed-}; typed "$name" "${model%-cuda}" --device cuda --dist-backend gloo ;;  # (no device cache on typed graphs yet)
      *) echo "gpu-check: unknown run '$name' in FANOUT_GPU_CHECK_RUNS (cpu, cuda, cuda-cache, link-cpu," \
           "link-cuda-cache, typed-{rgcn,rgat,hgt}-{cpu,cuda})" >&2; status=1 ;;
    esac
    echo "== $name (with the data on the first): $((SECONDS - start)) s" | tee -a "$OUT/bench.log"
    start=$SECONDS
  done
fi
exit $status
