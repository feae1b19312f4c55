#!/usr/bin/python3
"""Training benchmark (issue 12; numbers in docs/performance.md): for each bundled
model and GPT-2 small, one training step (forward, loss, backward, AdamW) of the
HetPar training program on the CPU backend against PyTorch eager on the same
machine, and the program's measured memory against the simulator's prediction.

Per model:
  1. hetpar-compile MODEL --mode training --loss L --labels labels --optimizer
     adamw --lr 1e-3 --targets cpu -o PROG (the bundled models from their
     model-dynamic.onnx at the batch below; GPT-2 small from
     bench/import/make_gpt2.py, written once into the work folder);
  2. hetpar-compile MODEL --mode training --plan-only --cluster
     bench/train/one-device.yaml -o PLAN: the simulator's memory prediction for
     the same step (plan.json devices[0].memory);
  3. random data (.npy, one per input and labels.npy, WARMUP + STEPS batches);
  4. hetpar-run PROG --backend cpu --train --data D --steps WARMUP+STEPS
     --loss-log LOG: step time = batch / samples_per_s of each logged step
     (that step's wall time: copying the batch in, the program, the loss back);
     peak RSS of the process (/usr/bin/time);
  5. bench/train/torch_step.py (TORCH_PYTHON): the same model, data, batch,
     loss and optimizer in PyTorch; step time and peak RSS likewise.
Both sides run with THREADS threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS
for hetpar-run (its kernels use OpenMP, its GEMMs OpenBLAS), OMP_NUM_THREADS and
torch.set_num_threads for PyTorch. Times: median (and minimum: on a shared
machine the minimum is the more stable) over STEPS steps after WARMUP warm-up
steps. The first steps' losses of the two must agree (same weights, same
data): a check that both ran the same model.

Memory. measured = the buffers the program allocates on its device
(manifest.json: weights.bin, which holds parameters, constants and AdamW's two
moments, plus the arena, which holds activations, gradients and temporaries,
plus the input and output buffers): the CPU backend's device memory is host
memory and these are exactly its allocations. predicted = plan.json's
peak_memory_bytes (weights + activations + gradients + optimizer). The peak RSS
of hetpar-run is printed beside them: it adds the process itself (libraries,
OpenBLAS's buffers, the memory-mapped data pages), tens of MB.

Recomputation (--recompute): each model is also compiled with hetpar-compile
--recompute (hetpar-train-recompute: each layer's values recomputed before its
backward) and run the same way, and the simulator predicts that step from the
searched plan with its stage's "recompute" set to true (--plan-only --plan):
arena bytes, step time and predicted memory with and without.

Usage: bench/train/run.py [--threads T] [--steps N] [--warmup W] [--work DIR]
                          [--torch-python PY] [--json FILE] [--recompute]
                          [models...]
(bench/train/run.sh finds a python with transformers for the PyTorch side.)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "bench", "train")
MODELS_DIR = os.path.join(ROOT, "examples", "models")

# name: (input name -> shape, loss, labels shape, classes or None for mse,
#        steps (warm-up, measured) or None for the defaults)
# The bundled models are tiny (64 wide, 2 layers); they run at a batch that gives
# each step some work (token models 8 x 64 = 512 tokens, as GPT-2 small's 4 x 128;
# 64 positions is their largest sequence).
MODELS = {
    "mlp": ({"x": [64, 32]}, "cross-entropy", [64], 10, None),
    "gpt2": ({"input_ids": [8, 64]}, "cross-entropy", [8, 64], 512, None),
    "bert": ({"input_ids": [8, 64], "attention_mask": [8, 64]}, "mse", [8, 64, 64], None, None),
    "llama": ({"input_ids": [8, 64]}, "cross-entropy", [8, 64], 512, None),
    "vit": ({"pixel_values": [32, 3, 32, 32]}, "cross-entropy", [32], 10, None),
    "resnet18": ({"image": [32, 3, 64, 64]}, "cross-entropy", [32], 10, None),
    # GPT-2 small, 124M parameters (12 layers, hidden 768, 12 heads, vocab 50257),
    # 4 x 128 tokens. Its scalar constants and the causal mask are float
    # initializers: frozen (they are not parameters in PyTorch either).
    "gpt2-small": ({"input_ids": [4, 128]}, "cross-entropy", [4, 128], 50257, (2, 5)),
}
GPT2_SMALL_FREEZE = "causal_mask|scale|half|one|inv_sqrt2"


def run_rss(cmd, env=None):
    """Runs CMD under /usr/bin/time; returns (stdout, stderr, wall s, peak RSS bytes).
    (Not os.wait4 on a fork of this process: Linux carries the forked Python's
    resident size over exec into the child's maximum.)"""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd, env=env,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode:
            sys.exit("failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout[-2000:],
                                                p.stderr[-4000:]))
        kb = int(rss.read().split()[-1])
    return p.stdout, p.stderr, wall, kb * 1024


