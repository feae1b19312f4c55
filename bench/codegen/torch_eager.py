#!/usr/bin/env python3
"""PyTorch eager latency of the bundled real models, for comparison with
hetpar-run on the same machine.

Usage: torch_eager.py [--device cuda|cpu] [--repeat N] [names...]

Builds each model exactly as scripts/models/export_models.py did before
exporting it (same seed, so the same weights), runs it on the stored inputs
(examples/models/<name>/input_<i>.npy), checks the output against the stored
ONNX Runtime output (rtol 1e-3, atol 1e-4; a mismatch means the weights are
not the exported ones and the timing is not comparable) and prints the median
latency of a forward pass over --repeat runs after 5 warm-up runs, in
inference mode, synchronizing the device around each run. Models that need
Hugging Face transformers are skipped when it is not installed.
"""
import argparse
import glob
import os
import sys
import time

import numpy as np
import torch

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "scripts", "models"))
from export_models import MODELS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("names", nargs="*", default=list(MODELS))
    args = ap.parse_args()
    dev = torch.device(args.device)
    for name in args.names:
        torch.manual_seed(0)
        np.random.seed(0)
        try:
            model, _, _, _, _ = MODELS[name]()
        except ImportError as e:
            print("torch eager %s: skipped (%s)" % (name, e))
            continue
        model.eval().to(dev)
        folder = os.path.join(root, "examples", "models", name)
        inputs = [torch.from_numpy(np.load(f)).to(dev) for f in
                  sorted(glob.glob(os.path.join(folder, "input_*.npy")))]
        ref = np.load(os.path.join(folder, "output_0.npy"))
        with torch.inference_mode():
            out = model(*inputs)
            out = out[0] if isinstance(out, (tuple, list)) else out
            ok = np.allclose(out.float().cpu().numpy(), ref, rtol=1e-3, atol=1e-4)
            for _ in range(5):
                model(*inputs)
            times = []
            for _ in range(args.repeat):
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                model(*inputs)
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
        print("torch eager %s: median %.3f ms over %d runs on %s%s" % (
            name, 1e3 * float(np.median(times)), args.repeat, args.device,
            "" if ok else " (OUTPUT DIFFERS from the stored reference)"))


if __name__ == "__main__":
    main()
