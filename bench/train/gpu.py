#!/usr/bin/env python3
"""The training part of scripts/gpu-check.sh (issue 12): HetPar training
programs on a GPU against the CPU backend's losses and PyTorch eager's step
time on the same GPU.

  gpu.py prepare PREP --build BUILD     where HetPar is built
  gpu.py run PREP OUT --hetpar-run BIN  on the GPU machine

prepare: for each case (bench/train/run.py's bundled models and batches,
float32, and GPT-2 in bfloat16) writes PREP/<case>/out, a sources-only
training program (hetpar-compile --mode training --targets none
--cuda-arch 90; gpu-check.sh builds every prepared manifest with nvcc there),
PREP/<case>/data (run.py's random data for STEPS steps), and
PREP/<case>/cpu-loss.jsonl: the loss log of the same program built for the
CPU here and trained for the same STEPS steps (the reference: the GPU must
follow the CPU's loss curve). GPT-2 small's weights and ResNet-18's data at
bench/train's batch do not fit the 64 MiB that goes to a GPU machine.

run: trains each prepared program on the GPU (hetpar-run --backend cuda
--train) for STEPS steps, prints the largest relative difference of its
losses from the CPU's, its median step time after WARMUP steps, and, where
torch with CUDA is installed, PyTorch eager's median step time for the same
model, data and batch (bench/train/torch_step.py --device cuda) and the
ratio. Needs only the standard library, plus numpy and torch for the
PyTorch side.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WARMUP, STEPS = 3, 20
# case: (bench/train/run.py model, compute dtype, loss tolerance against the
# CPU: float32 kernels differ in summation order only; bfloat16 rounds
# activations, so a different order can round differently; hetpar-compile's
# plan options). The multi-device plans (issue 14) are for the A100 and three
# T4s of examples/clusters/a100-t4x3-pcie.yaml: the data-parallel baseline
# (four uneven replicas), ZeRO-1 over them, and the tensor-parallel and
# pipeline baselines. On the one GPU every rank shares it, and collectives
# stage through host memory over MPI (the CPU reference runs as processes
# here the same way).
CLUSTER = ["--cluster", os.path.join(ROOT, "examples", "clusters", "a100-t4x3-pcie.yaml")]
CASES = {
    "mlp-float32": ("mlp", "float32", 1e-4, []),
    "gpt2-float32": ("gpt2", "float32", 1e-4, []),
    "vit-float32": ("vit", "float32", 1e-4, []),
    "gpt2-bfloat16": ("gpt2", "bfloat16", 2e-2, []),
    "gpt2-data-4dev-float32": ("gpt2", "float32", 1e-4, CLUSTER + ["--baseline", "data_parallel"]),
    "gpt2-zero1-4dev-float32": ("gpt2", "float32", 1e-4,
                                CLUSTER + ["--baseline", "data_parallel", "--zero-stage", "1"]),
    "gpt2-tensor-4dev-float32": ("gpt2", "float32", 1e-4,
                                 CLUSTER + ["--baseline", "tensor_parallel"]),
    "gpt2-pipeline-4dev-float32": ("gpt2", "float32", 1e-4, CLUSTER + ["--baseline", "pipeline"]),
}
# Open MPI refuses root without these; hetpar-run starts mpirun for a plan of
# several devices.
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def prepare(a):
    sys.path.insert(0, HERE)
    import run as bench  # bench/train/run.py: the models, batches and data
    bin_dir = os.path.join(a.build, "bin")
    shutil.rmtree(a.prep, ignore_errors=True)
    for case, (name, dtype, _, plan) in CASES.items():
        shapes, loss, labels_shape, classes, _ = bench.MODELS[name]
        d = os.path.join(a.prep, case)
        os.makedirs(d)
        model = os.path.join(bench.MODELS_DIR, name, "model-dynamic.onnx")
        args = [os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training",
                "--loss", loss, "--labels", "labels", "--optimizer", "adamw", "--lr", "1e-3",
                "--dtype", dtype] + plan
        for n, s in shapes.items():
            args += ["--input-shape", "%s=%s" % (n, "x".join(map(str, s)))]
        subprocess.run(args + ["--targets", "none", "--cuda-arch", "90", "-o",
                               os.path.join(d, "out")], check=True, stdout=subprocess.DEVNULL)
        cpu = os.path.join(d, "cpu-prog")
        subprocess.run(args + ["--targets", "cpu", "--eval-program=false", "-o", cpu],
                       check=True, stdout=subprocess.DEVNULL)
        bench.make_data(os.path.join(d, "data"), name, shapes, labels_shape, classes,
                        labels_shape[0] * (WARMUP + STEPS))
        subprocess.run([os.path.join(bin_dir, "hetpar-run"), cpu, "--backend", "cpu", "--train",
                        "--data", os.path.join(d, "data"), "--steps", str(WARMUP + STEPS),
                        "--loss-log", os.path.join(d, "cpu-loss.jsonl")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=MPI_ENV)
        shutil.rmtree(cpu)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"model": name, "dtype": dtype, "loss": loss,
                       "batch": labels_shape[0], "devices": devices_of(os.path.join(d, "out"))},
                      f)
    print("prepared %d training cases in %s" % (len(CASES), a.prep))
    return 0


def devices_of(out):
    with open(os.path.join(out, "manifest.json")) as f:
        return len(json.load(f)["devices"])


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if '"loss"' in line]


def torch_eager(case, data, steps):
    """PyTorch eager's median step time on the GPU, or a reason it was skipped."""
    cmd = [sys.executable, os.path.join(HERE, "torch_step.py"), case["model"], "--data", data,
           "--batch", str(case["batch"]), "--steps", str(steps), "--threads", "1",
           "--loss", case["loss"], "--device", "cuda"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return None, "torch failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    t = json.loads(p.stdout.strip().splitlines()[-1])
    if "skipped" in t:
        return None, "torch skipped: " + t["skipped"]
    return statistics.median(t["step_seconds"][WARMUP:]), ""


def run(a):
    try:
        import torch
        have_cuda_torch = torch.cuda.is_available()
    except ImportError:
        have_cuda_torch = False
    print("%-18s %-8s %-22s %-12s %s" % ("case", "status", "max |loss - cpu|/cpu", "step (ms)",
                                         "PyTorch eager (ms), ratio"))
    failed = 0
    for case_name in sorted(os.listdir(a.prep)):
        d = os.path.join(a.prep, case_name)
        if not os.path.isfile(os.path.join(d, "case.json")):
            continue
        case = json.load(open(os.path.join(d, "case.json")))
        tol = CASES.get(case_name, (None, None, 1e-3, []))[2]
        log = os.path.join(a.out, "train-%s.jsonl" % case_name)
        p = subprocess.run([a.hetpar_run, os.path.join(d, "out"), "--backend", "cuda", "--train",
                            "--data", os.path.join(d, "data"), "--steps", str(WARMUP + STEPS),
                            "--loss-log", log], capture_output=True, text=True, env=MPI_ENV,
                           timeout=300)
        if p.returncode:
            failed += 1
            print("%-18s FAILED   %s" % (case_name, (p.stderr.strip().splitlines() or ["?"])[-1]))
            continue
        gpu, cpu = read_log(log), read_log(os.path.join(d, "cpu-loss.jsonl"))
        diff = max(abs(g["loss"] - c["loss"]) / max(abs(c["loss"]), 1e-12)
                   for g, c in zip(gpu, cpu))
        step = statistics.median(case["batch"] / g["samples_per_s"] for g in gpu[WARMUP:])
        status = "match" if diff <= tol else "MISMATCH"
        failed += status != "match"
        peer = "torch with CUDA not installed"
        if case.get("devices", 1) > 1:
            peer = "%d ranks on the one GPU" % case["devices"]
        if have_cuda_torch and case["dtype"] == "float32" and case.get("devices", 1) == 1:
            t, why = torch_eager(case, os.path.join(d, "data"), WARMUP + STEPS)
            peer = why if t is None else "%.3f, HetPar/PyTorch %.2fx" % (t * 1e3, step / t)
        print("%-18s %-8s %-22s %-12.3f %s" % (case_name, status, "%.2e (tol %.0e)" % (diff, tol),
                                               step * 1e3, peer))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("prep")
    p.add_argument("--build", default=os.environ.get("HETPAR_BUILD_DIR",
                                                     os.path.join(ROOT, "build")))
    r = sub.add_parser("run")
    r.add_argument("prep")
    r.add_argument("out")
    r.add_argument("--hetpar-run", required=True)
    a = ap.parse_args()
    if a.cmd == "prepare":
        return prepare(a)
    os.makedirs(a.out, exist_ok=True)
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
