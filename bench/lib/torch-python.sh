# Sourced by the benchmarks that run PyTorch beside HetPar (bench/train/run.sh,
# bench/peers/run.sh). torch_python BUILD_DIR prints a python that has torch
# (Debian's python3-torch) and, for the Hugging Face models of
# scripts/models/export_models.py (gpt2 bert llama vit), transformers 4.36:
# $TORCH_PYTHON when set; else Debian's /usr/bin/python3 when it has
# transformers; else a venv with Debian's packages plus transformers from PyPI,
# made once in BUILD_DIR/bench-train-venv. Without network the venv has no
# transformers and the Hugging Face models' PyTorch side is skipped (messages
# on stderr).
torch_python() {
  local build=$1 py=/usr/bin/python3
  if [[ -n ${TORCH_PYTHON:-} ]]; then
    echo "$TORCH_PYTHON"
    return
  fi
  if $py -c 'import torch, transformers' 2> /dev/null; then
    echo "$py"
    return
  fi
  local venv=$build/bench-train-venv
  if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import transformers' 2> /dev/null; then
    echo "making $venv (Debian's torch + transformers 4.36 from PyPI)" >&2
    if $py -m venv --system-site-packages "$venv" &&
      "$venv/bin/python" -m pip install -q 'transformers==4.36.2' >&2; then
      :
    else
      echo "no transformers: the Hugging Face models' PyTorch side is skipped" >&2
    fi
  fi
  if [[ -x $venv/bin/python ]]; then echo "$venv/bin/python"; else echo "$py"; fi
}
