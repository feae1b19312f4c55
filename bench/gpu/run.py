#!/usr/bin/env python3
"""The large-model GPU benchmark of scripts/gpu-check.sh (issue 15's GPU targets):
HetPar's programs against PyTorch eager on the same GPU, side by side in one run.

  run.py prepare PREP --build BUILD     where HetPar is built
  run.py run PREP OUT --hetpar-run BIN  on the GPU machine

prepare: for every case of bench/gpu/models.py, a sources-only program
(hetpar-compile --targets=none --cuda-arch=90 --dtype DTYPE) in PREP/<case>/out,
its weights stripped (bench/gpu/weights.py: they do not fit the 64 MiB that
travels), and PREP/<case>/case.json.

run: for each case, rebuilds the ONNX model (models.py, deterministic), restores
the weights from it (their CRC-32s must match; the GEMM chain's are filled with
random values), makes seeded inputs, and runs the program (gpu-check.sh has
built it with nvcc) with hetpar-run --backend cuda --repeat N. It prints
HetPar's median latency ("hetpar_run alone"), PyTorch eager's for the same
model, shapes and dtype (torch.nn.functional.scaled_dot_product_attention for
attention, as Hugging Face's models use it), their ratio, HetPar's time with
the default SIMT attention kernel beside its tensor-core one (HETPAR_ATTENTION=mma,
opt-in until checked here), and HetPar's achieved
TFLOP/s against the dense peak (H100/H200 SXM datasheet: 989.4 TFLOP/s
bfloat16 tensor, 66.9 TFLOP/s float32). Attention's own time is the
difference of the programs with two chained attentions and with one. Output
checks: HetPar's output against PyTorch's float32 output (TF32 off) on the same
weights and inputs, as the normwise relative error ||y - r|| / ||r||, which must
stay within compare-outputs.py's bound 4 u sqrt(L) (u the compute dtype's unit
roundoff, L the longest reduction).
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEAK = {"bfloat16": 989.4e12, "float16": 989.4e12, "float32": 66.9e12}
UNIT = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11, "float32": 2.0 ** -24}
REPEAT = 50
DEVICE = "cuda"  # --device cpu: a smoke test of this script where there is no GPU


def prepare(a):
    sys.path.insert(0, HERE)
    import models
    import weights
    shutil.rmtree(a.prep, ignore_errors=True)
    os.makedirs(a.prep)
    tmp = os.path.join(a.prep, "model.onnx")
    for name, (build, dtype, kind) in models.CASES.items():
        import onnx
        onnx.save_model(build(), tmp)
        d = os.path.join(a.prep, name)
        os.makedirs(d)
        subprocess.run([os.path.join(a.build, "bin", "hetpar-compile"), tmp, "--targets=none",
                        "--cuda-arch=90", "--dtype=" + dtype, "-o", os.path.join(d, "out")],
                       check=True, stdout=subprocess.DEVNULL)
        weights.strip(os.path.join(d, "out"), 65536)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"name": name, "dtype": dtype, "kind": kind}, f)
    os.remove(tmp)
    return 0


# --- PyTorch: the same models ----------------------------------------------------------

def torch_model(name, inits, torch, dtype, exact):
    """A callable computing the case NAME from the ONNX initializers INITS (numpy) in
    DTYPE. EXACT: the reference, attention as explicit float32 products; else
    PyTorch eager as a user runs it (scaled_dot_product_attention)."""
    F = torch.nn.functional
    dev = torch.device(DEVICE)
    w = {k: torch.from_numpy(v.copy()).to(dev, dtype if v.dtype.kind == "f" else None)
         for k, v in inits.items()}

    def attend(q, k, v, causal, mask=None):
        if not exact and hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
        if causal:
            n = s.shape[-1]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=dev).triu(1),
                              float("-inf"))
        if mask is not None:
            s = s + mask
        return torch.softmax(s, -1) @ v

    if name.startswith("attn"):
        chain = 2 if name.startswith("attn2") else 1
        causal = "causal" in name

        def attention(q, k, v, mask=None):
            for _ in range(chain):
                q = attend(q, k, v, causal, mask)
            return q
        return attention
    if name.startswith("gemm"):
        ws = [w["w%d" % i] for i in range(len(w))]

        def chain_of_products(x):
            for m in ws:
                x = x @ m
            return x
        return chain_of_products
    encoder = name.startswith("encoder")
    layers = sum(1 for k in w if k.endswith(".attn.c_attn.weight"))
    hidden = w["wte"].shape[1]
    heads = 12

    def ln(x, p):
        return F.layer_norm(x, (hidden,), w[p + ".weight"], w[p + ".bias"], 1e-5)

    def gpt(ids):
        b, s = ids.shape
        h = w["wte"][ids] + w["wpe"][:s]
        for i in range(layers):
            p = "h%d." % i
            x = ln(h, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = (t.reshape(b, s, heads, -1).transpose(1, 2) for t in x.split(hidden, -1))
            ctx = attend(q, k, v, not encoder).transpose(1, 2).reshape(b, s, hidden)
            h = h + ctx @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            x = ln(h, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
            x = F.gelu(x)
            h = h + x @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        h = ln(h, "ln_f")
        return h if encoder else h @ w["wte"].t()
    return gpt


def flops(name, shapes):
    """The FLOPs of one run (multiply-add = 2), attention's masked half not counted."""
    if name.startswith("attn"):
        b, h, l, d = shapes[0]
        per = 4 * b * h * l * l * d * (0.5 if "causal" in name else 1.0)
        return per * (2 if name.startswith("attn2") else 1)
    if name.startswith("gemm"):
        m = re.match(r"gemm-(\d+)x(\d+)x(\d+)x(\d+)", name)
        t, k, n, layers = map(int, m.groups())
        return 2.0 * t * k * n * layers
    b, s = shapes[0]
    hidden, layers = 768, 12
    vocab = 0 if name.startswith("encoder") else 50257
    causal = 0.5 if not name.startswith("encoder") else 1.0
    return (24.0 * b * s * hidden * hidden * layers + 4.0 * b * s * s * hidden * layers * causal
            + 2.0 * b * s * hidden * vocab)


