#!/usr/bin/env bash
# The GPU checks. A GPU machine here has the CUDA toolkit, CMake and Ninja but
# no LLVM/MLIR, so compiling happens where HetPar is built and the GPU machine
# builds and runs the emitted CUDA sources.
#
# 1. Where HetPar is built:
#      scripts/gpu-check.sh --prepare [PREP]          (PREP: build/gpu-check)
#    writes sources-only programs (hetpar-compile --targets=none --cuda-arch=90)
#    of every ONNX node test that compiles and of the real models (float32,
#    float16, bfloat16), their inputs and reference outputs, the tolerance of
#    each model (test/lib/compare-outputs.py's bound), and a copy of hetpar-run
#    (libstdc++ linked in). About 30 MB.
#
# 2. On the GPU machine, one command, under 5 minutes:
#      scripts/gpu-check.sh OUTDIR [PREP]
#    builds hetpar-profile with its CUDA backend and measures the GPU
#    (OUTDIR/profile.json) and the real models' kernels (OUTDIR/measured.txt);
#    then, when PREP exists, builds every prepared program with nvcc (its
#    manifest's build command, for this GPU's architecture), runs the node
#    tests on the GPU against their stored outputs (ONNX's tolerances: rtol
#    1e-3, atol 1e-7), the real models against ONNX Runtime's outputs, the
#    training programs against the CPU backend's losses (bench/train/gpu.py), and
#    prints each model's median latency next to PyTorch eager's on the same
#    GPU where torch is installed (bench/codegen/torch_eager.py).
#
# 3. Back where HetPar is built:
#      scripts/gpu-check.sh --report OUTDIR
#    predicts every kernel again with the measured profile and prints the
#    median relative error of predicted against measured kernel times.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [[ "${1:-}" == "--prepare" ]]; then
  prep=${2:-$root/build/gpu-check}
  bin=${HETPAR_BUILD_DIR:-$root/build}/bin
  rm -rf "$prep"
  mkdir -p "$prep/bin" "$prep/models"
  cp "$bin/hetpar-run" "$prep/bin/"
  for m in "$root"/examples/models/*/; do
    m=$(basename "$m")
    # Models without stored inputs and outputs (resnet18-train: a training
    # export) have nothing to check against.
    [[ -f "$root/examples/models/$m/input_0.npy" ]] || continue
    for dt in float32 float16 bfloat16; do
      d=$prep/models/$m-$dt
      mkdir -p "$d/ref"
      "$bin/hetpar-compile" "$root/examples/models/$m/model.onnx" -o "$d/out" \
        --targets=none --cuda-arch=90 --dtype=$dt > /dev/null
      cp "$root"/examples/models/$m/input_*.npy "$d/"
      cp "$root"/examples/models/$m/output_*.npy "$d/ref/"
      # The tolerance of compare-outputs.py, as hetpar-run's --rtol/--atol.
      /usr/bin/python3 "$root/test/lib/compare-outputs.py" \
        "$root/examples/models/$m/model.onnx" "$root/examples/models/$m" \
        "$root/examples/models/$m" --dtype $dt |
        sed -n 's/.*tolerance \([0-9.e+-]*\),.*/\1/p' | head -1 > "$d/tolerance"
    done
  done
  # Multi-device plans (issue 6): GPT-2 tiny split by the tensor-parallel and
  # the pipeline baselines over 4 devices, run there as 4 ranks on the one GPU.
  for bl in tensor_parallel pipeline; do
    d=$prep/multi/gpt2-$bl
    mkdir -p "$d"
    "$bin/hetpar-compile" "$root/examples/models/gpt2/model.onnx" \
      --cluster "$root/examples/clusters/a100-t4x3-pcie.yaml" --baseline $bl \
      --targets=none --cuda-arch=90 -o "$d/out" > /dev/null
    cp "$root"/examples/models/gpt2/input_0.npy "$d/"
    mkdir -p "$d/ref" && cp "$root"/examples/models/gpt2/output_0.npy "$d/ref/"
  done
  # Training programs (issue 12): bench/train's bundled models, sources only,
  # with their data and the CPU backend's loss log of the same steps.
  /usr/bin/python3 "$root/bench/train/gpu.py" prepare "$prep/train" --build "$(dirname "$bin")"
  # Large models and kernels against PyTorch (issue 15): GPT-2 small and a
  # BERT-base-sized encoder at 8 x 512, a chain of 16384 x 8192 x 8192 GEMMs,
  # attention at 2048 and 4096; weights stripped (remade there).
  /usr/bin/python3 "$root/bench/gpu/run.py" prepare "$prep/big" --build "$(dirname "$bin")"
  /usr/bin/python3 "$root/test/lib/run-node-tests.py" /usr/share/libonnx-testdata/data \
    --bin "$bin" --prepare "$prep/node"
  # One copy of the runtime headers instead of one per program (the carry to
  # a GPU machine is limited to 64 MiB); build_one adds -I for it.
  cp -r "$prep/models/mlp-float32/out/include" "$prep/include"
  find "$prep" -mindepth 3 -type d -name include -prune -exec rm -rf {} +
  echo "$(du -sb "$prep" | cut -f1) bytes in $prep"
  exit 0
