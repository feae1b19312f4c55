#!/usr/bin/env python3
"""Writes PyTorch training references for the bundled models: examples/models/<name>/train/
(mlp, gpt2, bert, llama, vit, resnet18 of export_models.py; digits-mlp and char-gpt of
export_train_models.py).

For each model the exact torch module of scripts/models/export_models.py is rebuilt
and loaded with the values of the committed static ONNX model's initializers
(model.onnx), and one AdamW step is taken with PyTorch autograd and
torch.optim.AdamW. HetPar never computes any of it.

Parameterization. HetPar trains every float initializer of the ONNX model, by
initializer name, so the reference is computed in the ONNX parameterization, not
in torch's:
  * every torch parameter slot (every module's parameters, tied ones under each name) is matched
    to exactly one ONNX float initializer: by name when the name exists and the
    values are equal, else by value, as is or transposed (the exporter writes
    nn.Linear weights that feed MatMul transposed, as onnx::MatMul_<n>); every ONNX
    float initializer must be matched by at least one slot;
  * one leaf tensor per ONNX initializer (in the ONNX layout) is handed to the
    module with torch.nn.utils.stateless.functional_call, transposed where matched
    transposed. So slots that share one ONNX initializer (torch's exporter
    deduplicates initializers of equal value: all LayerNorm weights of the
    randomly initialized models are ones and all biases zeros, so they became
    one initializer) get the sum of their gradients, as HetPar must; and a torch
    tie that the exporter split (GPT-2's lm_head.weight is wte.weight; ONNX holds
    wte for Gather and a transposed copy onnx::MatMul_<n> for the head) is untied.
  * resnet18's ONNX model has its BatchNorms folded into the convolutions
    (eval-mode export). Its module is the same network with each BatchNorm folded
    into a biased Conv2d (rebuilt with export_models' seed, folded, and matched by
    value to 1e-5, then loaded with the exact ONNX values).

Checks: the forward output equals the committed output_0.npy (ONNX Runtime) within
1e-5; and, with onnxruntime, every initializer's gradient is checked by a central
finite difference of the ONNX model itself along the gradient's direction.

Written per model, in train/:
  <graph input>.npy   the committed inputs, named after the ONNX graph inputs
  labels.npy          int64 class labels ([B] or [B,S]; random with a fixed seed, except
                      digits-mlp and char-gpt: their data set's labels) or, for mse
                      (bert), the float32 target (random normal) of the output's shape
  loss.npy            float32 scalar, the loss before the step
  grad_<init>.npy     d loss / d initializer (float32, ONNX layout)
  adamw_<init>.npy    the initializer after one AdamW step
  loss_step2.npy      float32 scalar, the loss of a second step on the same batch
                      (at the weights adamw_*, before its update)
  adamw2_<init>.npy   the initializer after that second AdamW step
  names.json          file name -> ONNX initializer name (grad_, adamw_, adamw2_ files)
  reference.json      loss, optimizer, the slot mapping, ties, checks
File names: any character of the initializer name outside [A-Za-z0-9._-] becomes '_'
(onnx::MatMul_474 -> grad_onnx__MatMul_474.npy).

Requirements: Debian's python3-torch 1.13, python3-onnx, transformers 4.36 and
(for the checks) onnxruntime, e.g. in a venv made with
`python3 -m venv --system-site-packages` (see export_models.py).
Usage: python3 scripts/models/train_reference.py [--models DIR] [names...]
"""
import argparse
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models as em  # noqa: E402
import export_train_models as etm  # noqa: E402

LR, BETAS, EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 0.01
# loss kind per model: (kind, classes or None)
LOSS = {"mlp": "cross-entropy", "gpt2": "cross-entropy", "llama": "cross-entropy",
        "vit": "cross-entropy", "resnet18": "cross-entropy", "bert": "mse",
        "digits-mlp": "cross-entropy", "char-gpt": "cross-entropy"}


def escape(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def fold_resnet(model):
    """The same network with every BatchNorm2d folded into the preceding conv
    (as torch's eval-mode ONNX export does)."""
    def fold(conv, bn):
        s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        c = torch.nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                            conv.padding, bias=True)
        with torch.no_grad():
            c.weight.copy_(conv.weight * s.reshape(-1, 1, 1, 1))
            b = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
            c.bias.copy_((b - bn.running_mean) * s + bn.bias)
        return c
    model.stem[0] = fold(model.stem[0], model.stem[1])
    model.stem[1] = torch.nn.Identity()
    for blk in model.blocks:
        blk.conv1, blk.bn1 = fold(blk.conv1, blk.bn1), torch.nn.Identity()
        blk.conv2, blk.bn2 = fold(blk.conv2, blk.bn2), torch.nn.Identity()
        if blk.down is not None:
            blk.down[0] = fold(blk.down[0], blk.down[1])
            blk.down[1] = torch.nn.Identity()
    return model


