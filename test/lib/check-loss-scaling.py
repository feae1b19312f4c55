#!/usr/bin/env python3
"""Checks of dynamic loss scaling (test/Train/mixed-precision.test), against
the rule of torch.cuda.amp.GradScaler with its defaults (init_scale 2^16,
backoff 0.5, growth 2 every 2000 finite steps), written out by hand here.

  check-loss-scaling.py log LOSS_LOG
      a run whose first step overflows: step 1 is skipped with the scale
      halved to 2^15; every later step halves the scale when skipped and keeps
      it otherwise (fewer than 2000 steps: no growth); some step after the
      skips updates; the mean loss of the last 5 steps is below the first 5's.
  check-loss-scaling.py skipped CHECKPOINT MODEL.onnx
      the checkpoint after one skipped step: every parameter bit for bit the
      model's initializer, every optimizer state zero, hetpar.step 1 (a
      skipped step still counts), hetpar.good_steps 0, hetpar.loss_scale 2^15.
Prints what it checked; exits 1 on a failed check."""
import json
import struct
import sys

import numpy as np

from safetensors_reader import read_safetensors
import onnx
from onnx import numpy_helper



def check_log(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    ok = rows[0]["skipped"] and rows[0]["loss_scale"] == 2.0 ** 15
    print("step 1: skipped %s, loss scale %g (expected skipped, 32768)"
          % (rows[0]["skipped"], rows[0]["loss_scale"]))
    for prev, row in zip(rows, rows[1:]):
        want = prev["loss_scale"] / 2 if row["skipped"] else prev["loss_scale"]
        if row["loss_scale"] != want:
            print("step %d: loss scale %g, expected %g"
                  % (row["step"], row["loss_scale"], want))
            ok = False
    skipped = [r["step"] for r in rows if r["skipped"]]
    updated = [r["step"] for r in rows if not r["skipped"]]
    print("skipped steps %s; %d updates" % (skipped, len(updated)))
    ok &= bool(updated)
    first = np.mean([r["loss"] for r in rows[:5]])
    last = np.mean([r["loss"] for r in rows[-5:]])
    print("mean loss: first 5 steps %.4f, last 5 %.4f" % (first, last))
    return ok and last < first


def check_skipped(ckpt, model):
    t = read_safetensors(ckpt)
    init = {i.name: numpy_helper.to_array(i)
            for i in onnx.load(model).graph.initializer}
    ok = True
    params = [n for n in t if n in init]
    for n in params:
        if t[n].tobytes() != init[n].astype(np.float32).tobytes():
            print("parameter %s changed in a skipped step" % n)
            ok = False
    states = [n for n in t if n.endswith((".exp_avg", ".exp_avg_sq"))]
    for n in states:
        if np.any(t[n] != 0):
            print("optimizer state %s is not zero" % n)
            ok = False
    counters = (int(t["hetpar.step"]), int(t["hetpar.good_steps"]),
                float(t["hetpar.loss_scale"]))
    print("%d parameters unchanged, %d optimizer states zero; step %d, good "
          "steps %d, loss scale %g" % ((len(params), len(states)) + counters))
    return ok and bool(params) and counters == (1, 0, 2.0 ** 15)


if __name__ == "__main__":
    good = check_log(sys.argv[2]) if sys.argv[1] == "log" else \
        check_skipped(sys.argv[2], sys.argv[3])
    print("ok" if good else "FAILED")
    sys.exit(0 if good else 1)
