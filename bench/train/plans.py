#!/usr/bin/python3
"""Multi-device training plans against one device (issue 14's resolution table;
numbers in docs/performance.md, "Training plans against one device").

For each plan of the multi-device training tests (test/Train, test/E2E) and
each multi-device plan the search picks for a bundled model on the four
example clusters of test/E2E/search-training-plans.test, this script:
  1. compiles the plan (hetpar-compile --mode training --cluster C --plan P,
     or --baseline, or the search) and the same training step for one device
     (the same batch; a pipeline's microbatches as --grad-accumulation-steps);
  2. trains both 3 steps on the CPU backend from the same initial weights and
     data (hetpar-run --train: one MPI process per device for the plan);
  3. prints one row: the plan; the predicted step time on the cluster's GPUs
     (plan.json predicted_step_time_s) beside the step time measured here on
     the CPU backend (median of steps 2 and 3: the loss log's "seconds" from
     one step to the next), and the one device's; the largest relative loss difference over the 3
     steps; the largest absolute difference of any parameter and optimizer
     tensor after 3 steps (the devices' checkpoint files joined by their
     layout index, test/lib/safetensors_reader.py); and per device the
     predicted peak memory (plan.json peak_memory_bytes) against the
     program's device memory (weights.bin + arena + inputs and outputs, from
     manifest.json: what the runtime allocates on the device; on the CPU
     backend, the process's device allocations) as a ratio.

The predicted step time is for the cluster's GPUs, the measured one for this
machine's CPU cores shared by every process: they are printed side by side
for the record, not as a check (docs/performance.md says why). The weight and
loss columns are the checks the tests make (each test's own tolerance).

Usage: bench/train/plans.py [--build DIR] [--work DIR] [--only SUBSTR]
         [--no-search]
--only runs the rows whose name (or "searched MODEL CLUSTER") contains SUBSTR;
--no-search leaves out the searched plans. Needs OpenMPI (as the tests do).
Takes about 5 minutes on 2 cores (most of it building the programs).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
from train_records import (checkpoint_difference, loss_difference,  # noqa: E402
                           loss_log, program_bytes, random_training_data)

MODELS = os.path.join(ROOT, "examples", "models")
CLUSTERS = os.path.join(ROOT, "examples", "clusters")
TRAIN_IN = os.path.join(ROOT, "test", "Train", "Inputs")
E2E_IN = os.path.join(ROOT, "test", "E2E", "Inputs")

DIGITS = os.path.join(MODELS, "digits-mlp", "model.onnx")
MLP10 = os.path.join(E2E_IN, "mlp10.onnx")
CHARGPT = os.path.join(MODELS, "char-gpt", "model.onnx")
H100_L4X2 = os.path.join(E2E_IN, "h100-l4x2-25gbe.yaml")
H100_L4 = os.path.join(TRAIN_IN, "h100-l4-pcie.yaml")
A100_T4X3 = os.path.join(CLUSTERS, "a100-t4x3-pcie.yaml")
A100_V100 = os.path.join(CLUSTERS, "a100x4-v100x4-2nodes.yaml")
DGX = os.path.join(CLUSTERS, "dgx-h100x8.yaml")

DIGITS_ADAMW = ["--loss", "cross-entropy", "--optimizer", "adamw", "--lr", "0.01"]
DIGITS_SGD = ["--loss", "cross-entropy", "--optimizer", "sgd", "--momentum", "0.9",
              "--lr", "0.1", "--clip-grad-norm", "0.5"]
MLP10_SGD = ["--input-shape", "x=16x16", "--loss", "mse", "--optimizer", "sgd",
             "--momentum", "0.9", "--lr", "0.1"]
MLP10_ADAMW = ["--input-shape", "x=16x16", "--loss", "mse", "--optimizer", "adamw",
               "--lr", "0.01", "--clip-grad-norm", "0.1"]
CHARGPT_ADAMW = ["--loss", "cross-entropy", "--optimizer", "adamw"]
CHARGPT_SGD = ["--loss", "cross-entropy", "--optimizer", "sgd", "--momentum", "0.9",
               "--lr", "0.1", "--clip-grad-norm", "0.5"]

# (name, what the test covers, model, training flags, cluster, plan flags,
#  one-device flags replacing --input-shape (None: the same step on the whole
#  batch; char-gpt's export is static, and for its LayerNorm microbatches
#  change only the order of the sums), data, test file). Data: a folder, or "mlp10" (made here as pipeline.test does).
TEST_PLANS = [
    ("tensor 3, uneven", "tensor parallelism, 64 hidden units over 3 devices",
     DIGITS, DIGITS_ADAMW, H100_L4X2, ["--plan", os.path.join(TRAIN_IN, "digits-tensor-3.json")],
     None, "digits", "Train/tensor-parallel.test"),
    ("data 5:3", "data parallelism, uneven shares", DIGITS,
     ["--loss", "cross-entropy", "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.1",
      "--clip-grad-norm", "1"], H100_L4, ["--plan", os.path.join(TRAIN_IN, "digits-data-5-3.json")],
     None, "digits", "Train/data-parallel.test"),
    ("3 stages, 1F1B, 4 microbatches", "10 layers over 3 stages", MLP10, MLP10_SGD, H100_L4X2,
     ["--plan", os.path.join(TRAIN_IN, "mlp10-pipeline-1f1b.json")],
     ["--input-shape", "x=4x16", "--grad-accumulation-steps", "4"], "mlp10", "Train/pipeline.test"),
    ("3 stages, 1F1B, 4 microbatches, recomputation", "recomputation", CHARGPT, CHARGPT_ADAMW,
     H100_L4X2, ["--plan", os.path.join(TRAIN_IN, "char-gpt-pipeline-4-recompute.json")],
     None, "char-gpt", "Train/recompute.test"),
    ("data 5:3, ZeRO-1", "sharded optimizer state", DIGITS, DIGITS_ADAMW, H100_L4,
     ["--plan", os.path.join(TRAIN_IN, "digits-data-5-3.json"), "--zero-stage", "1"],
     None, "digits", "Train/zero.test"),
    ("2 stages, last data x 2, ZeRO-1", "ZeRO-1 inside a pipeline", MLP10, MLP10_ADAMW,
     H100_L4X2, ["--plan", os.path.join(TRAIN_IN, "mlp10-data-pipeline.json"), "--zero-stage", "1"],
     ["--input-shape", "x=8x16", "--grad-accumulation-steps", "2"], "mlp10", "Train/zero.test"),
    ("data 2 x tensor 2", "data x tensor", DIGITS, DIGITS_SGD, A100_T4X3,
     ["--plan", os.path.join(TRAIN_IN, "digits-data-2-tensor-2.json")], None, "digits",
     "Train/tensor-parallel.test"),
    ("data 2 x tensor 2, ZeRO-1", "data x tensor, sharded state", DIGITS, DIGITS_ADAMW,
     A100_T4X3, ["--plan", os.path.join(TRAIN_IN, "digits-data-2-tensor-2.json"),
                 "--zero-stage", "1"], None, "digits", "Train/tensor-parallel.test"),
    ("pipeline + tensor", "stages of tensor-parallel groups", MLP10,
     MLP10_SGD + ["--clip-grad-norm", "0.1"], H100_L4X2,
     ["--plan", os.path.join(TRAIN_IN, "mlp10-pipeline-tensor.json")], None, "mlp10",
     "Train/tensor-parallel.test"),
    ("pipeline + data x tensor", "the mix: data x tensor + pipeline", DIGITS, DIGITS_SGD,
     A100_V100, ["--plan", os.path.join(TRAIN_IN, "digits-pipeline-data-tensor-last.json")],
     None, "digits", "Train/pipeline.test"),
    ("char-GPT, last stage data x 2", "a transformer's pipeline with a data-parallel stage",
     CHARGPT, CHARGPT_SGD, H100_L4X2,
     ["--plan", os.path.join(TRAIN_IN, "char-gpt-data-last.json")],
     None, "char-gpt", "Train/pipeline.test"),
    ("char-GPT, tensor-parallel baseline", "Megatron MLP pairs over 3 devices", CHARGPT,
     CHARGPT_ADAMW, H100_L4X2, ["--baseline", "tensor_parallel"], None, "char-gpt",
     "Train/tensor-parallel.test"),
]

# The bundled models the search plans (test/E2E/search-training-plans.test).
SEARCH_MODELS = [
    ("mlp", "x=64x32", "cross-entropy"),
    ("digits-mlp", "x=64x64", "cross-entropy"),
    ("char-gpt", "input_ids=64x32", "cross-entropy"),
    ("gpt2", "input_ids=64x16", "cross-entropy"),
    ("llama", "input_ids=64x16", "cross-entropy"),
    ("bert", "input_ids=64x16;attention_mask=64x16", "mse"),
    ("vit", "pixel_values=64x3x32x32", "cross-entropy"),
    ("resnet18", "image=64x3x64x64", "cross-entropy"),
]
SEARCH_CLUSTERS = [A100_T4X3, A100_V100, DGX, H100_L4X2]


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if p.returncode:
        raise RuntimeError("failed (exit %d): %s; see %s" % (p.returncode, " ".join(cmd), log))


def make_mlp10_data(d):
    """pipeline.test's data: 64 samples of x and regression targets."""
    os.makedirs(d, exist_ok=True)
    r = np.random.default_rng(1)
    np.save(os.path.join(d, "x.npy"), r.standard_normal((64, 16)).astype(np.float32))
    np.save(os.path.join(d, "labels.npy"), r.standard_normal((64, 16)).astype(np.float32))


