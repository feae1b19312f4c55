#!/usr/bin/python3
"""Multi-process training benchmark (issue 14; numbers in docs/performance.md):
the step time of a data-parallel training program over 1, 2, 4 and 8 processes
on the CPU backend (one MPI process per device, all on this machine), against
PyTorch DistributedDataParallel (gloo) with the same processes, model, weights,
data and optimizer, side by side in one run; and of the tensor-parallel and
pipeline baselines' programs on the same devices (--plans), against the
one-process step (PyTorch has no counterpart on the CPU that a user would pick).

The model: the character-level GPT of scripts/models/export_train_models.py
(pre-LayerNorm blocks, GELU MLP, untied head) made wider (--d, --layers,
--heads), exported by this script with torch.onnx in training mode (so every
initializer is one torch parameter), batch --batch sequences of 32 bytes of
/usr/share/common-licenses/GPL-3 (scripts/models/make_chars.py), cross-entropy,
AdamW (lr 1e-3).

Per process count n:
  HetPar: hetpar-compile MODEL --mode training ... --cluster C_n --baseline
    data_parallel (C_n: n devices of the catalog's "CPU" kind in one box; the
    batch splits evenly), n = 1 without a cluster (the one-device program);
    hetpar-run PROG --train --steps WARMUP+STEPS --loss-log LOG: step time =
    batch / samples_per_s of each logged step (its wall time, measured by the
    first device's process); median over the last STEPS steps.
  PyTorch: n processes (torch.multiprocessing, gloo), each with its rows of the
    same batches, DistributedDataParallel (bucket_cap_mb 25, as HetPar's
    buckets), the same initial weights (read from the ONNX model); step time =
    wall time of forward, loss, backward (with the all-reduces) and
    optimizer.step on rank 0 after a barrier; median likewise.
  Threads: each process of either side gets max(1, cores / n) OpenMP and
    OpenBLAS threads (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS; and
    torch.set_num_threads), as hetpar-run gives its processes by itself.
  Communication: "comm+wait" is the last step's collectives and transfers
    (waiting for a peer included, which on the CPU backend is where a
    pipeline's bubble shows) on the device with the most, from hetpar-run
    --trace; its "predicted" is the predicted step less that device's
    compute in hetpar-compile's trace.json (collectives, transfers and the
    bubble), the most of any device.
  Predicted: plan.json's predicted_step_time_s for the same plan on C_n. The
    "CPU" kind is a placeholder (0.1 TFLOP/s, 20 GB/s; not calibrated with
    hetpar-profile on this machine), so the prediction is printed for the record,
    not as a check.
Both sides' first losses must agree (the same model, weights and data).

Usage: bench/train/data_parallel.py [--devices 1,2,4,8] [--steps 8] [--warmup 2]
         [--plans data_parallel,tensor_parallel,pipeline]
         [--batch 32] [--d 256] [--layers 4] [--heads 8] [--work DIR] [--json FILE]
         [--build DIR]
Needs Debian's python3-torch (the PyTorch side and the export).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "models"))
TEXT = "/usr/share/common-licenses/GPL-3"
SEQ = 32


def export_model(work, d, layers, heads, batch, vocab):
    import torch
    import export_train_models as etm
    torch.manual_seed(0)
    model = etm.CharGPT(vocab, d=d, heads=heads, layers=layers, seq=SEQ)
    path = os.path.join(work, "model.onnx")
    ids = torch.zeros(batch, SEQ, dtype=torch.int64)
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                      output_names=["logits"], opset_version=etm.OPSET,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    return path


def make_data(work):
    out = os.path.join(work, "chars")
    if not os.path.exists(os.path.join(out, "labels.npy")):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "models", "make_chars.py"),
                        TEXT, out, "--seq", str(SEQ)], check=True, capture_output=True)
    return out


def cluster_file(work, n):
    path = os.path.join(work, "cpu-%d.yaml" % n)
    with open(path, "w") as f:
        f.write("name: cpu-%d\nnodes:\n  - name: box\n    devices:\n"
                "      - kind: CPU\n        count: %d\n    interconnect: PCIe4\n" % (n, n))
    return path


def hetpar_side(args, model, data, n, baseline="data_parallel"):
    prog = os.path.join(args.work, "hetpar-%s-%d" % (baseline, n))
    cmd = [os.path.join(args.build, "bin", "hetpar-compile"), model, "--mode", "training",
           "--loss", "cross-entropy", "--labels", "labels", "--optimizer", "adamw",
           "--lr", "1e-3", "--targets", "cpu", "--eval-program=false", "-o", prog]
    if n > 1:
        cmd += ["--cluster", cluster_file(args.work, n), "--baseline", baseline]
    t0 = time.time()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    compile_s = time.time() - t0
    plan_dir = prog
    if n == 1:
        plan_dir = os.path.join(args.work, "plan-1")
        subprocess.run(cmd[:-2] + ["--plan-only", "--cluster", cluster_file(args.work, 1),
                                   "-o", plan_dir], check=True, capture_output=True)
    with open(os.path.join(plan_dir, "plan.json")) as f:
        predicted = json.load(f)["predicted_step_time_s"]
    log = os.path.join(args.work, "hetpar-%s-%d.log" % (baseline, n))
    share_threads(n)
    run = subprocess.run([os.path.join(args.build, "bin", "hetpar-run"), prog, "--backend",
                          "cpu", "--train", "--data", data, "--steps",
                          str(args.warmup + args.steps), "--loss-log", log, "--trace",
                          prog + "-trace.json"], check=True, capture_output=True, text=True)
    with open(log) as f:
        entries = [json.loads(line) for line in f]
    times = [args.batch / e["samples_per_s"] for e in entries[args.warmup:]]
    return {"step_s": statistics.median(times), "min_s": min(times),
            "first_loss": entries[0]["loss"], "predicted_s": predicted,
            "compile_s": compile_s, "comm_s": measured_comm(run.stdout),
            "predicted_comm_s": predicted_comm(os.path.join(plan_dir, "trace.json"))}


def measured_comm(stdout):
    """The last step's collectives and transfers (waiting for a peer
    included: a pipeline's bubble on the CPU backend), seconds, the most of
    any device, from hetpar-run --trace's summary."""
    most = 0.0
    for line in stdout.splitlines():
        m = re.search(r"collective ([0-9.]+), transfer ([0-9.]+)", line)
        if m:
            most = max(most, (float(m.group(1)) + float(m.group(2))) / 1e3)
    return most


