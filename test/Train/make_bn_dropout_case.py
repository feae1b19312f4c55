#!/usr/bin/env python3
"""Writes test/Train/Inputs/bn-dropout/: a small conv + BatchNorm + Dropout
network exported by PyTorch's ONNX exporter in training mode, with PyTorch
references for HetPar's training of it (test/Train/bn-dropout.test).

The network: Conv2d(3, 4, 3, padding 1, no bias) -> BatchNorm2d(4) -> ReLU ->
Dropout(0.25) -> mean over H, W -> Linear(4, 5), on x [4, 3, 6, 6] with
cross-entropy against labels [4]. (A conv bias before a training-mode
BatchNorm has a gradient of exactly 0 in theory and rounding noise in practice,
which AdamW would amplify to a step of about lr in a random direction, so the
convolution has none, as in ResNets.) torch.onnx.export(training=TRAINING,
opset 17) writes BatchNormalization with training_mode=1 and its running
statistics as initializers and extra outputs, and Dropout with a constant
true training_mode.

References (PyTorch autograd, float32, from the ONNX file's initializer
values; never from HetPar):
  * BatchNorm: F.batch_norm(training=True), PyTorch's own batch-statistics
    forward and backward;
  * Dropout: the mask HetPar's Philox4x32-10 draws (test/lib/philox.py, an
    independent numpy implementation checked against Random123's known
    answers): the exporter gives the node no seed, so its key is
    splitmix64(0) (the default program seed, first unseeded Dropout), and
    step s (0-based) counts with s; y = x * mask / (1 - 0.25);
  * running statistics after a step, by hand as ONNX (opset 15) defines them:
    input * 0.9 + batch statistic * 0.1 with the population variance
    (PyTorch's module would use the unbiased variance for running_var; both are
    recorded in reference.json).

Written in train/ (the layout of examples/models/*/train, which
test/lib/compare-training.py reads): x.npy, labels.npy, loss.npy,
loss_step2.npy, grad_<init>.npy (one SGD step with lr 1 checks them),
adamw_<init>.npy and adamw2_<init>.npy (AdamW lr 1e-3, weight decay 0.01,
steps 1 and 2 on the same batch, step 2 with step 2's mask),
running_<buffer>.npy (the running statistics after step 1) and
running2_<buffer>.npy (after AdamW's step 2), names.json, reference.json.

Usage: /usr/bin/python3 test/Train/make_bn_dropout_case.py [--out DIR]
Needs numpy, torch 1.13, onnx.
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
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import philox  # noqa: E402

P_DROP, MOMENTUM, EPS = 0.25, 0.1, 1e-5  # torch's momentum; ONNX's is 1 - 0.1
LR, BETAS, ADAM_EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 0.01


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(4, eps=EPS, momentum=MOMENTUM)
        self.drop = torch.nn.Dropout(P_DROP)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = self.drop(torch.relu(self.bn(self.conv(x))))
        return self.fc(y.mean(dim=(2, 3)))


def escape(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def forward(P, B, x, mask, ratio=P_DROP):
    """The network on parameters P and buffers B (ONNX initializer names),
    with the given Dropout keep mask. Returns logits, the conv output."""
    c = F.conv2d(x, P["conv.weight"], None, padding=1)
    y = F.batch_norm(c, B["bn.running_mean"].clone(), B["bn.running_var"].clone(),
                     P["bn.weight"], P["bn.bias"], training=True, momentum=MOMENTUM, eps=EPS)
    y = torch.relu(y) * torch.tensor(mask, dtype=torch.float32) / (1.0 - ratio)
    return F.linear(y.mean(dim=(2, 3)), P["fc.weight"], P["fc.bias"]), c


def running(B, c):
    """ONNX's running statistics after a step whose conv output is c."""
    a = c.detach().numpy().astype(np.float64)
    mean, var = a.mean(axis=(0, 2, 3)), a.var(axis=(0, 2, 3))
    m = 1.0 - MOMENTUM
    return {"bn.running_mean": (B["bn.running_mean"].numpy() * m + mean * (1 - m)).astype(np.float32),
            "bn.running_var": (B["bn.running_var"].numpy() * m + var * (1 - m)).astype(np.float32)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "Inputs", "bn-dropout"))
    a = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    net = Net()
    with torch.no_grad():  # non-trivial statistics and affine parameters
        net.bn.running_mean.uniform_(-0.2, 0.2)
        net.bn.running_var.uniform_(0.5, 1.5)
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.2, 0.2)
    x = torch.randn(4, 3, 6, 6)
    labels = np.array([0, 3, 1, 4], np.int64)
    os.makedirs(os.path.join(a.out, "train"), exist_ok=True)
    path = os.path.join(a.out, "model.onnx")
    torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["logits"],
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    ops = {n.op_type: n for n in model.graph.node}
    bn, drop = ops["BatchNormalization"], ops["Dropout"]
    attrs = {at.name: onnx.helper.get_attribute_value(at) for at in bn.attribute}
    assert attrs.get("training_mode") == 1 and len(bn.output) == 3, bn
    assert abs(attrs["momentum"] - (1 - MOMENTUM)) < 1e-7, attrs
    assert not any(at.name == "seed" for at in drop.attribute), drop

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    buffers = ["bn.running_mean", "bn.running_var"]
    assert set(buffers) <= set(inits), sorted(inits)
    params = [n for n, v in inits.items() if v.dtype == np.float32 and n not in buffers]
    assert sorted(params) == sorted(["conv.weight", "bn.weight", "bn.bias", "fc.weight",
                                     "fc.bias"]), params
    P = {n: torch.tensor(inits[n], requires_grad=True) for n in params}
    B = {n: torch.tensor(inits[n]) for n in buffers}
    # The functional forward is the module's (dropout off: p = 0, mask of ones).
    ref = Net()
    ref.load_state_dict({**{k: torch.tensor(inits[k]) for k in params + buffers},
                         "bn.num_batches_tracked": torch.tensor(0)})
    ref.train()
    ref.drop.p = 0.0
    ones = np.ones((4, 4, 6, 6), bool)
    err = float((ref(x) - forward(P, B, x, ones, 0.0)[0]).abs().max())
    assert err < 1e-5, err

    seed = philox.splitmix64(0)  # program seed 0, the first unseeded Dropout
    masks = [philox.dropout_mask((4, 4, 6, 6), seed, step, P_DROP) for step in (0, 1)]
    assert (masks[0] != masks[1]).any()
    lab = torch.tensor(labels)

    def step_loss(P, B, s):
        logits, c = forward(P, B, x, masks[s])
        return F.cross_entropy(logits, lab), c

    loss, c1 = step_loss(P, B, 0)
    grads = dict(zip(params, torch.autograd.grad(loss, [P[n] for n in params])))
    run1 = running(B, c1)
    # PyTorch's module-side running_var: the unbiased variance (documented).
    torch_rv = (B["bn.running_var"].numpy() * 0.9
                + c1.detach().numpy().astype(np.float64).var(axis=(0, 2, 3), ddof=1) * 0.1)

    opt = torch.optim.AdamW([P[n] for n in params], lr=LR, betas=BETAS, eps=ADAM_EPS, weight_decay=WD)
    opt.zero_grad()
    loss_a, _ = step_loss(P, B, 0)
    loss_a.backward()
    opt.step()
    after = {n: P[n].detach().numpy().copy() for n in params}
    B2 = {n: torch.tensor(v) for n, v in run1.items()}
    opt.zero_grad()
    loss2, c2 = step_loss(P, B2, 1)
    loss2.backward()
    opt.step()
    after2 = {n: P[n].detach().numpy().copy() for n in params}
    run2 = running(B2, c2)

    t = os.path.join(a.out, "train")
    for f in os.listdir(t):
        os.remove(os.path.join(t, f))
    np.save(os.path.join(t, "x.npy"), x.numpy())
    np.save(os.path.join(t, "labels.npy"), labels)
    np.save(os.path.join(t, "loss.npy"), np.asarray(loss.item(), np.float32))
    np.save(os.path.join(t, "loss_step2.npy"), np.asarray(loss2.item(), np.float32))
    names = {}
    for prefix, values in (("grad_", {n: g.numpy() for n, g in grads.items()}),
                           ("adamw_", after), ("adamw2_", after2), ("running_", run1),
                           ("running2_", run2)):
        for n, v in values.items():
            fn = prefix + escape(n) + ".npy"
            names[fn] = n
            np.save(os.path.join(t, fn), np.asarray(v, np.float32))
    with open(os.path.join(t, "names.json"), "w") as f:
        json.dump(names, f, indent=1, sort_keys=True)
        f.write("\n")
    reference = {
        "model": "model.onnx", "inputs": ["x"], "output": "logits", "loss": "cross-entropy",
        "labels": "labels", "optimizer": {"kind": "adamw", "lr": LR, "betas": list(BETAS),
                                          "eps": ADAM_EPS, "weight_decay": WD, "steps": 2},
        "dropout": {"ratio": P_DROP, "seed": "splitmix64(0) = %#x" % seed,
                    "dropped_step1": int((~masks[0]).sum()), "dropped_step2": int((~masks[1]).sum()),
                    "elements": int(masks[0].size)},
        "loss_value": float(loss.item()), "loss_step2_value": float(loss2.item()),
        "running_var_after_step1": {"onnx_population": run1["bn.running_var"].tolist(),
                                    "pytorch_module_unbiased": torch_rv.tolist()},
        "forward_check_vs_module": err,
    }
    with open(os.path.join(t, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    print("loss %.6f, step 2 %.6f; dropped %d and %d of %d; model %d bytes"
          % (loss.item(), loss2.item(), reference["dropout"]["dropped_step1"],
             reference["dropout"]["dropped_step2"], masks[0].size, os.path.getsize(path)))


if __name__ == "__main__":
    main()