def shape_flags(shapes):
    """--input-shape NAME=DxD for each of "NAME=DxD;NAME=DxD"."""
    return [f for s in shapes.split(";") for f in ("--input-shape", s)]


def losses(path):
    """{step: (loss, seconds since training began)} of a loss log."""
    return {step: (float(e["loss"]), float(e["seconds"]))
            for step, e in loss_log(path).items()}


def step_time(log):
    """Median seconds between consecutive steps after the first (the loss
    log's "seconds" count from the start of training)."""
    steps = sorted(log)
    return statistics.median(log[b][1] - log[a][1] for a, b in zip(steps, steps[1:]))


def compare(plan_dir, one_dir, plan_log, one_log, plan_ck, one_ck):
    """(predicted s, measured s, one device's s, loss rel. diff, weight abs.
    diff, memory ratios per device, devices)."""
    with open(os.path.join(plan_dir, "plan.json")) as f:
        plan = json.load(f)
    with open(os.path.join(plan_dir, "manifest.json")) as f:
        devices = json.load(f)["devices"]
    predicted = {d["id"]: d["peak_memory_bytes"] for d in plan["devices"]}
    memory = ["%d: %.3f" % (d["id"], predicted[d["id"]] / program_bytes(d))
              for d in sorted(devices, key=lambda d: d["id"])]
    loss_diff = loss_difference(one_log, plan_log)
    measured, one_s = step_time(losses(plan_log)), step_time(losses(one_log))
    worst, _ = checkpoint_difference(
        sorted(glob.glob(os.path.join(one_ck, "*.safetensors"))),
        sorted(glob.glob(os.path.join(plan_ck, "*.safetensors"))))
    return (plan["predicted_step_time_s"], measured, one_s, loss_diff, worst, memory,
            len(devices))


