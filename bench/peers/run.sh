#!/usr/bin/env bash
# HetPar's one-device CPU programs against ONNX Runtime and PyTorch, side by
# side on this machine (issue 15; numbers in docs/performance.md).
#
# Usage: bench/peers/run.sh [ROUNDS]   (after a build; ROUNDS default 2)
#
# For each bundled real model at its test shape (examples/models/NAME, its
# stored inputs) and at a throughput shape (NAME-b32: model-dynamic.onnx with
# the stored inputs repeated to a batch of 32), and for a GPT-2-small-shaped
# model (bench/import/make_gpt2.py: 12 layers, hidden 768, 124M parameters) at
# 1 x 128 and 8 x 512 tokens:
#   hetpar   `hetpar-run OUT --backend cpu --repeat N`: the median of N runs
#            of hetpar_run alone (no input reading), after a warm-up
#   ort      ONNX Runtime's CPU provider on the same model file and inputs
#            (bench/peers/ort_latency.py: N runs of session.run, median),
#            all graph optimizations
#   torch    PyTorch eager in inference mode on the same inputs
#            (bench/peers/torch_latency.py: the exported torch module with
#            the model's weights; GPT-2 small as bench/train/torch_step.py's
#            GPT2Small with the ONNX file's weights), median of N forwards
# all with all $(nproc) cores: OMP_NUM_THREADS for HetPar, intra-op threads
# for ONNX Runtime, torch.set_num_threads for PyTorch. N is 200 (50 at batch
# 32, 20 for GPT-2 small at 1 x 128, 3 at 8 x 512). The rounds alternate the
# three, and the best median of the rounds counts, so a slow moment on a
# shared machine hits all. Prints each latency and the ratios HetPar / ORT
# and HetPar / PyTorch (below 1: HetPar is faster), then the geometric means
# of the ratios. Each round's timings go to stderr as they come.
#
# ONNX Runtime comes from PyPI into a virtual environment the script makes
# ($HETPAR_PEERS_VENV, default build/peers-venv; needs network once).
# PyTorch is Debian's python3-torch; the Hugging Face models (gpt2 bert llama
# vit) also need transformers 4.36 (bench/lib/torch-python.sh: $TORCH_PYTHON,
# or a venv made once in build/bench-train-venv); without it their PyTorch
# column is "-".
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
bin=$build/bin
rounds=${1:-2}
venv=${HETPAR_PEERS_VENV:-$build/peers-venv}
threads=$(nproc)
export OMP_NUM_THREADS=$threads
[[ -x $bin/hetpar-compile && -x $bin/hetpar-run ]] || { echo "run.sh: build HetPar first (scripts/build.sh)" >&2; exit 2; }
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import onnxruntime' 2> /dev/null; then
  echo "run.sh: making $venv with pip's onnxruntime" >&2
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnxruntime numpy
fi
ort_version=$("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')
source "$root/bench/lib/torch-python.sh"
torch_py=$(torch_python "$build")
torch_version=$("$torch_py" -c 'import torch; print(torch.__version__)' 2> /dev/null || echo none)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $threads cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); ONNX Runtime $ort_version (CPU provider), PyTorch $torch_version; $threads threads each"

names=() models=() inputs=() repeats=() shapes=()
for m in mlp digits-mlp gpt2 char-gpt bert llama vit resnet18; do
  names+=("$m")
  models+=("$root/examples/models/$m/model.onnx")
  inputs+=("$(ls "$root"/examples/models/$m/input_*.npy | sort | paste -sd,)")
  repeats+=(200)
  shapes+=("")
done
# Throughput shapes: each input repeated along dimension 0 to a batch of 32.
for m in mlp digits-mlp gpt2 char-gpt bert llama vit resnet18; do
  args=$(/usr/bin/python3 "$root/bench/lib/batch_inputs.py" "$root/examples/models/$m" "$work/$m-b32")
  names+=("$m-b32")
  models+=("$root/examples/models/$m/model-dynamic.onnx")
  inputs+=("${args%% *}")
  repeats+=(50)
  shapes+=("${args#* }")
done
/usr/bin/python3 "$root/bench/import/make_gpt2.py" "$work/gpt2-small.onnx" > /dev/null
/usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], (np.arange(128) % 50257).reshape(1, 128).astype(np.int64))' "$work/ids.npy"
/usr/bin/python3 "$root/bench/import/make_gpt2.py" "$work/gpt2-small-8x512.onnx" --batch 8 --seq 512 > /dev/null
/usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], (np.arange(8 * 512) % 50257).reshape(8, 512).astype(np.int64))' "$work/ids-8x512.npy"
names+=(gpt2-small) models+=("$work/gpt2-small.onnx") inputs+=("$work/ids.npy") repeats+=(20) shapes+=("")
names+=(gpt2-s-8x512) models+=("$work/gpt2-small-8x512.onnx") inputs+=("$work/ids-8x512.npy") repeats+=(3) shapes+=("")

