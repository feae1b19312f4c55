#!/usr/bin/python3
"""Compares the simulator's training-memory prediction with the memory of the
training program hetpar-compile generates for the same step, for FileCheck.

  compare-train-memory.py NAME PLAN_DIR PROGRAM_DIR
  compare-train-memory.py NAME PROGRAM_DIR      (several devices)

PLAN_DIR: `hetpar-compile --mode training --plan-only` for one device (plan.json,
devices[0].peak_memory_bytes: weights + activations + gradients + optimizer).
PROGRAM_DIR: `hetpar-compile --mode training` (manifest.json): the buffers the
runtime allocates on the device, weights.bin (parameters, constants, optimizer
state) + the arena (activations, gradients, temporaries at their liveness-planned
peak) + the input and output buffers. Prints
"NAME: predicted P bytes, program B bytes, ratio R: within 10%" (or "OFF BY ...").
With PROGRAM_DIR alone, a data-parallel training program of several devices:
its plan.json's peak_memory_bytes per device id against each device's buffers,
one line per device; exits 1 when one is off by more than 10%.
"""
import json
import os
import sys

from train_records import program_bytes


def report(name, predicted, program):
    ratio = predicted / program
    ok = abs(ratio - 1) <= 0.10
    print("%s: predicted %d bytes, program %d bytes, ratio %.3f: %s" % (
        name, predicted, program, ratio,
        "within 10%" if ok else "OFF BY MORE THAN 10%"))
    return ok


if len(sys.argv) == 3:
    # A program folder of several devices (a data-parallel training plan):
    # its own plan.json's prediction per device id against that device's
    # buffers.
    name, prog_dir = sys.argv[1:3]
    with open(os.path.join(prog_dir, "plan.json")) as f:
        predicted = {d["id"]: d["peak_memory_bytes"] for d in json.load(f)["devices"]}
    with open(os.path.join(prog_dir, "manifest.json")) as f:
        devices = json.load(f)["devices"]
    ok = True
    for dev in devices:
        ok &= report("%s device %d" % (name, dev["id"]), predicted[dev["id"]],
                     program_bytes(dev))
    sys.exit(0 if ok else 1)

name, plan_dir, prog_dir = sys.argv[1:4]
with open(os.path.join(plan_dir, "plan.json")) as f:
    predicted = json.load(f)["devices"][0]["peak_memory_bytes"]
with open(os.path.join(prog_dir, "manifest.json")) as f:
    dev = json.load(f)["devices"][0]
report(name, predicted, program_bytes(dev))