def train_pair(bin_dir, work, name, model, flags, cluster, plan_flags, one_flags, data, log):
    """Compiles and trains the plan and its one-device step; returns compare()."""
    base = os.path.join(work, name)
    common = [os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training",
              "--labels", "labels", "--targets", "cpu", "--opt-level=1",
              "--eval-program=false"]
    run(common + flags + ["--cluster", cluster] + plan_flags + ["-o", base + "-plan"], log)
    one = flags
    if one_flags:
        one = [f for i, f in enumerate(flags)
               if f != "--input-shape" and (i == 0 or flags[i - 1] != "--input-shape")]
        one = one + one_flags
    run(common + one + ["-o", base + "-one"], log)
    for which in ("plan", "one"):
        run([os.path.join(bin_dir, "hetpar-run"), base + "-" + which, "--backend", "cpu",
             "--train", "--data", data, "--steps", "3", "--checkpoint",
             base + "-" + which + "-ck", "--loss-log", base + "-" + which + ".log"], log)
    return compare(base + "-plan", base + "-one", base + "-plan.log", base + "-one.log",
                   base + "-plan-ck", base + "-one-ck")


def searched_plan(bin_dir, work, model, shape, loss, cluster, log):
    """The search's plan for `model` on `cluster` (plan-only) and its file, or
    (None, None) when it keeps the model on one device."""
    out = os.path.join(work, "%s-%s-search" % (model, os.path.basename(cluster)[:-5]))
    src = os.path.join(MODELS, model, "model-dynamic.onnx")
    run([os.path.join(bin_dir, "hetpar-compile"), src] + shape_flags(shape) + ["--mode",
         "training", "--loss", loss, "--labels", "labels", "--optimizer", "adamw",
         "--cluster", cluster, "--plan-only", "-o", out], log)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    devices = sum(len(s["devices"]) for s in plan["stages"])
    return (None, None) if devices == 1 else (plan, os.path.join(out, "plan.json"))


