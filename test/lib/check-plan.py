#!/usr/bin/python3
"""Checks the invariants of a plan.json written by the search (issue 5):
every op of the model in exactly one stage (the model's op count from
--emit=summary), each device in at most one stage, every device within its
memory, batch shares and shard parts that add up, microbatches that divide the
batch, and a predicted step time no slower than any baseline that fits.
Prints 'ok: ...' or 'FAIL: ...' lines; exits 1 on a failure.

Usage: check-plan.py PLAN.json --ops N
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--ops", type=int, required=True)
    args = ap.parse_args()
    p = json.load(open(args.plan))
    problems = []
    ops = [op for s in p["stages"] for op in s["ops"]]
    if len(ops) != args.ops or len(set(ops)) != len(ops):
        problems.append(f"{len(ops)} ops in stages ({len(set(ops))} distinct), "
                        f"the model has {args.ops}")
    devices = [d for s in p["stages"] for d in s["devices"]]
    if len(set(devices)) != len(devices):
        problems.append("a device is in two stages")
    for d in p["devices"]:
        if d["peak_memory_bytes"] > d["memory_capacity_bytes"]:
            problems.append(f"device {d['id']} needs {d['peak_memory_bytes']} "
                            f"of {d['memory_capacity_bytes']} bytes")
    if not p["memory_fits"]:
        problems.append("memory_fits is false")
    batch, m = p["batch"], p["microbatches"]
    if batch % m:
        problems.append(f"{m} microbatches do not divide the batch {batch}")
    for i, s in enumerate(p["stages"]):
        if s["data"] * s["tensor"] != len(s["devices"]):
            problems.append(f"stage {i}: {s['data']} x {s['tensor']} != "
                            f"{len(s['devices'])} devices")
        shares = s.get("batch_shares")
        if shares and abs(sum(shares) - batch // m) > 1e-9:
            problems.append(f"stage {i}: batch shares {shares} do not add up "
                            f"to a microbatch of {batch // m}")
        for name, sh in s.get("shardings", {}).items():
            if len(sh["parts"]) != s["tensor"] or min(sh["parts"]) <= 0:
                problems.append(f"stage {i}: sharding of {name}: parts "
                                f"{sh['parts']} for {s['tensor']} devices")
    for name, b in p["baselines"].items():
        if b.get("applicable") and b.get("fits") and \
                p["predicted_step_time_s"] > b["predicted_step_time_s"] * (1 + 1e-9):
            problems.append(f"slower than baseline {name}: "
                            f"{p['predicted_step_time_s']} > {b['predicted_step_time_s']}")
    for line in problems:
        print("FAIL:", args.plan, line)
    if problems:
        sys.exit(1)
    print(f"ok: {len(p['stages'])} stage(s), {len(devices)} device(s), "
          f"{m} microbatch(es)")


if __name__ == "__main__":
    main()
