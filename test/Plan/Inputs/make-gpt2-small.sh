#!/usr/bin/env bash
# Makes gpt2-small-b4s128.onnx: GPT-2 small's graph (12 layers, hidden 768, 12
# heads, vocabulary 50257; batch 4, sequence 128) whose 124.5 M weights are stored
# as external data in gpt2-small-b4s128.onnx.data, which is then deleted. The
# planner never reads weights, so the model still plans; the 67 kB graph is what
# the repository keeps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 "$here/../../../bench/import/make_gpt2.py" "$here/gpt2-small-b4s128.onnx" \
  --external --batch 4 --seq 128
rm "$here/gpt2-small-b4s128.onnx.data"
