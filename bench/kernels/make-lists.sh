#!/usr/bin/env bash
# Writes the kernel lists of the real models (hetpar-compile --emit=kernels) that
# scripts/gpu-check.sh times on a GPU, with the times the cost model predicts for
# DEVICE_KIND (default H200-SXM) from datasheet numbers, or from PROFILE when set.
#   bench/kernels/make-lists.sh [OUTDIR]     (default: bench/kernels)
# Models: GPT-2 small (12 layers, hidden 768; batch 4 x 128 tokens, and 8 x 512
# tokens; graphs from bench/import/make_gpt2.py, weights never written) and the
# bundled models at larger batches.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/bench/kernels}
build=${HETPAR_BUILD_DIR:-$root/build}
kind=${DEVICE_KIND:-H200-SXM}
mkdir -p "$out"
profile=()
[[ -n "${PROFILE:-}" ]] && profile=(--profile "$PROFILE")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 "$root/bench/import/make_gpt2.py" "$tmp/gpt2-b8s512.onnx" --external \
  --batch 8 --seq 512 > /dev/null
rm "$tmp/gpt2-b8s512.onnx.data"

emit() { # NAME MODEL [hetpar-compile options...]
  local name=$1 model=$2
  shift 2
  "$build/bin/hetpar-compile" "$model" "$@" --emit=kernels --device-kind "$kind" \
    "${profile[@]}" -o "$out/$name.txt"
}
m=$root/examples/models
emit gpt2-small-b4s128 "$root/test/Plan/Inputs/gpt2-small-b4s128.onnx"
emit gpt2-small-b8s512 "$tmp/gpt2-b8s512.onnx"
emit gpt2-tiny-b64s64 "$m/gpt2/model-dynamic.onnx" --input-shape input_ids=64x64
emit bert-tiny-b64s64 "$m/bert/model-dynamic.onnx" --input-shape input_ids=64x64 \
  --input-shape attention_mask=64x64
emit llama-tiny-b64s64 "$m/llama/model-dynamic.onnx" --input-shape input_ids=64x64
emit vit-tiny-b256 "$m/vit/model-dynamic.onnx" --input-shape pixel_values=256x3x32x32
emit resnet18-eighth-b64 "$m/resnet18/model-dynamic.onnx" --input-shape image=64x3x64x64
echo "wrote $(ls "$out"/*.txt | wc -l) kernel lists to $out" >&2
