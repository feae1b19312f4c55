#!/usr/bin/env python3
"""Compares two training checkpoints tensor by tensor.

  compare-checkpoints.py A.safetensors B.safetensors ATOL

Every tensor of A must be in B with the same shape and dtype and within ATOL
(absolute); tensors only in B (e.g. gradient accumulation buffers) are
listed and skipped. Prints the largest difference; exits 1 on a failure."""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    return {k: np.frombuffer(body[t["data_offsets"][0]:t["data_offsets"][1]],
                             DTYPES[t["dtype"]]).reshape(t["shape"])
            for k, t in header.items()}


a, b, atol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
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
