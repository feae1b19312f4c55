#!/usr/bin/env python3
"""Compares two training checkpoints tensor by tensor.

  compare-checkpoints.py A.safetensors[,A2...] B.safetensors[,B2...] ATOL

Every tensor of A must be in B with the same shape and dtype and within ATOL
(absolute); tensors only in B (e.g. gradient accumulation buffers) are
listed and skipped. A and B may each be several files, joined by commas (a
pipeline's stage checkpoints, each holding its own stage's tensors): their
unions are compared. A ZeRO-1 run's device checkpoints
(checkpoint.device<id>.safetensors) hold shards of the optimizer state: their
__metadata__.layout index (docs/training.md, "Sharded optimizer state") joins
the shards of every file into whole tensors, which must cover each parameter
exactly once. Prints the largest difference; exits 1 on a failure."""
import json
import struct
import sys

import numpy as np

from safetensors_reader import read_safetensors



def read_layout(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    meta = json.loads(data[8:8 + n]).get("__metadata__", {})
    return json.loads(meta["layout"]) if "layout" in meta else {}


def read_union(paths):
    out, shards = {}, {}
    for path in paths.split(","):
        tensors = read_safetensors(path)
        for name, entry in read_layout(path).items():
            shards.setdefault(name, []).append((entry, tensors.pop(name)))
        out.update(tensors)
    for name, pieces in shards.items():
        shape = pieces[0][0]["shape"]
        whole = np.full(int(np.prod(shape)), np.nan, np.float64)
        covered = np.zeros(whole.size, np.int64)
        for entry, x in pieces:
            at, n = entry["offset"], entry["elements"]
            whole[at:at + n] = x.ravel()
            covered[at:at + n] += 1
        if not np.all(covered == 1):
            sys.exit("%s: the shards of %s do not cover it exactly once" % (paths, name))
        out[name] = whole.astype(pieces[0][1].dtype).reshape(shape)
    return out


a, b, atol = read_union(sys.argv[1]), read_union(sys.argv[2]), float(sys.argv[3])
ok, worst, where = True, 0.0, ""
for name, x in sorted(a.items()):
    y = b.get(name)
    if y is None or y.shape != x.shape or y.dtype != x.dtype:
        print("%s: missing or different in B" % name)
        ok = False
        continue
    d = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
    if d > worst:
        worst, where = d, name
    ok &= d <= atol
extra = sorted(set(b) - set(a))
print("%d tensors compared; largest difference %.3g (%s; atol %g); only in B: %s"
      % (len(a), worst, where or "-", atol, ", ".join(extra) or "none"))
print("ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
