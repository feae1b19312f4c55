#!/usr/bin/python3
"""Compares the simulator's training-memory prediction with the memory of the
training program hetpar-compile generates for the same step, for FileCheck.

  compare-train-memory.py NAME PLAN_DIR PROGRAM_DIR

PLAN_DIR: `hetpar-compile --mode training --plan-only` for one device (plan.json,
devices[0].peak_memory_bytes: weights + activations + gradients + optimizer).
PROGRAM_DIR: `hetpar-compile --mode training` (manifest.json): the buffers the
runtime allocates on the device, weights.bin (parameters, constants, optimizer
state) + the arena (activations, gradients, temporaries at their liveness-planned
peak) + the input and output buffers. Prints
"NAME: predicted P bytes, program B bytes, ratio R: within 10%" (or "OFF BY ...").
"""
import json
import os
import sys

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "bool": 1}

name, plan_dir, prog_dir = sys.argv[1:4]
with open(os.path.join(plan_dir, "plan.json")) as f:
    predicted = json.load(f)["devices"][0]["peak_memory_bytes"]
with open(os.path.join(prog_dir, "manifest.json")) as f:
    dev = json.load(f)["devices"][0]
io = 0
for t in dev["inputs"] + dev["outputs"]:
    n = SIZES[t["dtype"]]
    for d in t["shape"]:
        n *= d
    io += n
program = dev["weights_bytes"] + dev["arena_bytes"] + io
ratio = predicted / program
print("%s: predicted %d bytes, program %d bytes, ratio %.3f: %s" % (
    name, predicted, program, ratio,
    "within 10%" if abs(ratio - 1) <= 0.10 else "OFF BY MORE THAN 10%"))
