#!/usr/bin/env python3
"""Convergence checks of a training run (test/Train/convergence.test).

  check-convergence.py accuracy OUTPUT.npy LABELS.npy MIN
      held-out accuracy (argmax of the logits) must be >= MIN;
  check-convergence.py curve LOSS_LOG CONVERGENCE.json
      the loss log (JSON lines) against PyTorch's curve for the same run
      (examples/models/<m>/convergence.json, made by
      scripts/models/train_reference.py): the mean of every 50-step window
      within 3% of PyTorch's, the last window below 0.7 ln(V) and below the
      second window (still falling);
  check-convergence.py track LOSS_LOG CONVERGENCE.json TOL
      every 50-step window mean within TOL (relative) of PyTorch's float32
      curve (16-bit training against float32).
Prints what it compared; exits 1 on a failed check."""
import json
import math
import sys

import numpy as np


def accuracy(out, labels, minimum):
    y, l = np.load(out), np.load(labels)
    acc = float((y.argmax(axis=1) == l).mean())
    print("held-out accuracy %.4f (%d samples; need >= %s)" % (acc, len(l), minimum))
    return acc >= float(minimum)


def curve(log, ref):
    ours = np.array([json.loads(l)["loss"] for l in open(log) if l.strip()])
    conv = json.load(open(ref))
    torch = np.array(conv["train_loss"])
    if len(ours) != len(torch):
        print("%d steps logged, PyTorch ran %d" % (len(ours), len(torch)))
        return False
    ok = True
    windows = []
    for a in range(0, len(ours), 50):
        h, t = ours[a:a + 50].mean(), torch[a:a + 50].mean()
        windows.append(h)
        close = abs(h - t) <= 0.03 * t
        ok &= close
        print("steps %3d-%3d: mean loss %.4f, PyTorch %.4f%s"
              % (a + 1, a + 50, h, t, "" if close else "  <-- differs"))
    lnv = math.log(conv["vocab_size"])
    print("ln(V) = %.4f; last window %.4f" % (lnv, windows[-1]))
    ok &= windows[-1] < 0.7 * lnv and windows[-1] < windows[1]
    return ok


def track(log, ref, tol):
    """Every 50-step window mean of the loss log within `tol` (relative) of
    PyTorch's float32 curve for the same run."""
    ours = [json.loads(l)["loss"] for l in open(log) if l.strip()]
    torch = json.load(open(ref))["train_loss"]
    if len(ours) != len(torch) or None in ours:
        print("%d steps logged (%d non-finite), PyTorch ran %d"
              % (len(ours), ours.count(None), len(torch)))
        return False
    ok = True
    for a in range(0, len(ours), 50):
        h, t = np.mean(ours[a:a + 50]), np.mean(torch[a:a + 50])
        close = abs(h - t) <= float(tol) * t
        ok &= close
        print("steps %3d-%3d: mean loss %.4f, PyTorch float32 %.4f (%+.2f%%)%s"
              % (a + 1, a + 50, h, t, 100 * (h - t) / t, "" if close else "  <-- differs"))
    return ok


if __name__ == "__main__":
    if sys.argv[1] == "accuracy":
        sys.exit(0 if accuracy(*sys.argv[2:5]) else 1)
    if sys.argv[1] == "track":
        sys.exit(0 if track(*sys.argv[2:5]) else 1)
    sys.exit(0 if curve(*sys.argv[2:4]) else 1)
