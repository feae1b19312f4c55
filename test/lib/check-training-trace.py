#!/usr/bin/env python3
"""Checks a measured training timeline (hetpar-run --train --trace FILE).

Usage: check-training-trace.py TRACE.json [--pipeline SCHEDULE MICROBATCHES]

Prints, per device (pid), the sequence of its compute spans' names with the
stage suffix removed ("F0 F1 B0 ... optimizer") and the kinds of its
collective spans, then whether every span is well formed: non-negative
durations, spans of one lane not overlapping, every device's step ending
with its optimizer. With --pipeline 1f1b|gpipe M, also whether each stage's
order of forward and backward microbatches is the schedule's (at most
p - s microbatches in flight at stage s for 1F1B; every forward first for
GPipe), computed here from the schedule's definition, not read from
HetPar's output.
"""
import argparse
import json
import re
import sys


def expected_order(schedule, stage, stages, m):
    if schedule == "gpipe":
        return ["F%d" % k for k in range(m)] + ["B%d" % k for k in range(m)]
    warm = min(stages - stage, m)
    order = ["F%d" % k for k in range(warm)]
    f, b = warm, 0
    while b < m:
        order.append("B%d" % b)
        b += 1
        if f < m:
            order.append("F%d" % f)
            f += 1
    # 1F1B: one backward then one forward in the steady state.
    return order


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--pipeline", nargs=2, metavar=("SCHEDULE", "M"))
    args = ap.parse_args()
    events = [e for e in json.load(open(args.trace))["traceEvents"]
              if e["ph"] == "X"]
    ok = True
    by_device = {}
    for e in events:
        if e["dur"] < 0:
            ok = False
        by_device.setdefault(e["pid"], []).append(e)
    for pid in sorted(by_device):
        evs = sorted(by_device[pid], key=lambda e: e["ts"])
        for lane in {e["tid"] for e in evs}:
            spans = [e for e in evs if e["tid"] == lane]
            for a, b in zip(spans, spans[1:]):
                if a["ts"] + a["dur"] > b["ts"] + 1e-3:
                    ok = False
        compute = [re.sub(r" stage \d+$", "", e["name"]) for e in evs
                   if e["tid"] == 0]
        # Consecutive spans of one name (a loss's running sum after its
        # backward, say) count once.
        seq = [n for i, n in enumerate(compute) if i == 0 or compute[i - 1] != n]
        stage = [int(m.group(1)) for e in evs if e["tid"] == 0
                 for m in [re.search(r" stage (\d+)$", e["name"])] if m]
        collectives = sorted({e["name"].split(" (")[0] for e in evs
                              if e["tid"] == 1})
        print("device %d: %s" % (pid, " ".join(seq)))
        print("device %d collectives: %s" % (pid, " ".join(collectives) or "none"))
        if not compute or compute[-1] != "optimizer":
            ok = False
        if args.pipeline:
            schedule, m = args.pipeline[0], int(args.pipeline[1])
            stages = len(by_device)
            s = stage[0] if stage else 0
            mb = [n for n in seq if re.fullmatch(r"[FB]\d+", n)]
            # A forward or backward part split into several spans (by a
            # transfer inside it) counts once.
            mb = [n for i, n in enumerate(mb) if i == 0 or mb[i - 1] != n]
            want = expected_order(schedule, s, stages, m)
            print("device %d schedule: %s" % (
                pid, "ok" if mb == want else "got %s, want %s" % (mb, want)))
    print("well formed" if ok else "MALFORMED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
