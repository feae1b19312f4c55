#!/usr/bin/env python3
"""Trains the search's multi-device training plan of each model on each
cluster 3 steps on the CPU backend (one MPI process per device), beside the
same step on one device, and compares them.

  train-searched-plans.py --bin BIN --work DIR
      --model NAME:MODEL.onnx:SHAPES:LOSS:TRAIN_DIR ... --cluster C.yaml ...
      [--rtol 1e-4] [--atol 1e-5]

SHAPES is NAME=DxD[;NAME=DxD...] (--input-shape each; its first dimension is
the batch), LOSS cross-entropy or mse (against "labels"), TRAIN_DIR the
model's bundled training data, whose value ranges the random batch of the
test takes (train_records.random_training_data). SGD with momentum 0.9, lr
0.01: its update is linear in the gradients, so the replicas' other order of
summation stays at rounding size in the weights (AdamW's m / sqrt(v) turns it
into a step-sized difference where a gradient element nearly cancels to
zero).

Per model and cluster one line: "NAME CLUSTER: one device" when the search
keeps the model on one device (nothing to compare), else "NAME CLUSTER: N
devices: losses match (largest relative difference X, at most RTOL), weights
match (largest difference Y over the K parameters, at most ATOL)", or
MISMATCH or FAILED with the reason. The parameters are compared, not the
momentum: where a ReLU or a max-pool's choice flips on a rounding-sized
difference (ResNet-18 after 3 steps) a momentum element moves by 1%, the
parameter by lr times that. Last line "T trained, M mismatched"; exits 1 on a mismatch or a
failure."""
import argparse
import glob
import json
import os
import subprocess
import sys

from train_records import checkpoint_difference, loss_difference, random_training_data


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        lines = [l for l in (p.stdout + p.stderr).splitlines() if "error" in l]
        raise RuntimeError((lines or [(p.stdout + p.stderr).strip()[-300:]])[0])
    return p.stdout


def compile_cmd(bin_dir, model, shapes, loss, out, extra):
    cmd = [os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training",
           "--loss", loss, "--labels", "labels", "--optimizer", "sgd",
           "--momentum", "0.9", "--lr", "0.01",
           "--targets", "cpu", "--opt-level=1", "--eval-program=false", "-o", out]
    for s in shapes.split(";"):
        cmd += ["--input-shape", s]
    return cmd + extra


def check(args, name, model, shapes, loss, train_dir, cluster):
    """One model on one cluster: its line and whether it matched."""
    cname = os.path.splitext(os.path.basename(cluster))[0]
    base = os.path.join(args.work, "%s-%s" % (name, cname))
    run(compile_cmd(args.bin, model, shapes, loss, base + "-plan",
                    ["--cluster", cluster, "--search-budget", "2"]))
    with open(os.path.join(base + "-plan", "manifest.json")) as f:
        devices = len(json.load(f)["devices"])
    if devices == 1:
        return "%s %s: one device" % (name, cname), True
    one = os.path.join(args.work, name + "-one")
    if not os.path.isdir(one):
        run(compile_cmd(args.bin, model, shapes, loss, one, []))
    data = os.path.join(args.work, name + "-data")
    rows = int(shapes.split(";")[0].split("=")[1].split("x")[0])
    if not os.path.isdir(data):
        random_training_data(train_dir, data, rows)
    hrun = os.path.join(args.bin, "hetpar-run")
    for prog, out in ((base + "-plan", base + "-plan"), (one, base + "-one")):
        if not os.path.exists(out + ".log"):
            run([hrun, prog, "--backend", "cpu", "--train", "--data", data, "--steps", "3",
                 "--checkpoint", out + "-ck", "--loss-log", out + ".log"])
    losses = loss_difference(base + "-one.log", base + "-plan.log")
    with open(os.path.join(one, "weights.json")) as f:
        params = {t["name"] for t in json.load(f)["tensors"] if t.get("role") == "param"}
    weights, compared = checkpoint_difference(
        sorted(glob.glob(base + "-one-ck/*.safetensors")),
        sorted(glob.glob(base + "-plan-ck/*.safetensors")), params)
    ok = losses <= args.rtol and weights <= args.atol and compared > 0
    return ("%s %s: %d devices: losses %s (largest relative difference %.2g), "
            "weights %s (largest difference %.2g over %d tensors)" % (
                name, cname, devices, "match" if losses <= args.rtol else "MISMATCH",
                losses, "match" if weights <= args.atol and compared else "MISMATCH",
                weights, compared)), ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--cluster", action="append", default=[])
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    trained = bad = 0
    for spec in args.model:
        name, model, shapes, loss, train_dir = spec.split(":")
        for cluster in args.cluster:
            try:
                line, ok = check(args, name, model, shapes, loss, train_dir, cluster)
            except (RuntimeError, ValueError) as e:
                line, ok = "%s %s: FAILED %s" % (name, os.path.basename(cluster), e), False
            trained += " devices: " in line
            bad += not ok
            print(line, flush=True)
    print("%d trained, %d mismatched" % (trained, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
