#!/usr/bin/env python3
"""Compares the held-out loss that `hetpar-run --eval-data --loss-log LOG`
logged after global step STEP with a reference file's KEY (PyTorch's, e.g.
test/Train/Inputs/bn-dropout/eval/reference.json).

Usage: check-eval.py LOG REFERENCE.json KEY STEP [--rtol R]
Prints "eval loss: match (...)" or "eval loss: MISMATCH (...)", and exits 1
on a mismatch or when LOG has no evaluation line for STEP.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("reference")
    ap.add_argument("key")
    ap.add_argument("step", type=int)
    ap.add_argument("--rtol", type=float, default=1e-5)
    args = ap.parse_args()
    want = json.load(open(args.reference))[args.key]
    got = None
    for line in open(args.log):
        entry = json.loads(line)
        if entry.get("step") == args.step and "eval_loss" in entry:
            got = entry["eval_loss"]
    if got is None:
        print("eval loss: MISMATCH (no evaluation after step %d in %s)" % (args.step, args.log))
        return 1
    ok = abs(got - want) <= args.rtol * abs(want)
    print("eval loss: %s (hetpar %.9g, reference %.9g, rtol %g)"
          % ("match" if ok else "MISMATCH", got, want, args.rtol))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
