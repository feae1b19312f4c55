#!/usr/bin/env python3
"""PyTorch side of the training benchmark (bench/train/run.py): trains the same
model as the HetPar training program, on the same data, with the same optimizer,
and prints one JSON object with the per-step wall times and losses.

  torch_step.py MODEL --data DIR --batch B --steps N --threads T
                [--loss cross-entropy|mse] [--onnx FILE] [--lr X] [--device cpu|cuda]

MODEL is a bundled model of scripts/models/export_models.py (mlp gpt2 bert
llama vit resnet18: the torch module that was exported, rebuilt with the export's
seed, so its weights are the ONNX model's; resnet18 with its BatchNorms folded into
the convolutions, as its eval-mode export is; the Hugging Face ones need
transformers 4.36) or gpt2-small (GPT2Small below: the graph of
bench/import/make_gpt2.py written as a torch module, with the weights of --onnx).

One step, as hetpar-run --train times one: take the next B samples (in order,
wrapping, from the memory-mapped DIR/<input>.npy and DIR/labels.npy), zero the
gradients, forward, loss (mean cross-entropy over the flattened logits, or mean
squared error), backward, torch.optim.AdamW.step() (lr 1e-3, betas (0.9, 0.999),
eps 1e-8, weight decay 0.01: hetpar-compile's defaults but the lr), and read the
loss back (loss.item(), which waits for the GPU with --device cuda: PyTorch
eager, the batch copied to the GPU inside the step as hetpar-run uploads it).
torch.set_num_threads(T).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the HetPar side of the benchmark still runs
    print(json.dumps({"skipped": "no torch (%s): apt-get install python3-torch" % e}))
    sys.exit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "models"))


class GPT2Small(torch.nn.Module):
    """bench/import/make_gpt2.py's graph, op for op: pre-LayerNorm blocks, one QKV
    projection split three ways, the causal mask (-1e4) added to the scaled
    scores, GELU (erf), logits from the transposed token embedding (tied).
    Parameters in the ONNX layout ([in, out] weights used as x @ W), named after
    the ONNX initializers."""

    def __init__(self, inits, layers, heads):
        super().__init__()
        self.layers, self.heads = layers, heads
        self.p = torch.nn.ParameterDict(
            {k.replace(".", "__"): torch.nn.Parameter(torch.from_numpy(v.copy()))
             for k, v in inits.items() if k not in ("causal_mask",)})
        self.register_buffer("mask", torch.from_numpy(inits["causal_mask"].copy()))

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def ln(self, x, prefix):
        return F.layer_norm(x, x.shape[-1:], self.w(prefix + ".weight"), self.w(prefix + ".bias"),
                            1e-5)

    def linear(self, x, prefix):
        return x @ self.w(prefix + ".weight") + self.w(prefix + ".bias")

    def forward(self, ids):
        b, s = ids.shape
        hidden = self.w("wte").shape[1]
        hd = hidden // self.heads
        h = self.w("wte")[ids] + self.w("wpe")[:s]
        for i in range(self.layers):
            p = f"h{i}."
            q, k, v = self.linear(self.ln(h, p + "ln_1"), p + "attn.c_attn").split(hidden, dim=-1)
            q = q.reshape(b, s, self.heads, hd).permute(0, 2, 1, 3)
            k = k.reshape(b, s, self.heads, hd).permute(0, 2, 3, 1)
            v = v.reshape(b, s, self.heads, hd).permute(0, 2, 1, 3)
            att = torch.softmax((q @ k) * (1.0 / math.sqrt(hd)) + self.mask, dim=-1)
            ctx = (att @ v).permute(0, 2, 1, 3).reshape(b, s, hidden)
            h = h + self.linear(ctx, p + "attn.c_proj")
            x = self.linear(self.ln(h, p + "ln_2"), p + "mlp.c_fc")
            h = h + self.linear(F.gelu(x), p + "mlp.c_proj")
        return self.ln(h, "ln_f") @ self.w("wte").t()


def gpt2_small(onnx_path):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(onnx_path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    layers = sum(1 for n in inits if n.endswith(".ln_1.weight"))
    hidden = inits["wte"].shape[1]
    heads = hidden // 64  # make_gpt2.py's sizes: head dim 64
    # The scalar constants (scale, half, one, inv_sqrt2) are Python numbers here.
    inits = {n: a for n, a in inits.items() if a.dtype == np.float32 and a.ndim > 0}
    return GPT2Small(inits, layers, heads), ["input_ids"]


def bundled(name):
    import export_models as em
    torch.manual_seed(0)  # export_models.export's seed: the exported weights
    np.random.seed(0)
    model, _, in_names, _, _ = em.MODELS[name]()
    if name == "resnet18":
        import train_reference
        model = train_reference.fold_resnet(model)
    return model, in_names


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--loss", default="cross-entropy", choices=["cross-entropy", "mse"])
    ap.add_argument("--onnx", help="gpt2-small: the ONNX model whose weights to use")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    try:
        model, in_names = gpt2_small(a.onnx) if a.model == "gpt2-small" else bundled(a.model)
    except ImportError as e:
        print(json.dumps({"skipped": str(e)}))
        return 0
    model.to(a.device).train()
    data = [np.load(os.path.join(a.data, n + ".npy"), mmap_mode="r") for n in in_names]
    labels = np.load(os.path.join(a.data, "labels.npy"), mmap_mode="r")
    n = labels.shape[0]
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)

    def batch(arr, s):
        idx = [(s * a.batch + i) % n for i in range(a.batch)]
        return torch.from_numpy(np.ascontiguousarray(arr[idx])).to(a.device)

    times, losses = [], []
    for s in range(a.steps):
        t0 = time.perf_counter()
        inputs = [batch(d, s) for d in data]
        y = batch(labels, s)
        opt.zero_grad(set_to_none=True)
        out = model(*inputs)
        out = out[0] if isinstance(out, (tuple, list)) else out
        if a.loss == "cross-entropy":
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        else:
            loss = F.mse_loss(out, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - t0)
    print(json.dumps({"step_seconds": times, "losses": losses,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "device": a.device}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