def describe(plan):
    stages = plan["stages"]
    parts = []
    for s in stages:
        what = "data %d" % s.get("data", 1)
        if s.get("tensor", 1) > 1:
            what += " x tensor %d" % s["tensor"]
        if s.get("data", 1) > 1:
            what += " (%s)" % ":".join(map(str, s.get("batch_shares", [])))
        parts.append(what)
    return "%d stage(s): %s" % (len(stages), "; ".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-search", action="store_true")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    work = args.work or tempfile.mkdtemp(prefix="hetpar-plans-")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "commands.log")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    make_mlp10_data(os.path.join(work, "mlp10-data"))
    data = {"digits": os.path.join(MODELS, "digits-mlp", "train"),
            "char-gpt": os.path.join(MODELS, "char-gpt", "train"),
            "mlp10": os.path.join(work, "mlp10-data")}

    print("| plan | model, cluster | test | devices | predicted s (GPUs) | measured s here "
          "(one device) | loss rel. diff | largest weight diff | memory predicted/program "
          "per device |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    failed = 0

    def row(name, where, test, call):
        nonlocal failed
        try:
            p, m, one, dl, dw, mem, n = call()
            print("| %s | %s | %s | %d | %.3g | %.4f (%.4f) | %.1e | %.1e | %s |" % (
                name, where, test, n, p, m, one, dl, dw, ", ".join(mem)), flush=True)
        except (RuntimeError, ValueError) as e:
            failed += 1
            print("| %s | %s | %s | FAILED: %s |" % (name, where, test, e), flush=True)

    for (name, _, model, flags, cluster, plan_flags, one_flags, d, test) in TEST_PLANS:
        if args.only not in name:
            continue
        tag = name.replace(" ", "-").replace(",", "").replace(":", "-")
        where = "%s, %s" % (os.path.basename(os.path.dirname(model))
                            if model != MLP10 else "mlp10", os.path.basename(cluster)[:-5])
        row(name, where, test, lambda: train_pair(bin_dir, work, tag, model, flags, cluster,
                                                  plan_flags, one_flags, data[d], log))
    if not args.no_search:
        for model, shape, loss in SEARCH_MODELS:
            for cluster in SEARCH_CLUSTERS:
                cname = os.path.basename(cluster)[:-5]
                if args.only not in "searched " + model + " " + cname:
                    continue
                plan, plan_file = searched_plan(bin_dir, work, model, shape, loss, cluster, log)
                if plan is None:
                    continue
                ddir = os.path.join(work, model + "-data")
                if not os.path.isdir(ddir):
                    src_train = "resnet18-train" if model == "resnet18" else model
                    random_training_data(os.path.join(MODELS, src_train, "train"), ddir, 64)
                src = os.path.join(MODELS, model, "model-dynamic.onnx")
                flags = shape_flags(shape) + ["--loss", loss, "--optimizer", "adamw"]
                row("searched: " + describe(plan), "%s, %s" % (model, cname),
                    "E2E/search-training-plans.test",
                    lambda: train_pair(bin_dir, work, "%s-%s" % (model, cname), src, flags,
                                       cluster, ["--plan", plan_file], None, ddir, log))
    print("\nwork folder: %s (commands.log)" % work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
