#!/usr/bin/env python3
"""PyTorch's latency on one model, for bench/peers/run.sh.

Usage: torch_latency.py NAME REPEAT THREADS [--onnx MODEL.onnx] [INPUT.npy ...]

NAME is a bundled model of scripts/models/export_models.py (mlp gpt2 bert
llama vit resnet18: the torch module that was exported, rebuilt with the
export's seed, so with the ONNX model's weights; resnet18 with its
BatchNorms folded, as its eval-mode export is; the Hugging Face ones need
transformers 4.36) or gpt2-small (bench/train/torch_step.py's GPT2Small: the
graph of bench/import/make_gpt2.py as a torch module, with the weights of
--onnx). Runs it eager in inference mode with torch.set_num_threads(THREADS)
and one inter-op thread on the given inputs (in the model's input order),
after 5 warm-up runs, and prints "median MS min MS" of REPEAT forward passes.
Prints "skipped: REASON" (exit 0) when torch or transformers is missing,
or for a bundled model without a module here (digits-mlp and char-gpt of
scripts/models/export_train_models.py, exported with their training data);
exits 1 with a message when a file cannot be read.
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "train"))


def main():
    args = sys.argv[1:]
    onnx_path = None
    if "--onnx" in args:
        k = args.index("--onnx")
        onnx_path = args[k + 1]
        del args[k:k + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    name, repeat, threads = args[0], int(args[1]), int(args[2])
    try:
        import torch
        import torch_step
        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        if name == "gpt2-small":
            if not onnx_path:
                sys.exit("torch_latency.py: gpt2-small needs --onnx MODEL.onnx")
            model, _ = torch_step.gpt2_small(onnx_path)
        else:
            model, _ = torch_step.bundled(name)
    except ImportError as e:
        print("skipped: %s" % e)
        return
    except KeyError:
        # digits-mlp and char-gpt (scripts/models/export_train_models.py)
        # are exported with their training data; no module rebuilt here.
        print("skipped: no torch module for %s" % name)
        return
    inputs = [torch.from_numpy(np.load(p)) for p in args[3:]]
    model.eval()
    with torch.inference_mode():
        for _ in range(5):
            model(*inputs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(*inputs)
            times.append((time.perf_counter() - t0) * 1e3)
    print("median %.3f min %.3f" % (float(np.median(times)), min(times)))


if __name__ == "__main__":
    main()
