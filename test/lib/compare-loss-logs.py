#!/usr/bin/env python3
"""Compares the per-step losses of two training runs' loss logs.

  compare-loss-logs.py A.jsonl B.jsonl RTOL

Both logs (hetpar-run --loss-log: one JSON object per line) must hold the
same steps, and every step's loss in B must be within RTOL (relative) of A's.
Used where the issue asks a run to equal another configuration of the same
training (data-parallel against one device), each of which is checked against
PyTorch elsewhere. Prints the largest relative difference; exits 1 on a
mismatch."""
import sys

from train_records import loss_log


def losses(path):
    return {step: float(e["loss"]) for step, e in loss_log(path).items()}


def main():
    a, b, rtol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
    if not a or sorted(a) != sorted(b):
        print("FAIL: steps differ: %s vs %s" % (sorted(a), sorted(b)))
        return 1
    worst, at = 0.0, None
    for step in sorted(a):
        d = abs(a[step] - b[step]) / max(abs(a[step]), 1e-30)
        if d > worst:
            worst, at = d, step
    ok = worst <= rtol
    print("%s: %d steps, largest relative loss difference %.3g (step %s)" %
          ("match" if ok else "MISMATCH", len(a), worst, at))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
