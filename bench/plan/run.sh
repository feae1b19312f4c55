#!/usr/bin/env bash
# Planning speed: hetpar-compile --plan-only (import without weights, static
# pipeline, baselines, simulation, plan.json and trace.json) for GPT-2 small
# (test/Plan/Inputs/gpt2-small-b4s128.onnx, 124.5 M parameters, 4 x 128 tokens,
# training) on each example cluster. Prints wall seconds and peak RSS per cluster.
# Usage: bench/plan/run.sh   (after a build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%-24s %8s %10s %8s  %s\n" cluster wall_s peak_MB stages plan
for c in "$root"/examples/clusters/*.yaml; do
  name=$(basename "$c" .yaml)
  /usr/bin/time -f "%e %M" -o "$out/time" "$build/bin/hetpar-compile" \
    "$root/test/Plan/Inputs/gpt2-small-b4s128.onnx" --cluster "$c" --mode training \
    --plan-only -o "$out/$name" > "$out/report"
  read -r wall kb < "$out/time"
  plan=$(head -1 "$out/report")
  stages=$(grep -o '[0-9]* stage(s)' <<< "$plan" | cut -d' ' -f1)
  printf "%-24s %8s %10d %8s  %s\n" "$name" "$wall" $((kb / 1024)) "$stages" \
    "$(sed -n 2p "$out/report")"
done