def make_inputs(name, model, np, rng):
    """Seeded inputs for the graph inputs of MODEL (onnx.ModelProto)."""
    out = []
    for i in model.graph.input:
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.name == "input_ids":
            vocab = [t for t in model.graph.initializer if t.name == "wte"][0].dims[0]
            out.append(rng.integers(0, vocab, dims, dtype=np.int64))
        elif i.name == "key_mask":
            m = np.zeros(dims, np.float32)
            m[..., dims[-1] * 2 // 3:] = np.finfo(np.float32).min  # padded keys
            m[0, ..., :] = 0.0  # the first sample is not padded
            out.append(m)
        else:
            out.append(rng.standard_normal(dims, dtype=np.float32))
    return out


def cuda_median(fn, repeat, torch):
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def hetpar_alone(log):
    m = re.search(r"hetpar_run alone: median ([0-9.]+) (us|ms|s)", log)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def longest_reduction(name, shapes):
    if name.startswith("attn"):
        return max(shapes[0][2], shapes[0][3])
    if name.startswith("gemm"):
        return 8192
    return 3072


def run_case(d, case, a, work, np, onnx, torch):
    sys.path.insert(0, HERE)
    import models
    import weights
    from onnx import numpy_helper
    name, dtype = case["name"], case["dtype"]
    model = models.CASES[name][0]()
    out = os.path.join(d, "out")
    if name.startswith("gemm"):
        rc = weights.restore(out, None, True)
    else:
        path = os.path.join(work, "model.onnx")
        onnx.save_model(model, path)
        rc = weights.restore(out, path, False)
        os.remove(path)
    if rc:
        return {"status": "FAILED: weights"}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    if name.startswith("gemm"):
        # The filled weights, read back in the program's bfloat16, for PyTorch.
        index = json.load(open(os.path.join(out, "weights.json")))
        raw = np.fromfile(os.path.join(out, "weights.bin"), np.uint16)
        for t in index["tensors"]:
            if t["name"] in inits:
                bits = raw[t["offset"] // 2:(t["offset"] + t["bytes"]) // 2].astype(np.uint32)
                inits[t["name"]] = (bits << 16).view(np.float32).reshape(t["shape"])
    rng = np.random.default_rng(0)
    ins = make_inputs(name, model, np, rng)
    files = []
    for k, x in enumerate(ins):
        files.append(os.path.join(work, "input_%d.npy" % k))
        np.save(files[-1], x)
    shapes = [list(x.shape) for x in ins]
    res_dir = os.path.join(work, "hetpar-out")
    shutil.rmtree(res_dir, ignore_errors=True)
    # The tensor-core attention (opt-in until checked on a GPU) is the one
    # checked and timed; the SIMT kernel, the default, is timed beside it.
    p = subprocess.run([a.hetpar_run, out, "--backend", DEVICE, "--repeat", str(REPEAT),
                        "--inputs", ",".join(files), "--outputs", res_dir],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, HETPAR_ATTENTION="mma"))
    with open(os.path.join(a.out, "bench-%s.log" % name), "w") as f:
        f.write(p.stdout + p.stderr)
    t = hetpar_alone(p.stdout + p.stderr)
    if p.returncode or t is None:
        return {"status": "FAILED: " + ((p.stderr or p.stdout).strip().splitlines() or ["?"])[-1]}
    row = {"status": "ran", "hetpar_s": t, "flops": flops(name, shapes), "dtype": dtype}
    if dtype != "float32" and not name.startswith("gemm"):
        # The same program with the default SIMT attention kernel, for the A/B.
        q = subprocess.run([a.hetpar_run, out, "--backend", DEVICE, "--repeat", str(REPEAT),
                            "--inputs", ",".join(files)], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, HETPAR_ATTENTION="tiles"))
        row["tiles_s"] = hetpar_alone(q.stdout + q.stderr)
    torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16,
                   "float32": torch.float32}[dtype]
    tins = [torch.from_numpy(x).to(DEVICE) for x in ins]
    y = np.load(os.path.join(res_dir, "output_0.npy"))
    with torch.inference_mode():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        ref = torch_model(name, inits, torch, torch.float32, True)(*tins).float().cpu().numpy()
        err = float(np.linalg.norm((y - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-30))
        bound = 4 * UNIT[dtype] * math.sqrt(longest_reduction(name, shapes))
        row.update(err=err, bound=bound, status="match" if err <= bound else "MISMATCH")
        del ref, y
        peer = torch_model(name, inits, torch, torch_dtype, False)
        pins = [x.to(torch_dtype) if x.dtype.is_floating_point else x for x in tins]
        row["torch_s"] = cuda_median(lambda: peer(*pins), REPEAT, torch)
    return row


def run(a):
    import numpy as np
    import onnx
    import torch
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.prep, "work")
    os.makedirs(work, exist_ok=True)
    try:
        import onnxruntime
        providers = onnxruntime.get_available_providers()
    except ImportError:
        providers = ["onnxruntime not installed"]
    print("ONNX Runtime providers here: %s (the CUDA provider is needed for the ORT "
          "column; not compared otherwise)" % ", ".join(providers))
    print("%-34s %-9s %10s %10s %7s %8s %6s %-18s %s" % (
        "case", "status", "HetPar ms", "torch ms", "ratio", "TFLOP/s", "peak",
        "rel. error (bound)", "SIMT attention ms"))
    rows = {}
    for name in sorted(os.listdir(a.prep)):
        d = os.path.join(a.prep, name)
        if not os.path.isfile(os.path.join(d, "case.json")) or (
                a.only and not re.search(a.only, name)):
            continue
        case = json.load(open(os.path.join(d, "case.json")))
        try:
            row = run_case(d, case, a, work, np, onnx, torch)
        except Exception as e:  # one case's failure must not hide the others
            row = {"status": "FAILED: %s: %s" % (type(e).__name__, e)}
        rows[name] = row
        if "hetpar_s" not in row:
            print("%-34s %s" % (name, row["status"]))
            continue
        rate = row["flops"] / row["hetpar_s"]
        tiles = "%.3f" % (row["tiles_s"] * 1e3) if row.get("tiles_s") else "-"
        print("%-34s %-9s %10.3f %10.3f %6.2fx %8.1f %5.1f%% %.2e (%.0e)    %s" % (
            name, row["status"], row["hetpar_s"] * 1e3, row["torch_s"] * 1e3,
            row["hetpar_s"] / row["torch_s"], rate / 1e12,
            100 * rate / PEAK[row["dtype"]], row["err"], row["bound"], tiles), flush=True)
    for one in [n for n in rows if n.startswith("attn-")]:
        two = rows.get("attn2-" + one[len("attn-"):], {})
        if "hetpar_s" in rows[one] and "hetpar_s" in two:
            t = two["hetpar_s"] - rows[one]["hetpar_s"]
            per = rows[one]["flops"]
            line = "attention alone (%s): HetPar %.3f ms, %.1f TFLOP/s (%.1f%% of peak)" % (
                one, t * 1e3, per / t / 1e12, 100 * per / t / PEAK["bfloat16"])
            if rows[one].get("tiles_s") and two.get("tiles_s"):
                tt = two["tiles_s"] - rows[one]["tiles_s"]
                line += "; SIMT kernel %.3f ms, %.1f TFLOP/s" % (tt * 1e3, per / tt / 1e12)
            print(line + "; PyTorch SDPA %.3f ms" % (rows[one]["torch_s"] * 1e3))
    json.dump(rows, open(os.path.join(a.out, "bench.json"), "w"), indent=1)
    return 0 if all(r["status"] == "match" for r in rows.values()) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("prep")
    p.add_argument("--build", default=os.environ.get(
        "HETPAR_BUILD_DIR", os.path.join(os.path.dirname(os.path.dirname(HERE)), "build")))
    r = sub.add_parser("run")
    r.add_argument("prep")
    r.add_argument("out")
    r.add_argument("--hetpar-run", required=True)
    r.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--repeat", type=int, default=50)
    r.add_argument("--only", help="a regular expression: run the matching cases only")
    a = ap.parse_args()
    global DEVICE, REPEAT
    DEVICE = getattr(a, "device", "cuda")
    REPEAT = getattr(a, "repeat", REPEAT)
    return prepare(a) if a.cmd == "prepare" else run(a)


if __name__ == "__main__":
    sys.exit(main())
