#!/usr/bin/python3
"""Prints, per device, the ratio of each memory component between two plan.json
files (the first divided by the second), for FileCheck.

Usage: compare-memory.py A/plan.json B/plan.json
"""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
for da, db in zip(a["devices"], b["devices"]):
    ratios = []
    for key in ("activations", "weights", "optimizer"):
        x, y = da["memory"][key], db["memory"][key]
        ratios.append("%s ratio %.3f" % (key, x / y if y else float("nan")))
    print("device %d: %s" % (da["id"], ", ".join(ratios)))
