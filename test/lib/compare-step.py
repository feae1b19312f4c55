#!/usr/bin/python3
"""Says which of two plan.json files predicts the longer step.
Usage: compare-step.py A/plan.json B/plan.json"""
import json
import sys

a, b = (json.load(open(p))["predicted_step_time_s"] for p in sys.argv[1:3])
print("%.9f s vs %.9f s: %s" % (a, b, "second is slower" if b > a else
                                 "second is faster" if b < a else "equal"))
