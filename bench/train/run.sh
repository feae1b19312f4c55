#!/usr/bin/env bash
# The training benchmark (issue 12; numbers in docs/performance.md): one training
# step of each bundled model and of GPT-2 small (124M, 4 x 128 tokens) on the CPU
# backend against PyTorch on the same machine, and each program's memory against
# the simulator's prediction. See bench/train/run.py for what is measured.
#
# Usage: bench/train/run.sh [run.py options] [models...]   (after a build)
#   e.g. bench/train/run.sh --threads 1 gpt2 bert
#
# The PyTorch side needs torch (Debian's python3-torch) and, for the Hugging Face
# models (gpt2 bert llama vit), transformers 4.36: TORCH_PYTHON names a python that
# has both; otherwise Debian's /usr/bin/python3 is used when it has transformers,
# else a venv with Debian's packages plus transformers from PyPI is made once in
# build/bench-train-venv. Without network the Hugging Face models' PyTorch side is
# skipped (their HetPar side still runs). GPT-2 small, mlp and resnet18 need only
# torch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
py=/usr/bin/python3
source "$root/bench/lib/torch-python.sh"
torch_py=$(torch_python "$build")
exec $py "$root/bench/train/run.py" --build "$build" --torch-python "$torch_py" "$@"
