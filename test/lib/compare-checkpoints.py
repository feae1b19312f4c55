#!/usr/bin/env python3
"""Compares two training checkpoints tensor by tensor.

  compare-checkpoints.py A.safetensors[,A2...] B.safetensors[,B2...] ATOL

Every tensor of A must be in B with the same shape and dtype and within ATOL
(absolute); tensors only in B (e.g. gradient accumulation buffers) are
listed and skipped. A and B may each be several files, joined by commas (a
pipeline's stage checkpoints, each holding its own stage's tensors): their
unions are compared. The device checkpoints (checkpoint.device<id>.safetensors)
of a ZeRO-1 or tensor-parallel run hold shards: their __metadata__.layout
index (docs/training.md, "Checkpoint layout") joins the shards of every file
into whole tensors, which must cover each tensor; where several files hold
the same part (the data-parallel replicas of a tensor-parallel shard), they
must hold the same values. Prints the largest difference; exits 1 on a failure."""
import sys

import numpy as np

from safetensors_reader import read_checkpoints

try:
    a, b = read_checkpoints(sys.argv[1].split(",")), read_checkpoints(sys.argv[2].split(","))
except ValueError as e:
    sys.exit(str(e))
atol = float(sys.argv[3])
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
