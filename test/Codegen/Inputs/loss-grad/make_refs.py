#!/usr/bin/env python3
"""Writes the inputs and PyTorch autograd references of loss-gradients.mlir
(test/Codegen/loss-gradients.test) next to this script:
input_<i>.npy in the function's argument order, output_<i>.npy in its result
order. Needs PyTorch (Debian's python3-torch 1.13); the test itself only
reads the committed .npy files.

    /usr/bin/python3 test/Codegen/Inputs/loss-grad/make_refs.py
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261201)

N, C, D = 3, 5, 2
x = (rng.standard_normal((N, C, D)) * 3).astype(np.float32)
labels = np.array([[0, 1], [4, 2], [1, 3]], np.int64)  # class 1 is ignored below
labels32 = labels.astype(np.int32)
weight = rng.uniform(0.5, 2.0, C).astype(np.float32)
dy = np.array(0.7, np.float32)
dy_none = rng.standard_normal((N, D)).astype(np.float32)
labels_ignored = np.ones((N, D), np.int64)  # every position ignored
inputs = [x, labels, labels32, weight, dy, dy_none, labels_ignored]

# References in float64 from the float32 inputs.
NO_IGNORE = -100  # PyTorch's default; no label equals it


def t(a, grad=False):
    return torch.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a,
                        requires_grad=grad)


def sce_grad(lab, w, ii, reduction, g):
    xs = t(x, True)
    loss = F.cross_entropy(xs, t(lab), weight=None if w is None else t(w),
                           ignore_index=ii, reduction=reduction)
    loss.backward(t(g))
    return loss.detach().numpy(), xs.grad.numpy()


def nll_grad(lab, w, ii, reduction, g):
    lp = t(F.log_softmax(t(x), dim=1).numpy(), True)
    loss = F.nll_loss(lp, t(lab).long(), weight=None if w is None else t(w),
                      ignore_index=ii, reduction=reduction)
    loss.backward(t(g))
    return lp.grad.numpy()


loss_mean, g0 = sce_grad(labels, weight, 1, "mean", dy)
_, g1 = sce_grad(labels, None, NO_IGNORE, "sum", dy)
_, g2 = sce_grad(labels, weight, NO_IGNORE, "none", dy_none)
g3 = nll_grad(labels, weight, 1, "mean", dy)
g4 = nll_grad(labels, None, NO_IGNORE, "none", dy_none)
g5 = nll_grad(labels32, None, NO_IGNORE, "sum", dy)
loss_ignored, g6 = sce_grad(labels_ignored, None, 1, "mean", dy)
outputs = [loss_mean, g0, g1, g2, g3, g4, g5, loss_ignored, g6]

for i, a in enumerate(inputs):
    np.save(os.path.join(here, "input_%d.npy" % i), a)
for i, a in enumerate(outputs):
    np.save(os.path.join(here, "output_%d.npy" % i), np.asarray(a, np.float32))
    print("output_%d" % i, np.asarray(a).shape, np.asarray(a).ravel()[:4])