def make_data(folder, name, shapes, labels_shape, classes, samples, seed=0):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    vocab = classes or 512
    for n, shape in shapes.items():
        full = [samples] + shape[1:]
        if n == "attention_mask":
            a = np.ones(full, np.int64)
            a[1::2, shape[1] * 3 // 4:] = 0  # every other sample padded
        elif n == "input_ids":
            a = rng.integers(0, vocab, full).astype(np.int64)
        else:
            a = rng.standard_normal(full).astype(np.float32)
        np.save(os.path.join(folder, n + ".npy"), a)
    full = [samples] + labels_shape[1:]
    if classes:
        y = rng.integers(0, classes, full).astype(np.int64)
    else:
        y = rng.standard_normal(full).astype(np.float32)
    np.save(os.path.join(folder, "labels.npy"), y)


def device_buffers(prog):
    """Bytes of the buffers hetpar-run allocates for PROG's device 0, by part."""
    with open(os.path.join(prog, "manifest.json")) as f:
        dev = json.load(f)["devices"][0]
    with open(os.path.join(prog, dev.get("weights_index", "weights.json"))) as f:
        index = json.load(f)
    roles = {}
    for t in index["tensors"]:
        r = t.get("role", "constant")
        roles[r] = roles.get(r, 0) + int(t["bytes"])

    def tensor_bytes(t):
        n = 1
        for d in t["shape"]:
            n *= d
        return n * {"float32": 4, "int64": 8, "int32": 4, "float16": 2, "bfloat16": 2,
                    "bool": 1, "uint8": 1, "int8": 1, "float64": 8}[t["dtype"]]
    io = sum(tensor_bytes(t) for t in dev["inputs"] + dev["outputs"])
    return {"weights_bin": int(dev["weights_bytes"]), "arena": int(dev["arena_bytes"]),
            "io": io, "roles": roles,
            "total": int(dev["weights_bytes"]) + int(dev["arena_bytes"]) + io}


def mb(b):
    return b / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=list(MODELS))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, help="measured steps (default 20; GPT-2 small 5)")
    ap.add_argument("--warmup", type=int, help="warm-up steps (default 3; GPT-2 small 2)")
    ap.add_argument("--build", default=os.environ.get("HETPAR_BUILD_DIR",
                                                      os.path.join(ROOT, "build")))
    ap.add_argument("--work", help="work folder (kept); default a temporary one")
    ap.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", sys.executable))
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--recompute", action="store_true",
                    help="also measure and predict each step with activation "
                         "recomputation (hetpar-compile --recompute)")
    a = ap.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    work = a.work or tempfile.mkdtemp(prefix="hetpar-bench-train-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    cluster = os.path.join(HERE, "one-device.yaml")
    print("machine: %d cores, %s; load average %s; %d threads each side" % (
        os.cpu_count(), cpu_name(), " ".join("%.2f" % x for x in os.getloadavg()), a.threads))
    results = []
    t_start = time.perf_counter()
    for name in a.models:
        shapes, loss, labels_shape, classes, steps = MODELS[name]
        warm, n = steps or (3, 20)
        warm = warm if a.warmup is None else a.warmup
        n = n if a.steps is None else a.steps
        batch = labels_shape[0]
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        extra = []
        if name == "gpt2-small":
            model = os.path.join(work, "gpt2-small-b4s128.onnx")
            if not os.path.exists(model):
                subprocess.run([sys.executable, os.path.join(ROOT, "bench", "import", "make_gpt2.py"),
                                model, "--batch", "4", "--seq", "128"], check=True,
                               stdout=subprocess.DEVNULL)
            extra = ["--freeze", GPT2_SMALL_FREEZE]
        else:
            model = os.path.join(MODELS_DIR, name, "model-dynamic.onnx")
            for n_, s in shapes.items():
                extra += ["--input-shape", "%s=%s" % (n_, "x".join(map(str, s)))]
        prog, plan, data = (os.path.join(d, x) for x in ("prog", "plan", "data"))
        for x in (prog, plan):
            shutil.rmtree(x, ignore_errors=True)
        _, _, t_compile, _ = run_rss(
            [os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training", "--loss", loss,
             "--labels", "labels", "--optimizer", "adamw", "--lr", "1e-3", "--targets", "cpu",
             "-o", prog] + extra, env)
        shapes_only = [x for x in extra if x != "--freeze" and x != GPT2_SMALL_FREEZE]
        run_rss([os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training",
                 "--cluster", cluster, "--plan-only", "-o", plan] + shapes_only, env)
        with open(os.path.join(plan, "plan.json")) as f:
            pj = json.load(f)
        pdev = pj["devices"][0]
        make_data(data, name, shapes, labels_shape, classes, batch * (warm + n))
        lossf = os.path.join(d, "loss.jsonl")
        _, _, _, rss_h = run_rss(
            [os.path.join(bin_dir, "hetpar-run"), prog, "--backend", "cpu", "--train",
             "--data", data, "--steps", str(warm + n), "--loss-log", lossf], env)
        with open(lossf) as f:
            log = [json.loads(line) for line in f]
        h_times = [batch / r["samples_per_s"] for r in log]
        h_losses = [r["loss"] for r in log]
        tcmd = [a.torch_python, os.path.join(HERE, "torch_step.py"), name, "--data", data,
                "--batch", str(batch), "--steps", str(warm + n), "--threads", str(a.threads),
                "--loss", loss]
        if name == "gpt2-small":
            tcmd += ["--onnx", model]
        out, _, _, rss_t = run_rss(tcmd, env)
        t = json.loads(out.strip().splitlines()[-1])
        buf = device_buffers(prog)
        r = {"model": name, "batch": "x".join(map(str, next(iter(shapes.values()))[:2]))
             if name not in ("mlp", "vit", "resnet18") else str(batch),
             "warmup": warm, "steps": n, "compile_s": t_compile,
             "hetpar_step_s": statistics.median(h_times[warm:]),
             "hetpar_min_s": min(h_times[warm:]), "hetpar_steps_s": h_times,
             "hetpar_losses": h_losses[:3], "hetpar_rss": rss_h,
             "buffers": buf, "predicted": pdev["memory"],
             "predicted_total": pdev["peak_memory_bytes"],
             "plan": {"microbatches": pj.get("microbatches"),
                      "recompute": [s.get("recompute") for s in pj.get("stages", [])]}}
        if "skipped" in t:
            r["torch"] = "skipped: " + t["skipped"]
        else:
            r.update({"torch_step_s": statistics.median(t["step_seconds"][warm:]),
                      "torch_min_s": min(t["step_seconds"][warm:]),
                      "torch_steps_s": t["step_seconds"],
                      "torch_losses": t["losses"][:3], "torch_rss": rss_t,
                      "torch_parameters": t["parameters"]})
        if a.recompute:
            r["recompute"] = measure_recompute(a, bin_dir, d, model, loss, extra, cluster,
                                               pj, data, batch, warm, n, env)
        results.append(r)
        report_one(r)
    print()
    table(results)
    print("\nbenchmark wall time: %.0f s; load average at the end %s" % (
        time.perf_counter() - t_start, " ".join("%.2f" % x for x in os.getloadavg())))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


def measure_recompute(a, bin_dir, d, model, loss, extra, cluster, pj, data, batch, warm,
                      n, env):
    """The step with --recompute: its buffers and step times, and the
    simulator's prediction of the searched plan with every stage's recompute
    flag set."""
    prog, plan = os.path.join(d, "prog-recompute"), os.path.join(d, "plan-recompute")
    for x in (prog, plan):
        shutil.rmtree(x, ignore_errors=True)
    run_rss([os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training", "--loss",
             loss, "--labels", "labels", "--optimizer", "adamw", "--lr", "1e-3", "--targets",
             "cpu", "--recompute", "-o", prog] + extra, env)
    given = dict(pj)
    given["stages"] = [dict(st, recompute=True) for st in pj["stages"]]
    given_path = os.path.join(d, "plan-recompute.json")
    with open(given_path, "w") as f:
        json.dump(given, f)
    shapes_only = [x for x in extra if x != "--freeze" and x != GPT2_SMALL_FREEZE]
    run_rss([os.path.join(bin_dir, "hetpar-compile"), model, "--mode", "training",
             "--cluster", cluster, "--plan", given_path, "--plan-only", "-o", plan] +
            shapes_only, env)
    with open(os.path.join(plan, "plan.json")) as f:
        pdev = json.load(f)["devices"][0]
    lossf = os.path.join(d, "loss-recompute.jsonl")
    _, _, _, rss = run_rss(
        [os.path.join(bin_dir, "hetpar-run"), prog, "--backend", "cpu", "--train",
         "--data", data, "--steps", str(warm + n), "--loss-log", lossf], env)
    with open(lossf) as f:
        log = [json.loads(line) for line in f]
    times = [batch / x["samples_per_s"] for x in log]
    return {"buffers": device_buffers(prog), "hetpar_step_s": statistics.median(times[warm:]),
            "hetpar_min_s": min(times[warm:]), "hetpar_steps_s": times,
            "hetpar_losses": [x["loss"] for x in log][:3], "hetpar_rss": rss,
            "predicted": pdev["memory"], "predicted_total": pdev["peak_memory_bytes"]}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def report_one(r):
    b, p = r["buffers"], r["predicted"]
    print("%s (batch %s, %d warm-up + %d steps; compile %.1f s):" % (
        r["model"], r["batch"], r["warmup"], r["steps"], r["compile_s"]))
    print("  step (median, min): hetpar %.2f ms, %.2f ms; torch %s" % (
        1e3 * r["hetpar_step_s"], 1e3 * r["hetpar_min_s"],
        "%.2f ms, %.2f ms" % (1e3 * r["torch_step_s"], 1e3 * r["torch_min_s"])
        if "torch_step_s" in r else r["torch"]))
    if "torch_losses" in r:
        h, t = r["hetpar_losses"][0], r["torch_losses"][0]
        print("  first loss: hetpar %.6f, torch %.6f (%s)" % (
            h, t, "agree" if abs(h - t) <= 1e-3 * abs(t) + 1e-5 else "DIFFER: not the same model"))
    print("  memory: buffers %.2f MB (weights.bin %.2f MB: %s; arena %.2f MB; inputs/outputs "
          "%.3f MB), peak RSS %.1f MB" % (
              mb(b["total"]), mb(b["weights_bin"]),
              ", ".join("%s %.2f" % (k, mb(v)) for k, v in sorted(b["roles"].items())),
              mb(b["arena"]), mb(b["io"]), mb(r["hetpar_rss"])))
    print("  predicted: %.2f MB (weights %.2f, activations %.2f, gradients %.2f, optimizer "
          "%.2f; plan: %s)" % (mb(r["predicted_total"]), mb(p["weights"]), mb(p["activations"]),
                               mb(p["gradients"]), mb(p["optimizer"]), r["plan"]))
    if "recompute" in r:
        c = r["recompute"]
        print("  --recompute: step %.2f ms (min %.2f ms; %.2fx), arena %.2f MB (%.3f of %.2f MB), "
              "buffers %.2f MB; predicted %.2f MB (activations %.2f MB, %.3f of %.2f MB); first "
              "loss %.6f (without: %.6f)" % (
                  1e3 * c["hetpar_step_s"], 1e3 * c["hetpar_min_s"],
                  c["hetpar_step_s"] / r["hetpar_step_s"], mb(c["buffers"]["arena"]),
                  c["buffers"]["arena"] / b["arena"], mb(b["arena"]), mb(c["buffers"]["total"]),
                  mb(c["predicted_total"]), mb(c["predicted"]["activations"]),
                  c["predicted"]["activations"] / max(p["activations"], 1),
                  mb(p["activations"]), c["hetpar_losses"][0], r["hetpar_losses"][0]))
    sys.stdout.flush()


def table(results):
    print("| model | batch | hetpar / PyTorch step (median) | (min) | hetpar step | PyTorch step | "
          "predicted memory | measured (buffers) | predicted / measured | hetpar peak RSS | "
          "PyTorch peak RSS |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        ts = r.get("torch_step_s")
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %.3f | %s | %s |" % (
            r["model"], r["batch"], "%.2f" % (r["hetpar_step_s"] / ts) if ts else "-",
            "%.2f" % (r["hetpar_min_s"] / r["torch_min_s"]) if ts else "-",
            ms(r["hetpar_step_s"]), ms(ts) if ts else "-",
            size(r["predicted_total"]), size(r["buffers"]["total"]),
            r["predicted_total"] / r["buffers"]["total"], size(r["hetpar_rss"]),
            size(r["torch_rss"]) if "torch_rss" in r else "-"))


def ms(s):
    return "%.0f ms" % (1e3 * s) if s >= 0.1 else "%.2f ms" % (1e3 * s)


def size(b):
    return "%.0f MB" % mb(b) if b >= 10e6 else "%.2f MB" % mb(b)


if __name__ == "__main__":
    main()