fi

if [[ "${1:-}" == "--report" ]]; then
  dir=${2:?usage: gpu-check.sh --report OUTDIR}
  kind=$(/usr/bin/python3 -c 'import json,sys; print(next(iter(json.load(open(sys.argv[1]))["devices"])))' "$dir/profile.json")
  echo "== device: $(grep -o '"device_name": "[^"]*"' "$dir/profile.json") as $kind"
  rm -rf "$dir/predicted" "$dir/datasheet"
  PROFILE="$dir/profile.json" DEVICE_KIND=$kind "$root/bench/kernels/make-lists.sh" "$dir/predicted"
  DEVICE_KIND=$kind "$root/bench/kernels/make-lists.sh" "$dir/datasheet"
  for list in "$dir"/predicted/*.txt; do
    name=$(basename "$list" .txt)
    echo "== $name (calibrated)"
    /usr/bin/python3 "$root/scripts/compare-kernels.py" --predicted "$list" \
      --measured "$dir/measured.txt" --worst 3 | grep -v '^kind\|^elementwise\|^gemm\|^copy\|^reduce\|^softmax\|^layernorm'
  done
  echo "== all models, datasheet numbers only"
  /usr/bin/python3 "$root/scripts/compare-kernels.py" --predicted "$dir"/datasheet/*.txt \
    --measured "$dir/measured.txt" --worst 0
  echo "== all models, calibrated with the measured profile"
  exec /usr/bin/python3 "$root/scripts/compare-kernels.py" --predicted "$dir"/predicted/*.txt \
    --measured "$dir/measured.txt" --max-median 0.15
fi

out=${1:?usage: gpu-check.sh OUTDIR [PREP] | --prepare [PREP] | --report OUTDIR}
prep=${2:-$root/build/gpu-check}
# Absolute: each program builds in its own folder.
if [[ -d "$prep" ]]; then prep=$(cd "$prep" && pwd); fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ' || true)
cc=${cc:-90}
jobs=$(nproc)
# The tensor-core attention kernel is opt-in until checked on a GPU: this
# check runs every program with it (bench/gpu/run.py times the default too).
export HETPAR_ATTENTION=${HETPAR_ATTENTION:-mma}
# HETPAR_GPU_CHECK_PARTS picks parts (a rerun inside a short GPU lease): any of
# models multi big train node profile; all by default.
parts=" ${HETPAR_GPU_CHECK_PARTS:-models multi big train node profile} "
parts=${parts//,/ }
want() { [[ "$parts" == *" $1 "* ]]; }
echo "== parts:$parts"

# --- the generated programs (first: they are the product) -------------------
if [[ -d "$prep" ]]; then
  run=$prep/bin/hetpar-run
  # The parts' folders, the node tests last (the most programs, the least new).
  dirs=()
  for p in models multi big train node; do
    if want $p && [[ -d "$prep/$p" ]]; then dirs+=("$prep/$p"); fi
  done
  echo "== building $(find "${dirs[@]}" -name manifest.json | wc -l) programs with nvcc for sm_$cc ($jobs jobs)"
  build_one() {
    # One nvcc command per device of the manifest.
    local dir=$1 cc=$2 prep=$3 cmd
    sed -n 's/.*"cuda": "\(nvcc[^"]*\)".*/\1/p' "$dir/manifest.json" |
      while read -r cmd; do
        cmd="${cmd//compute_90,code=sm_90/compute_$cc,code=sm_$cc} -I$prep/include"
        (cd "$dir" && PATH=$PATH:/usr/local/cuda/bin $cmd >> build-cuda.log 2>&1) ||
          echo "BUILD FAILED $dir: $(head -3 "$dir/build-cuda.log" | tr '\n' ' ')"
      done
  }
  export -f build_one
  start=$(date +%s)
  find "${dirs[@]}" -name manifest.json -printf '%h\n' |
    xargs -P "$jobs" -I{} bash -c "build_one {} $cc $prep" > "$out/build-failures.txt" || true
  head -5 "$out/build-failures.txt"
  echo "built in $(( $(date +%s) - start )) s"

  want models && echo "== real models on the GPU against ONNX Runtime's outputs (median of 100 runs)"
  want models && for d in "$prep"/models/*/; do
    name=$(basename "$d")
    tol=$(cat "$d/tolerance")
    ins=$(ls "$d"input_*.npy | sort -V | paste -sd,)
    if "$run" "$d/out" --backend cuda --repeat 100 --inputs "$ins" --check "$d/ref" \
         --rtol "$tol" --atol "$tol" > "$d/run.log" 2>&1; then
      status=match
    elif grep -q MISMATCH "$d/run.log"; then
      status=MISMATCH
    else
      status=FAILED
    fi
    # The same runs without CUDA graphs (docs/codegen.md, "CUDA graphs").
    HETPAR_CUDA_GRAPHS=0 "$run" "$d/out" --backend cuda --repeat 100 --inputs "$ins" \
      > "$d/eager.log" 2>&1 || true
    printf '%-18s %-8s %s; without CUDA graphs: %s\n' "$name" "$status" \
      "$(grep -m1 'hetpar_run alone' "$d/run.log" || grep -m1 error "$d/run.log")" \
      "$(grep -m1 'hetpar_run alone' "$d/eager.log" || grep -m1 error "$d/eager.log")"
  done | tee "$out/models.txt"
  want multi && echo "== multi-device plans: every rank on this one GPU (host-staged MPI collectives)"
  want multi && for d in "$prep"/multi/*/; do
    name=$(basename "$d")
    predicted=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predicted_step_time_s"])' "$d/out/plan.json")
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 \
      "$run" "$d/out" --backend cuda --repeat 50 --inputs "$d/input_0.npy" \
      --check "$d/ref" --rtol 1e-3 --atol 1e-4 > "$d/run.log" 2>&1 || true
    printf '%-26s %s; predicted %s s for the plan'"'"'s cluster; measured %s\n' "$name" \
      "$(grep -m1 -o 'check output 0: [a-zA-Z]*' "$d/run.log" || grep -m1 -i error "$d/run.log")" \
      "$predicted" "$(grep -m1 'latency: median [0-9.]* [mu]s' -o "$d/run.log")"
    cp "$d/run.log" "$out/multi-$name.log"
  done | tee "$out/multi.txt"
  # NCCL forced with every rank on the one GPU: NCCL refuses a GPU twice, and
  # the program must say so (on a machine with a GPU per rank it is the path
  # taken by default).
  d=$prep/multi/gpt2-tensor_parallel
  if want multi && [[ -d "$d" ]]; then
    HETPAR_COLLECTIVES=nccl HETPAR_COLLECTIVE_TIMEOUT=60 OMPI_ALLOW_RUN_AS_ROOT=1 \
      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 "$run" "$d/out" --backend cuda \
      --inputs "$d/input_0.npy" --check "$d/ref" --rtol 1e-3 --atol 1e-4 \
      > "$out/multi-nccl-forced.log" 2>&1 || true
    echo "NCCL forced, 4 ranks on one GPU: $(grep -m1 -E 'check output|error' "$out/multi-nccl-forced.log")"
  fi

  if want big && [[ -d "$prep/big" ]]; then
    echo "== large models and kernels against PyTorch eager on the same GPU"
    PYTHONUNBUFFERED=1 timeout 600 python3 "$root/bench/gpu/run.py" run "$prep/big" "$out" \
      --hetpar-run "$run" | tee "$out/big.txt" || true
  fi

  if want train && [[ -d "$prep/train" ]]; then
    echo "== training on the GPU: losses against the CPU backend's, step time against PyTorch eager"
    python3 "$root/bench/train/gpu.py" run "$prep/train" "$out" --hetpar-run "$run" |
      tee "$out/train.txt" || true
  fi

  want node && echo "== ONNX node tests on the GPU (rtol 1e-3, atol 1e-7; $jobs at a time)"
  run_node() {
    local d=$1 run=$2 ins
    ins=$(ls "$d"input_*.npy 2>/dev/null | sort -V | paste -sd, || true)
    if timeout 60 "$run" "$d/out" --backend cuda ${ins:+--inputs "$ins"} --check "$d/expected" \
         --rtol 1e-3 --atol 1e-7 > "$d/run.log" 2>&1; then
      echo "PASS $(basename "$d")"
    else
      echo "FAIL $(basename "$d"): $(grep -m1 -E 'error|MISMATCH' "$d/run.log")"
    fi
  }
  export -f run_node
  if want node; then
    find "$prep"/node -mindepth 1 -maxdepth 1 -type d | sort |
      xargs -P "$jobs" -I{} bash -c "run_node {}/ $run" > "$out/node-results.txt"
    grep '^FAIL' "$out/node-results.txt" > "$out/node-failures.txt" || true
    echo "node tests on the GPU: passed $(grep -c '^PASS' "$out/node-results.txt"), failed $(grep -c '^FAIL' "$out/node-results.txt") (of $(wc -l < "$out/node-results.txt") that compile)"
    head -40 "$out/node-failures.txt"
  fi
  # The logs of what failed, for reading back where HetPar is built.
  mkdir -p "$out/logs"
  [[ -f "$out/node-failures.txt" ]] && sed -n 's/^FAIL \([^:]*\):.*/\1/p' "$out/node-failures.txt" | head -200 |
    while read -r n; do cp "$prep/node/$n/run.log" "$out/logs/node-$n.log"; done
  for d in "$prep"/models/*/; do cp "$d/run.log" "$out/logs/model-$(basename "$d").log" 2>/dev/null || true; done
  find "$prep" -name build-cuda.log -size +0 | head -50 |
    while read -r f; do cp "$f" "$out/logs/build-$(basename "$(dirname "$(dirname "$f")")").log"; done

  if ! want models; then
    :
  elif python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "== PyTorch eager on the same GPU"
    python3 "$root/bench/codegen/torch_eager.py" --device cuda --repeat 100 | tee "$out/torch.txt"
  else
    echo "== PyTorch eager: torch with CUDA is not installed here; skipped"
  fi
else
  echo "== no prepared programs in $prep (run scripts/gpu-check.sh --prepare where HetPar is built)"
fi

# --- calibration: microbenchmarks and the real models' kernels ---------------
want profile || exit 0
build=${TMPDIR:-/tmp}/hetpar-profile-build
echo "== building hetpar-profile for sm_$cc"
cmake -S "$root/tools/hetpar-profile" -B "$build" -G Ninja \
  -DCMAKE_CUDA_ARCHITECTURES="$cc" > "$out/build.log" 2>&1
cmake --build "$build" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "== microbenchmarks"
"$build/hetpar-profile" --backend cuda -o "$out/profile.json" > "$out/profile.log" 2>&1
tail -3 "$out/profile.log"
echo "== the real models' kernels"
lists=()
for f in "$root"/bench/kernels/*.txt; do lists+=(--kernels "$f"); done
"$build/hetpar-profile" --backend cuda --quick "${lists[@]}" --measured "$out/measured.txt" \
  2> "$out/kernels.log"
tail -1 "$out/kernels.log"
