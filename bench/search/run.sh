#!/usr/bin/env bash
# The plan search benchmark (issue 5; numbers in docs/performance.md).
#  1. Search time: hetpar-compile --plan-only on GPT-3-shaped models (weights
#     never written, bench/search/make_gpt.py), training, on the example
#     clusters; wall seconds and peak RSS of the whole command (import, search,
#     baselines, plan.json and trace.json), and the search's own seconds.
#  2. Heterogeneity gain: on each example cluster with mixed kinds, the
#     predicted throughput of HetPar's plan over that of the best plan a
#     homogeneous planner makes (--assume-kind: even splits as if every device
#     were of one kind; each kind present is tried and the best kept), both
#     evaluated on the real cluster by the same cost model.
# Usage: bench/search/run.sh [--quick]   (after a build; --quick skips GPT-3 175B)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
compile=$build/bin/hetpar-compile
clusters=$root/examples/clusters
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
quick=${1:-}

gen() { # NAME PRESET BATCH SEQ
  /usr/bin/python3 "$root/bench/search/make_gpt.py" "$out/$1.onnx" --preset "$2" \
    --batch "$3" --seq "$4" --no-weights > /dev/null
}
field() { # FILE KEY...: a number from plan.json
  /usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(d)' "$@"
}

echo "== search time =="
printf "%-12s %-12s %-9s %8s %8s %9s %7s  %s\n" model cluster mode wall_s search_s peak_MB stages result
gen gpt3-13b gpt3-13b 1536 2048
gen gpt3-175b gpt3-175b 1536 2048
runs=("gpt3-13b mixed-64 training" "gpt3-13b mixed-1024 training")
[[ "$quick" == --quick ]] || runs+=("gpt3-175b mixed-64 training" \
  "gpt3-175b mixed-64 inference" "gpt3-175b mixed-1024 training")
for r in "${runs[@]}"; do
  read -r model cluster mode <<< "$r"
  dir=$out/$model-$cluster-$mode
  if /usr/bin/time -f "%e %M" -o "$out/time" "$compile" "$out/$model.onnx" \
      --cluster "$clusters/$cluster.yaml" --mode "$mode" --plan-only -o "$dir" \
      > "$out/report" 2> "$out/err"; then
    read -r wall kb < "$out/time"
    printf "%-12s %-12s %-9s %8s %8.2f %9d %7s  %s\n" "$model" "$cluster" "$mode" "$wall" \
      "$(field "$dir/plan.json" search seconds)" $((kb / 1024)) \
      "$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["stages"]))' "$dir/plan.json")" \
      "$(sed -n 2p "$out/report")"
  else
    read -r wall kb < <(tail -1 "$out/time")
    printf "%-12s %-12s %-9s %8s %8s %9d %7s  %s\n" "$model" "$cluster" "$mode" "$wall" - \
      $((kb / 1024)) - "$(head -1 "$out/err" | cut -c1-330)"
  fi
done

echo
echo "== heterogeneity gain (training; throughput, samples/s) =="
gen gpt2-b64 gpt2-small 64 512
printf "%-22s %-10s %12s %12s %-16s %7s\n" cluster model hetpar homogeneous "best kind" gain
for pair in "a100-t4x3-pcie gpt2-b64" "a100x4-v100x4-2nodes gpt2-b64" \
            "mixed-64 gpt2-b64" "mixed-64 gpt3-13b" "mixed-1024 gpt3-13b"; do
  read -r cluster model <<< "$pair"
  "$compile" "$out/$model.onnx" --cluster "$clusters/$cluster.yaml" --mode training \
    --plan-only -o "$out/h" > /dev/null
  het=$(field "$out/h/plan.json" predicted_throughput)
  kinds=$("$build/bin/hetpar-cluster" "$clusters/$cluster.yaml" | \
    sed -n 's/.*device [0-9]*: \([^,]*\),.*/\1/p' | sort -u)
  best=0 bestKind=none
  for kind in $kinds; do
    if "$compile" "$out/$model.onnx" --cluster "$clusters/$cluster.yaml" --mode training \
        --plan-only --assume-kind "$kind" -o "$out/k" > /dev/null 2>&1; then
      t=$(field "$out/k/plan.json" predicted_throughput)
      if /usr/bin/python3 -c "import sys; sys.exit(0 if $t > $best else 1)"; then
        best=$t bestKind=$kind
      fi
    fi
  done
  gain=$(/usr/bin/python3 -c "print('%.2fx' % ($het / $best) if $best > 0 else 'inf')")
  printf "%-22s %-10s %12.2f %12.2f %-16s %7s\n" "$cluster" "$model" "$het" "$best" \
    "$bestKind" "$gain"
done

# 3. Mixed precision: GPT-3 175B in training on 128 DGX A100 nodes
#    (bench/search/dgx-a100x128.yaml, the 1024 GPUs on which Megatron-LM trained
#    it), the float32 graph planned in float32 and with --dtype bfloat16, and the
#    graph converted to float16 planned as it is. Megatron-LM's step on that
#    setup: 31.5 s (Narayanan et al., SC 2021, section 5.1: 140 TFLOP/s per GPU at
#    batch 1536; eq. 3 gives 4.51e18 FLOP per iteration, / (1024 x 1.40e14)).
[[ "$quick" == --quick ]] && exit 0
echo
echo "== mixed precision: GPT-3 175B, training, batch 1536 x 2048, 128 DGX A100 =="
/usr/bin/python3 "$root/bench/search/make_gpt.py" "$out/gpt3-175b-f16.onnx" --preset gpt3-175b \
  --batch 1536 --seq 2048 --no-weights --dtype float16 > /dev/null
printf "%-16s %-9s %10s %8s %11s %9s  %s\n" graph dtype step_s stages microbatch peak_GB vs_megatron
for r in "gpt3-175b float32" "gpt3-175b bfloat16" "gpt3-175b-f16 float32"; do
  read -r model dtype <<< "$r"
  "$compile" "$out/$model.onnx" --cluster "$root/bench/search/dgx-a100x128.yaml" \
    --mode training --dtype "$dtype" --plan-only -o "$out/mp" > /dev/null
  /usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
peak=max(x["peak_memory_bytes"] for x in d["devices"])
t=d["predicted_step_time_s"]
print("%-16s %-9s %10.2f %8d %11d %9.2f  %.2fx" % (sys.argv[2], sys.argv[3], t,
      len(d["stages"]), d["microbatches"], peak / 1e9, t / 31.5))' \
    "$out/mp/plan.json" "$model" "$dtype"
done