def build(name):
    # The builders' random weights are replaced by the ONNX values; only resnet18
    # needs the same seed as export_models.export (its folded values are matched).
    torch.manual_seed(0)
    np.random.seed(0)
    if name in etm.MODELS:  # export_train_models.py (digits-mlp, char-gpt)
        model, _, in_names, out_names, _ = etm.build(name)
    else:
        model, _, in_names, out_names, _ = em.MODELS[name]()
    model.eval()
    if name == "resnet18":
        model = fold_resnet(model)
    return model, in_names, out_names


def match(slots, inits, tol):
    def eq(a, b):
        if a.shape != b.shape:
            return False
        return np.array_equal(a, b) if tol == 0 else np.allclose(a, b, rtol=tol, atol=tol)
    by_name = {s for s, v in slots if s in inits and eq(inits[s], v)}
    mapping = {}
    for s, v in slots:
        if s in by_name:
            mapping[s] = (s, False)
            continue
        cands = [(n, False) for n, a in inits.items() if eq(a, v)]
        if v.ndim == 2:
            cands += [(n, True) for n, a in inits.items() if eq(a, v.T)]
        if len(cands) > 1:  # prefer an initializer no slot claims by name (split ties)
            cands = [c for c in cands if c[0] not in by_name]
        if len(cands) != 1:
            raise SystemExit(f"torch parameter {s} {v.shape}: {len(cands)} ONNX candidates {cands}")
        mapping[s] = cands[0]
    unmatched = set(inits) - {n for n, _ in mapping.values()}
    if unmatched:
        raise SystemExit(f"ONNX float initializers matched by no torch parameter: {sorted(unmatched)}")
    return mapping


def ort_loss_fn(model_path, float_inits, in_feeds, loss_fn):
    """A function init-values -> loss (float64) that runs the ONNX model in ONNX Runtime
    with the float initializers fed as graph inputs."""
    import onnxruntime as ort
    m = onnx.load(model_path)
    keep = [t for t in m.graph.initializer if t.name not in float_inits]
    moved = [t for t in m.graph.initializer if t.name in float_inits]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    for t in moved:
        m.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])

    def run(values):
        out = sess.run(None, {**in_feeds, **values})[0]
        return loss_fn(torch.tensor(out, dtype=torch.float64)).item()
    return run


