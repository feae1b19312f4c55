#!/usr/bin/env bash
# Usage: train-grad-case.sh CASE_DIR OUT_DIR
# One gradient-rule case of test/Train/Inputs/grad (docs/training-references.md
# section 1): compiles CASE_DIR/model.onnx for training with its own output as
# the loss and SGD lr 1, runs one step (the model has no inputs: --data names
# an empty folder) and checks the loss and every trained parameter
# (initializer - grad) with test/lib/compare-training.py. Prints the case's
# name and the comparison; exits non-zero on any failure.
set -euo pipefail
case_dir=$1
out=$2
name=$(basename "$case_dir")
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
[ -x "$python" ] || python=python3
rm -rf "$out" && mkdir -p "$out/empty"
echo "case $name"
hetpar-compile "$case_dir/model.onnx" --mode training --loss output \
  --optimizer sgd --lr 1 --targets cpu -o "$out/prog" > "$out/compile.txt" 2>&1 ||
  { cat "$out/compile.txt"; exit 1; }
hetpar-run "$out/prog" --train --data "$out/empty" --steps 1 \
  --checkpoint "$out/ck" --loss-log "$out/loss.log" > "$out/run.txt" 2>&1 ||
  { cat "$out/run.txt"; exit 1; }
"$python" "$here/compare-training.py" --checkpoint "$out/ck/checkpoint.safetensors" \
  --ref "$case_dir" --model "$case_dir/model.onnx" --mode grad \
  --loss-log "$out/loss.log"
