#!/usr/bin/env bash
# The one-device code generation benchmark (issue 3; numbers in
# docs/performance.md). For each bundled real model:
#   compile  wall seconds of `hetpar-compile MODEL -o OUT --targets=cpu` (import,
#            static pipeline, generation, weights, the g++ build) and of the
#            nvcc build alone (--targets=cuda, sm_80+sm_90) when nvcc is present
#   arena    the liveness-planned arena against every intermediate in its own
#            buffer (manifest.json)
#   latency  hetpar-run --backend cpu: median of $REPEAT runs (200; 20 for
#            GPT-2 small) after one warm-up (hetpar_run alone, no copies),
#            float32 and float16 storage
#   torch    PyTorch eager on the CPU with the same weights and inputs
#            (bench/codegen/torch_eager.py; models needing Hugging Face
#            transformers are skipped without it: set TORCH_PYTHON to a python
#            that has it)
# and a GPT-2-small-shaped model (bench/import/make_gpt2.py: 12 layers,
# hidden 768, batch 1 x 128 tokens, 124M parameters) for a realistic size.
# Usage: bench/codegen/run.sh   (after a build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
threads=$(nproc)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

secs() { /usr/bin/python3 -c 'import sys,time; print("%.2f" % (time.time() - float(sys.argv[1])))' "$1"; }
now() { /usr/bin/python3 -c 'import time; print(time.time())'; }
field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0][sys.argv[2]])' "$@"; }
median() { sed -n 's/^hetpar_run alone: median \([^ ]*\) \([^ ]*\) .*/\1 \2/p'; }

printf '%-10s %9s %9s %12s %12s %14s %14s\n' model compile nvcc arena no-reuse f32-latency f16-latency
REPEAT=200
run_model() { # NAME MODEL.onnx INPUTS [extra compile flags]
  local name=$1 model=$2 inputs=$3
  shift 3
  local t0 t_cpu t_cuda="-"
  t0=$(now)
  "$bin/hetpar-compile" "$model" -o "$work/$name" --targets=cpu "$@" > /dev/null 2>&1
  t_cpu=$(secs "$t0")
  if command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
    t0=$(now)
    "$bin/hetpar-compile" "$model" -o "$work/$name-cuda" --targets=cuda "$@" > /dev/null 2>&1
    t_cuda=$(secs "$t0")
  fi
  "$bin/hetpar-compile" "$model" -o "$work/$name-f16" --targets=cpu --dtype=float16 "$@" > /dev/null 2>&1
  local f32 f16
  f32=$("$bin/hetpar-run" "$work/$name" --backend cpu --repeat $REPEAT ${inputs:+--inputs "$inputs"} | median)
  f16=$("$bin/hetpar-run" "$work/$name-f16" --backend cpu --repeat $REPEAT ${inputs:+--inputs "$inputs"} | median)
  printf '%-10s %8ss %8ss %12s %12s %14s %14s\n' "$name" "$t_cpu" "$t_cuda" \
    "$(field "$work/$name/manifest.json" arena_bytes)" \
    "$(field "$work/$name/manifest.json" arena_bytes_without_reuse)" "$f32" "$f16"
}

for m in mlp gpt2 bert llama vit resnet18; do
  run_model "$m" "$root/examples/models/$m/model.onnx" \
    "$(ls "$root"/examples/models/$m/input_*.npy | sort | paste -sd,)"
done

/usr/bin/python3 "$root/bench/import/make_gpt2.py" "$work/gpt2-small.onnx" > /dev/null
/usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], (np.arange(128) % 50257).reshape(1, 128).astype(np.int64))' "$work/ids.npy"
input=$(/usr/bin/python3 -c 'import onnx,sys; print(onnx.load(sys.argv[1], load_external_data=False).graph.input[0].name)' "$work/gpt2-small.onnx")
REPEAT=20
run_model gpt2-small "$work/gpt2-small.onnx" "$work/ids.npy" --input-shape "$input=1x128"
echo "(latencies: hetpar_run alone, median of 200 runs (GPT-2 small: 20), $threads OpenMP/OpenBLAS threads)"

echo
echo "PyTorch eager, CPU, same weights and inputs:"
${TORCH_PYTHON:-/usr/bin/python3} "$root/bench/codegen/torch_eager.py" --device cpu --repeat 200