for i in "${!names[@]}"; do
  "$bin/hetpar-compile" "${models[$i]}" -o "$work/${names[$i]}" --targets=cpu \
    ${shapes[$i]} > /dev/null 2> "$work/compile.log" ||
    { cat "$work/compile.log" >&2; exit 1; }
done

# The torch module of each entry: the bundled model's own name, GPT2Small
# with the ONNX file's weights for the GPT-2-small-shaped ones.
torch_model() {
  case ${names[$1]} in
    gpt2-small | gpt2-s-8x512) echo "gpt2-small --onnx ${models[$1]}" ;;
    *) echo "${names[$1]%-b32}" ;;
  esac
}
# The smaller of a new median and the best so far (either may be empty).
best() { /usr/bin/python3 -c 'import sys; v = [float(a) for a in sys.argv[1:] if a]; print(min(v) if v else "")' "$@"; }

declare -A best_hp best_ort best_torch
for ((r = 0; r < rounds; ++r)); do
  for i in "${!names[@]}"; do
    n=${names[$i]}
    # hetpar-run prints "median 28.59 us" or "median 315.5 ms": in ms.
    hp=$("$bin/hetpar-run" "$work/$n" --backend cpu --repeat "${repeats[$i]}" --inputs "${inputs[$i]}" |
      sed -n 's/^hetpar_run alone: median \([0-9.]*\) \(us\|ms\|s\) .*/\1 \2/p' |
      awk '{ print $2 == "us" ? $1 / 1000 : $2 == "s" ? $1 * 1000 : $1 }')
    ort=$("$venv/bin/python" "$root/bench/peers/ort_latency.py" "${models[$i]}" "${repeats[$i]}" "$threads" \
      ${inputs[$i]//,/ } | sed -n 's/^median \([0-9.]*\) .*/\1/p')
    [[ -n $hp && -n $ort ]] || { echo "run.sh: no timing for $n" >&2; exit 1; }
    # A PyTorch side that cannot run (no transformers) leaves its column empty.
    pt=$("$torch_py" "$root/bench/peers/torch_latency.py" $(torch_model "$i") "${repeats[$i]}" \
      "$threads" ${inputs[$i]//,/ } | sed -n 's/^median \([0-9.]*\) .*/\1/p') || pt=
    echo "round $((r + 1)) $n: hetpar $hp ms, ort $ort ms, torch ${pt:--} ms" >&2
    best_hp[$n]=$(best "$hp" "${best_hp[$n]:-}")
    best_ort[$n]=$(best "$ort" "${best_ort[$n]:-}")
    best_torch[$n]=$(best "$pt" "${best_torch[$n]:-}")
  done
done

printf '%-14s %12s %12s %12s %8s %8s\n' model hetpar-ms ort-ms torch-ms "vs ort" "vs torch"
test_ratios=() big_ratios=() test_torch=() big_torch=()
ratio() { /usr/bin/python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])) if sys.argv[2] else "-")' "$1" "$2"; }
for n in "${names[@]}"; do
  r_ort=$(ratio "${best_hp[$n]}" "${best_ort[$n]}")
  r_pt=$(ratio "${best_hp[$n]}" "${best_torch[$n]}")
  case $n in
    *-b32 | *-8x512)
      big_ratios+=("$r_ort")
      [[ $r_pt == - ]] || big_torch+=("$r_pt") ;;
    *)
      test_ratios+=("$r_ort")
      [[ $r_pt == - ]] || test_torch+=("$r_pt") ;;
  esac
  [[ $r_pt == - ]] || r_pt+=x # no PyTorch side: "-"
  printf '%-14s %12.3f %12.3f %12s %8s %8s\n' "$n" "${best_hp[$n]}" "${best_ort[$n]}" \
    "${best_torch[$n]:--}" "${r_ort}x" "$r_pt"
done
geomean() {
  [[ $# -gt 2 ]] || { echo "geometric mean of HetPar / $1, $2: no models"; return; }
  /usr/bin/python3 -c 'import math, sys; r = [float(a) for a in sys.argv[3:]]; print("geometric mean of HetPar / %s, %s: %.2fx over %d models (best of %s rounds)" % (sys.argv[1], sys.argv[2], math.exp(sum(map(math.log, r)) / len(r)), len(r), "'"$rounds"'"))' "$@"
}
geomean ORT "test shapes and GPT-2 small at 1 x 128" "${test_ratios[@]}"
geomean ORT "throughput shapes (batch 32, GPT-2 small at 8 x 512)" "${big_ratios[@]}"
geomean PyTorch "test shapes and GPT-2 small at 1 x 128" "${test_torch[@]}"
geomean PyTorch "throughput shapes (batch 32, GPT-2 small at 8 x 512)" "${big_torch[@]}"