def predicted_comm(trace):
    """The predicted step's collectives, transfers and idle time within the
    step (the bubble), seconds, the most of any device, from
    hetpar-compile's trace.json (lane 0 is compute)."""
    if not os.path.exists(trace):
        return 0.0
    with open(trace) as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    step = doc.get("otherData", {}).get("predicted_step_time_s", 0.0)
    most = 0.0
    for pid in {e["pid"] for e in events}:
        compute = sum(e["dur"] for e in events if e["pid"] == pid and e["tid"] == 0) / 1e6
        most = max(most, step - compute)
    return most


def torch_worker(rank, n, model_path, data, args, queue):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import onnx
    from onnx import numpy_helper
    import export_train_models as etm
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(29500 + n)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // n))
    ids = np.load(os.path.join(data, "input_ids.npy"))
    labels = np.load(os.path.join(data, "labels.npy"))
    vocab = int(max(ids.max(), labels.max())) + 1
    model = etm.CharGPT(args.vocab, d=args.d, heads=args.heads, layers=args.layers, seq=SEQ)
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(model_path).graph.initializer}
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(inits[name].copy()))
    # The causal masks are bool buffers, which gloo cannot broadcast; they are
    # equal on every rank anyway.
    torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        model, [name for name, _ in model.named_buffers()])
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    rows = args.batch // n
    times, first = [], None
    for step in range(args.warmup + args.steps):
        lo = (step * args.batch) % (len(ids) - args.batch + 1) + rank * rows
        x = torch.from_numpy(ids[lo:lo + rows])
        y = torch.from_numpy(labels[lo:lo + rows])
        dist.barrier()
        t0 = time.perf_counter()
        logits = ddp(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        full = loss.detach().clone()
        dist.all_reduce(full)
        if first is None:
            first = float(full) / n
        if step >= args.warmup:
            times.append(dt)
    if rank == 0:
        queue.put({"step_s": statistics.median(times), "min_s": min(times),
                   "first_loss": first, "vocab": vocab})
    dist.destroy_process_group()


def share_threads(n):
    """max(1, cores / n) OpenMP and OpenBLAS threads per process (what
    hetpar-run gives each of its processes), in the environment the processes
    inherit: OpenBLAS reads it when it loads."""
    share = str(max(1, (os.cpu_count() or 1) // n))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = share


def torch_side(args, model, data, n):
    import torch.multiprocessing as mp
    share_threads(n)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(torch_worker, args=(n, model, data, args, queue), nprocs=n,
                       join=True, start_method="spawn")
    return queue.get()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="1,2,4,8")
    ap.add_argument("--plans", default="data_parallel,tensor_parallel,pipeline")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="hetpar-bench-dp-")
    os.makedirs(args.work, exist_ok=True)
    data = make_data(args.work)
    ids, labels = np.load(os.path.join(data, "input_ids.npy")), np.load(os.path.join(data, "labels.npy"))
    args.vocab = int(max(ids.max(), labels.max())) + 1
    model = export_model(args.work, args.d, args.layers, args.heads, args.batch, args.vocab)
    rows = []
    print("data-parallel training, char GPT d=%d layers=%d, batch %d x %d, AdamW, %d cores"
          % (args.d, args.layers, args.batch, SEQ, os.cpu_count() or 1))
    print("%-9s %12s %10s %14s %10s %13s %11s %11s %14s %14s" % (
        "processes", "HetPar ms", "vs 1 proc", "PyTorch DDP ms", "HetPar/PT",
        "predicted ms", "loss HetPar", "loss torch", "comm+wait ms", "predicted ms"))
    base = None
    for n in [int(x) for x in args.devices.split(",")]:
        if args.batch % n:
            print("%d processes: the batch of %d does not split evenly; skipped" % (n, args.batch))
            continue
        h = hetpar_side(args, model, data, n)
        t = torch_side(args, model, data, n)
        base = base or h["step_s"]
        row = {"processes": n, "hetpar": h, "torch": t}
        rows.append(row)
        print("%-9d %12.1f %9.2fx %14.1f %9.2fx %13.3f %11.5f %11.5f %14.1f %14.3f" % (
            n, 1e3 * h["step_s"], h["step_s"] / base, 1e3 * t["step_s"],
            h["step_s"] / t["step_s"], 1e3 * h["predicted_s"], h["first_loss"],
            t["first_loss"], 1e3 * h["comm_s"], 1e3 * h["predicted_comm_s"]))
        if abs(h["first_loss"] - t["first_loss"]) > 1e-3 * abs(t["first_loss"]):
            print("  the first losses differ: not the same model or data")
    others = [p for p in args.plans.split(",") if p != "data_parallel"]
    if others and base:
        print("\nthe other baselines' programs on the same devices (HetPar only)")
        print("%-16s %9s %12s %10s %13s %11s %14s %14s" % (
            "plan", "processes", "HetPar ms", "vs 1 proc", "predicted ms", "loss HetPar",
            "comm+wait ms", "predicted ms"))
    for plan in others:
        for n in [int(x) for x in args.devices.split(",") if int(x) > 1]:
            try:
                h = hetpar_side(args, model, data, n, plan)
            except subprocess.CalledProcessError as e:
                why = (e.stderr or e.stdout or "").strip().splitlines()
                print("%-16s %9d not compiled or run: %s" % (plan, n, why[-1] if why else e))
                continue
            rows.append({"processes": n, "plan": plan, "hetpar": h})
            print("%-16s %9d %12.1f %9.2fx %13.3f %11.5f %14.1f %14.3f" % (
                plan, n, 1e3 * h["step_s"], h["step_s"] / base, 1e3 * h["predicted_s"],
                h["first_loss"], 1e3 * h["comm_s"], 1e3 * h["predicted_comm_s"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
