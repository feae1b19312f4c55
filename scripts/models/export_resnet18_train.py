#!/usr/bin/env python3
"""Exports the bundled ResNet-18 (export_models.ResNet18, the same seed and
weights as examples/models/resnet18) in *training* mode, with PyTorch training
references, to examples/models/resnet18-train/.

examples/models/resnet18/model.onnx is an eval-mode export: its BatchNorms are
folded into the convolutions, so training it trains a BatchNorm-free network.
torch.onnx.export(training=TrainingMode.TRAINING, opset 17, no constant folding)
keeps every BatchNormalization, with training_mode=1, its running mean and
variance as initializers and their updates as extra outputs; every float
initializer is one torch parameter or buffer under its torch name.

Written:
  model.onnx        static batch 2, input `image` [2, 3, 64, 64], output `logits`
  train/            in the layout of scripts/models/train_reference.py (image.npy:
                    examples/models/resnet18/input_0.npy; labels.npy:
                    resnet18/train/labels.npy), from PyTorch autograd in float64
                    on the module loaded with the ONNX file's values, BatchNorm in
                    training mode (batch statistics): loss.npy, grad_<p>.npy (for
                    one SGD step with lr 1), names.json, reference.json, and
                    running_<b>.npy, the running statistics after that step as
                    ONNX (opset 15) updates them, by hand from each BatchNorm's
                    input (input * 0.9 + batch statistic * 0.1, population
                    variance; PyTorch's module would use the unbiased variance for
                    running_var, docs/training.md).

No AdamW references: AdamW moves every element by about lr whatever the size
of its gradient, and through 20 training-mode BatchNorms at batch 2 (8
elements per channel in the last stage) some gradient elements are below
float32 rounding (1e-7 of gradients up to 2), so their AdamW step has a random
sign in any float32 implementation, PyTorch's included. The optimizer is
checked on the other models. The float32 rounding of the gradients is
measured here (PyTorch float32 against float64) and recorded with the
tolerance compare-training.py takes from reference.json.

Usage: /usr/bin/python3 scripts/models/export_resnet18_train.py [--out DIR]
Needs torch 1.13 and onnx (no onnxruntime).
"""
import argparse
import json
import os
import re
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_models as em  # noqa: E402

ROOT = os.path.join(HERE, "..", "..", "examples", "models")
ATOL = 1e-4  # the gradients' tolerance (reference.json), > 5x float32 rounding


def escape(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "resnet18-train"))
    a = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    model, _, in_names, out_names, _ = em.tiny_resnet18()  # export_models' weights
    image = np.load(os.path.join(ROOT, "resnet18", "input_0.npy"))
    labels = np.load(os.path.join(ROOT, "resnet18", "train", "labels.npy"))
    os.makedirs(os.path.join(a.out, "train"), exist_ok=True)
    path = os.path.join(a.out, "model.onnx")
    torch.onnx.export(model, (torch.tensor(image),), path, input_names=in_names,
                      output_names=out_names, opset_version=em.OPSET,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    bns = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
    for n in bns:
        at = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        assert at["training_mode"] == 1 and len(n.output) == 3 and abs(at["momentum"] - 0.9) < 1e-6, n
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    bn_modules = {k: v for k, v in model.named_modules() if isinstance(v, torch.nn.BatchNorm2d)}
    buffers = [f"{k}.{s}" for k in bn_modules for s in ("running_mean", "running_var")]
    params = [k for k, _ in model.named_parameters()]
    floats = sorted(k for k, v in inits.items() if v.dtype == np.float32)
    assert floats == sorted(params + buffers), (floats, sorted(params + buffers))
    assert len(bns) == len(bn_modules)

    captured = {}
    for k, mod in bn_modules.items():
        mod.register_forward_hook(lambda mod, inp, out, k=k: captured.__setitem__(k, inp[0].detach()))
    model.train()
    lab = torch.tensor(labels)

    def step(dtype):
        """The loss, the gradients and ONNX's running statistics after the
        step, computed in dtype (buffers copied: the module updates them in
        place with PyTorch's own rule)."""
        model.to(dtype)
        P = {k: torch.tensor(inits[k], dtype=dtype, requires_grad=True) for k in params}
        B = {k: torch.tensor(inits[k], dtype=dtype) for k in buffers}
        out = torch.nn.utils.stateless.functional_call(model, {**P, **B},
                                                       (torch.tensor(image, dtype=dtype),))
        loss = F.cross_entropy(out, lab)
        grads = dict(zip(params, (g.detach().numpy().astype(np.float64) for g in
                                  torch.autograd.grad(loss, [P[k] for k in params]))))
        run = {}
        for k in bn_modules:
            c = captured[k].numpy().astype(np.float64)
            run[k + ".running_mean"] = (inits[k + ".running_mean"] * 0.9
                                        + c.mean(axis=(0, 2, 3)) * 0.1).astype(np.float32)
            run[k + ".running_var"] = (inits[k + ".running_var"] * 0.9
                                       + c.var(axis=(0, 2, 3)) * 0.1).astype(np.float32)
        return loss.item(), grads, run

    loss, grads, run1 = step(torch.float64)
    loss32, grads32, _ = step(torch.float32)
    # float32 rounding of the gradients: the largest |f32 - f64| of a tensor
    # relative to its largest |f64| element, and absolute.
    noise = max(float(np.abs(grads32[k] - grads[k]).max() / np.abs(grads[k]).max()) for k in params)
    noise_abs = max(float(np.abs(grads32[k] - grads[k]).max()) for k in params)
    assert noise_abs * 5 < ATOL, noise_abs

    t = os.path.join(a.out, "train")
    for f in os.listdir(t):
        os.remove(os.path.join(t, f))
    np.save(os.path.join(t, "image.npy"), image)
    np.save(os.path.join(t, "labels.npy"), labels)
    np.save(os.path.join(t, "loss.npy"), np.asarray(loss, np.float32))
    names = {}
    for prefix, values in (("grad_", grads), ("running_", run1)):
        for k, v in values.items():
            fn = prefix + escape(k) + ".npy"
            assert fn not in names, fn
            names[fn] = k
            np.save(os.path.join(t, fn), np.asarray(v, np.float32))
    with open(os.path.join(t, "names.json"), "w") as f:
        json.dump(names, f, indent=1, sort_keys=True)
        f.write("\n")
    ref = {"model": "model.onnx", "inputs": in_names, "output": out_names[0],
           "loss": "cross-entropy", "labels": "labels",
           "optimizer": {"kind": "sgd", "lr": 1.0, "steps": 1},
           "loss_value": loss, "loss_float32": loss32,
           "parameters": len(params), "buffers": len(buffers),
           "batchnorm": "training mode: batch statistics; running statistics by ONNX's "
                        "rule (population variance), momentum 0.9",
           "gradients": "PyTorch float64; float32 rounding (PyTorch float32 against float64): "
                        "%.2g absolute, %.2g of the tensor's largest gradient" % (noise_abs, noise),
           "tolerance": {"grad": {"rtol": 1e-4, "atol": ATOL}}}
    with open(os.path.join(t, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(t, f)) for f in os.listdir(t))
    print(f"resnet18-train: loss {loss:.6f}, {len(params)} parameters, {len(buffers)} buffers; "
          f"float32 gradient rounding {noise_abs:.2g} ({noise:.2g} relative); model.onnx "
          f"{os.path.getsize(path)} bytes, train/ {size} bytes")


if __name__ == "__main__":
    main()
