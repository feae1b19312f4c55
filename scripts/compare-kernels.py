#!/usr/bin/env python3
"""Compares the cost model's predicted kernel times with measured ones.

Inputs: kernel lists written by `hetpar-compile MODEL --emit=kernels --device-kind K
[--profile P]` (predicted seconds in each line) and files written by
`hetpar-profile --kernels LIST --measured OUT` ("SECONDS<TAB>LINE" per kernel).
Kernels are matched by their fields and op name (not by the predicted time, so a
list predicted with a new profile matches measurements of an old list).

Prints, per kernel kind and overall, the count and the median of
|predicted - measured| / measured, and the worst kernels.
--max-median X exits 1 when the overall median is above X (0.15 = 15%).

Usage: compare-kernels.py --predicted A.txt [B.txt ...] --measured A.meas [...]
                          [--max-median 0.15] [--worst 5]
Standard library only (runs with any python3).
"""
import argparse
import statistics
import sys

FIXED = {"gemm": 5, "elementwise": 3, "reduce": 3, "softmax": 3, "layernorm": 3, "copy": 1}


def parse(line, where):
    """(key, kind, predicted seconds) of a kernel-list line, or None for comments."""
    tokens = line.rstrip("\n").split(" ")
    if not tokens or not tokens[0] or tokens[0].startswith("#"):
        return None
    kind = tokens[0]
    if kind not in FIXED:
        sys.exit("%s: unknown kernel kind '%s'" % (where, kind))
    n = FIXED[kind]
    if kind == "elementwise":
        n += int(tokens[3])
    try:
        predicted = float(tokens[1 + n])
    except (IndexError, ValueError):
        sys.exit("%s: malformed kernel line" % where)
    key = " ".join(tokens[: 1 + n]) + " | " + " ".join(tokens[2 + n:])
    return key, kind, predicted


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--predicted", nargs="+", required=True)
    ap.add_argument("--measured", nargs="+", required=True)
    ap.add_argument("--max-median", type=float)
    ap.add_argument("--worst", type=int, default=5)
    a = ap.parse_args()

    predicted = {}
    for path in a.predicted:
        for i, line in enumerate(open(path), 1):
            p = parse(line, "%s:%d" % (path, i))
            if p:
                predicted[p[0]] = (p[1], p[2])
    rows = []
    for path in a.measured:
        for i, line in enumerate(open(path), 1):
            if line.startswith("#") or not line.strip():
                continue
            seconds, _, rest = line.partition("\t")
            p = parse(rest, "%s:%d" % (path, i))
            if p and p[0] in predicted and float(seconds) > 0:
                kind, pred = predicted[p[0]]
                meas = float(seconds)
                rows.append((kind, pred, meas, abs(pred - meas) / meas, p[0]))
    if not rows:
        sys.exit("no kernel appears in both the predicted and the measured files")
    print("%-12s %6s %12s" % ("kind", "count", "median error"))
    for kind in sorted({r[0] for r in rows}):
        errs = [r[3] for r in rows if r[0] == kind]
        print("%-12s %6d %11.1f%%" % (kind, len(errs), 100 * statistics.median(errs)))
    overall = statistics.median(r[3] for r in rows)
    total_pred = sum(r[1] for r in rows)
    total_meas = sum(r[2] for r in rows)
    print("%-12s %6d %11.1f%%" % ("all", len(rows), 100 * overall))
    print("sum of kernel times: predicted %.3f ms, measured %.3f ms (%+.1f%%)"
          % (1e3 * total_pred, 1e3 * total_meas, 100 * (total_pred / total_meas - 1)))
    for r in sorted(rows, key=lambda r: -r[3])[: a.worst]:
        print("worst: %+7.1f%%  predicted %10.3f us  measured %10.3f us  %s"
              % (100 * (r[1] / r[2] - 1), 1e6 * r[1], 1e6 * r[2], r[4]))
    print("median relative error: %.1f%%" % (100 * overall))
    if a.max_median is not None and overall > a.max_median:
        print("above the target of %.1f%%" % (100 * a.max_median))
        sys.exit(1)


if __name__ == "__main__":
    main()
