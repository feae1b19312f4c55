"""What a training run leaves behind, read the one way the test scripts and
bench/train/plans.py read it.

  loss_log(path)       {step: entry} of a `hetpar-run --loss-log` file (one
                       JSON object per line), training steps only (no "eval"
                       entries); entry["loss"] is the step's loss,
                       entry["seconds"] the time since training began.
  program_bytes(dev)   the device memory the runtime allocates for one device
                       of manifest.json's "devices": weights.bin + the arena +
                       the input and output buffers, in bytes.
"""
import json

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "bool": 1}


def loss_log(path):
    out = {}
    with open(path) as f:
        for line in f:
            entry = json.loads(line)
            if "loss" in entry and "eval" not in entry:
                out[entry["step"]] = entry
    return out


def program_bytes(dev):
    io = 0
    for t in dev["inputs"] + dev["outputs"]:
        n = SIZES[t["dtype"]]
        for d in t["shape"]:
            n *= d
        io += n
    return dev["weights_bytes"] + dev["arena_bytes"] + io
