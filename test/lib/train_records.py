"""What a training run leaves behind, read the one way the test scripts and
bench/train/plans.py read it.

  loss_log(path)       {step: entry} of a `hetpar-run --loss-log` file (one
                       JSON object per line), training steps only (no "eval"
                       entries); entry["loss"] is the step's loss,
                       entry["seconds"] the time since training began.
  program_bytes(dev)   the device memory the runtime allocates for one device
                       of manifest.json's "devices": weights.bin + the arena +
                       the input and output buffers, in bytes.
  loss_difference, checkpoint_difference: two runs of one training compared.
  random_training_data: a random batch in a bundled model's value ranges.
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


def loss_difference(one_log, plan_log):
    """The largest relative difference of the steps' losses of two loss logs,
    which must hold the same steps (ValueError otherwise)."""
    a, b = loss_log(one_log), loss_log(plan_log)
    if not a or sorted(a) != sorted(b):
        raise ValueError("loss logs hold different steps: %s vs %s" % (sorted(a), sorted(b)))
    return max(abs(float(b[s]["loss"]) - float(a[s]["loss"])) /
               max(abs(float(a[s]["loss"])), 1e-30) for s in a)


def checkpoint_difference(one_files, plan_files, names=None):
    """The largest absolute difference of the float tensors the two
    checkpoints (lists of safetensors files, a plan's devices' joined by
    their layout index) both hold (of `names` only, when given), and how
    many were compared."""
    import numpy as np
    from safetensors_reader import read_checkpoints
    x, y = read_checkpoints(one_files), read_checkpoints(plan_files)
    worst, compared = 0.0, 0
    for name, t in x.items():
        if names is not None and name not in names:
            continue
        u = y.get(name)
        if u is None or u.shape != t.shape or t.dtype.kind != "f" or not t.size:
            continue
        compared += 1
        worst = max(worst, float(np.max(np.abs(t.astype(np.float64) -
                                                u.astype(np.float64)))))
    return worst, compared


def random_training_data(train_dir, out_dir, rows, seed=7):
    """`rows` random samples of every input and the labels of a bundled
    model's training data in `train_dir` (its *.npy but the references), in
    their value ranges: integers (token ids, classes) below the largest seen
    + 1, floats standard normal; an attention_mask ones with random zeros in
    its second half."""
    import glob
    import os

    import numpy as np
    os.makedirs(out_dir, exist_ok=True)
    r = np.random.default_rng(seed)
    for path in sorted(glob.glob(os.path.join(train_dir, "*.npy"))):
        name = os.path.basename(path)[:-4]
        if name.startswith(("grad_", "adamw", "running_", "loss")):
            continue
        a = np.load(path)
        shape = (rows,) + a.shape[1:]
        if name == "attention_mask":
            out = np.ones(shape, a.dtype)
            half = shape[1] // 2
            out[:, half:] = r.integers(0, 2, (rows, shape[1] - half))
        elif a.dtype.kind == "i":
            out = r.integers(0, int(a.max()) + 1, shape).astype(a.dtype)
        else:
            out = r.standard_normal(shape).astype(a.dtype)
        np.save(os.path.join(out_dir, name + ".npy"), out)