def reference(name, root, labels_seed=1234):
    mdir = os.path.join(root, name)
    path = os.path.join(mdir, "model.onnx")
    g = onnx.load(path).graph
    init_names = {t.name for t in g.initializer}
    in_names_onnx = [i.name for i in g.input if i.name not in init_names]
    out_name = g.output[0].name
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    float_inits = {n: a for n, a in inits.items() if a.dtype == np.float32}

    model, in_names, out_names = build(name)
    assert in_names == in_names_onnx, (in_names, in_names_onnx)
    inputs = [np.load(os.path.join(mdir, f"input_{i}.npy")) for i in range(len(in_names))]
    expected = np.load(os.path.join(mdir, "output_0.npy"))

    slots = [((mn + "." if mn else "") + pn, p.detach().numpy())
             for mn, mod in model.named_modules(remove_duplicate=False)
             for pn, p in mod._parameters.items() if p is not None]
    mapping = match(slots, float_inits, 1e-5 if name == "resnet18" else 0)

    P = {n: torch.tensor(a, requires_grad=True) for n, a in float_inits.items()}

    def forward(P):
        params = {s: (P[n].t() if tr else P[n]) for s, (n, tr) in mapping.items()}
        return torch.nn.utils.stateless.functional_call(
            model, params, tuple(torch.tensor(x) for x in inputs))

    out = forward(P)
    fwd_err = float(np.abs(out.detach().numpy() - expected).max())
    if fwd_err > 1e-5:
        raise SystemExit(f"{name}: forward differs from output_0.npy by {fwd_err}")

    rng = np.random.default_rng(labels_seed)
    kind = LOSS[name]
    if kind == "cross-entropy":
        classes = out.shape[-1]
        if name in etm.MODELS:  # the data set's own labels of the batch input_0.npy holds
            labels = etm.first_labels(name)
        else:
            labels = rng.integers(0, classes, out.shape[:-1]).astype(np.int64)
        assert labels.shape == out.shape[:-1]

        def loss_fn(o):
            return F.cross_entropy(o.reshape(-1, o.shape[-1]), torch.tensor(labels).reshape(-1))
    else:
        labels = rng.standard_normal(out.shape).astype(np.float32)

        def loss_fn(o):
            return F.mse_loss(o, torch.tensor(labels, dtype=o.dtype))

    loss = loss_fn(out)
    opt = torch.optim.AdamW(list(P.values()), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    opt.zero_grad()
    loss.backward()
    grads = {n: p.grad.detach().numpy().copy() for n, p in P.items()}
    opt.step()
    after = {n: p.detach().numpy().copy() for n, p in P.items()}
    # A second step on the same batch: exercises the optimizer state (exp_avg,
    # exp_avg_sq) and the step-2 bias correction.
    loss2 = loss_fn(forward(P))
    opt.zero_grad()
    loss2.backward()
    opt.step()
    after2 = {n: p.detach().numpy().copy() for n, p in P.items()}

    # Independent check of the ONNX parameterization: central differences of the ONNX
    # model (ONNX Runtime) along each gradient's direction give the gradient's norm.
    fd = {}
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        onnxruntime = None
    if onnxruntime is not None:
        run = ort_loss_fn(path, float_inits, dict(zip(in_names, inputs)), loss_fn)
        base = {n: a.copy() for n, a in float_inits.items()}
        for n, gr in grads.items():
            gn = float(np.linalg.norm(gr.astype(np.float64)))
            if gn == 0:
                fd[n] = [0.0, 0.0]
                continue
            d = (gr / gn).astype(np.float32)
            h = 1e-3
            lp = run({**base, n: base[n] + h * d})
            lm = run({**base, n: base[n] - h * d})
            est = (lp - lm) / (2 * h)
            fd[n] = [gn, est]
            if abs(est - gn) > 0.05 * gn + 5e-4:  # float32 ORT; ReLU/max kinks
                raise SystemExit(f"{name}: finite difference of {n}: {est} vs gradient norm {gn}")

    tdir = os.path.join(mdir, "train")
    if os.path.isdir(tdir):
        shutil.rmtree(tdir)
    os.makedirs(tdir)
    for n, x in zip(in_names, inputs):
        np.save(os.path.join(tdir, f"{escape(n)}.npy"), x)
    np.save(os.path.join(tdir, "labels.npy"), labels)
    np.save(os.path.join(tdir, "loss.npy"), np.asarray(loss.item(), np.float32).reshape(()))
    np.save(os.path.join(tdir, "loss_step2.npy"), np.asarray(loss2.item(), np.float32).reshape(()))
    files = {}
    for n in float_inits:
        for prefix, arr in (("grad_", grads[n]), ("adamw_", after[n]), ("adamw2_", after2[n])):
            fn = f"{prefix}{escape(n)}.npy"
            assert fn not in files, f"file name clash: {fn}"
            files[fn] = n
            np.save(os.path.join(tdir, fn), arr.astype(np.float32))
    with open(os.path.join(tdir, "names.json"), "w") as f:
        json.dump(files, f, indent=1, sort_keys=True)
        f.write("\n")

    users = {}
    for s, (n, tr) in mapping.items():
        users.setdefault(n, []).append(s + (" (transposed)" if tr else ""))
    ref = {
        "model": "model.onnx",
        "inputs": in_names,
        "output": out_name,
        "loss": kind,
        "labels": "labels",
        "labels_note": ("int64 class indices; cross_entropy(mean) over output.reshape(-1, C) against labels.reshape(-1)"
                        if kind == "cross-entropy" else
                        "float32 target of the output's shape; mse_loss(mean)"),
        "optimizer": {"kind": "adamw", "lr": LR, "betas": list(BETAS), "eps": EPS,
                      "weight_decay": WD, "steps": 1},
        "loss_value": float(loss.item()),
        "loss_step2_value": float(loss2.item()),
        "forward_max_abs_diff_vs_output_0": fwd_err,
        "onnx_initializer_to_torch_parameters": users,
        "shared_initializers": {n: u for n, u in users.items() if len(u) > 1},
        "finite_difference_check": ({n: {"grad_norm": v[0], "ort_central_difference": v[1]}
                                     for n, v in fd.items()} if fd else "skipped (no onnxruntime)"),
    }
    with open(os.path.join(tdir, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(tdir, x)) for x in os.listdir(tdir))
    print(f"{name}: loss {loss.item():.6f}, {len(float_inits)} parameters "
          f"({len(ref['shared_initializers'])} shared), forward diff {fwd_err:.2e}, "
          f"train/ {size} bytes")
    if size > 2.5 * 1024 * 1024:
        raise SystemExit(f"{tdir} is {size} bytes (limit 2.5 MB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(os.path.dirname(__file__), "..", "..", "examples", "models"))
    ap.add_argument("names", nargs="*", default=list(LOSS))
    a = ap.parse_args()
    for n in a.names:
        reference(n, a.models)


if __name__ == "__main__":
    main()
