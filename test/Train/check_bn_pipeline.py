#!/usr/bin/env python3
"""Checks a pipeline training run of test/Train/Inputs/bn-dropout (Conv ->
training-mode BatchNorm -> ReLU -> Dropout -> mean -> Linear) against PyTorch
autograd: SGD with momentum over STEPS steps, each step MICROBATCHES
microbatches of the batch (accumulated, as a pipeline's microbatches are).

  check_bn_pipeline.py MODEL.onnx DATA_DIR LOSS_LOG CK1,CK2,... STEPS MICROBATCHES LR MOMENTUM

Reference semantics, as one device accumulating the microbatches (and
PyTorch's gradient accumulation loop) has them:
  * microbatch k of step t (0-based) normalizes with its own batch statistics
    and updates the running statistics after microbatch k - 1 did (ONNX's
    BatchNormalization: running * 0.9 + statistic * 0.1, population
    variance);
  * its Dropout draws the mask of counter t * MICROBATCHES + k
    (test/lib/philox.py, an independent Philox4x32-10);
  * the step's loss and gradient are the mean over the microbatches of each
    microbatch's mean cross-entropy;
  * torch.optim.SGD(lr, momentum) updates the parameters once per step.
Every step reads the whole data set (its batch is the data's rows). The
parameters come from the ONNX file's initializers (the exported module's);
the forward is test/Train/make_bn_dropout_case.py's functional one, which that
script checks against the module. Prints one line per check and exits 1 on a
mismatch.
"""
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import philox  # noqa: E402
from safetensors_reader import read_checkpoints  # noqa: E402

P_DROP, MOMENTUM_BN, EPS = 0.25, 0.1, 1e-5  # make_bn_dropout_case.py's network
PARAMS = ["conv.weight", "bn.weight", "bn.bias", "fc.weight", "fc.bias"]
BUFFERS = ["bn.running_mean", "bn.running_var"]


def microbatch_loss(P, x, labels, mask):
    c = F.conv2d(x, P["conv.weight"], None, padding=1)
    y = F.batch_norm(c, None, None, P["bn.weight"], P["bn.bias"], training=True, eps=EPS)
    y = torch.relu(y) * torch.tensor(mask, dtype=torch.float32) / (1.0 - P_DROP)
    logits = F.linear(y.mean(dim=(2, 3)), P["fc.weight"], P["fc.bias"])
    return F.cross_entropy(logits, labels), c.detach().numpy().astype(np.float64)


def main():
    model, data, log, cks = sys.argv[1:5]
    steps, m = int(sys.argv[5]), int(sys.argv[6])
    lr, momentum = float(sys.argv[7]), float(sys.argv[8])
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    P = {n: torch.tensor(inits[n], requires_grad=True) for n in PARAMS}
    B = {n: inits[n].astype(np.float64) for n in BUFFERS}
    x = torch.tensor(np.load(os.path.join(data, "x.npy")))
    labels = torch.tensor(np.load(os.path.join(data, "labels.npy")))
    rows = x.shape[0] // m
    seed = philox.splitmix64(0)  # program seed 0, the first unseeded Dropout
    opt = torch.optim.SGD([P[n] for n in PARAMS], lr=lr, momentum=momentum)
    losses = []
    for t in range(steps):
        opt.zero_grad()
        total = 0.0
        for k in range(m):
            xs, ls = x[k * rows:(k + 1) * rows], labels[k * rows:(k + 1) * rows]
            shape = (rows, P["conv.weight"].shape[0]) + tuple(xs.shape[2:])
            mask = philox.dropout_mask(shape, seed, t * m + k, P_DROP)
            loss, c = microbatch_loss(P, xs, ls, mask)
            (loss / m).backward()
            total += loss.item() / m
            keep = 1.0 - MOMENTUM_BN
            B["bn.running_mean"] = B["bn.running_mean"] * keep + c.mean(axis=(0, 2, 3)) * MOMENTUM_BN
            B["bn.running_var"] = B["bn.running_var"] * keep + c.var(axis=(0, 2, 3)) * MOMENTUM_BN
        opt.step()
        losses.append(total)

    ok = True
    got = [json.loads(line)["loss"] for line in open(log) if '"loss"' in line]
    err = max(abs(a - b) / abs(b) for a, b in zip(got, losses)) if len(got) == steps else float("inf")
    print("losses: %s (largest relative error %.2g)" % ("match" if err < 1e-5 else "MISMATCH", err))
    ok &= err < 1e-5
    ck = read_checkpoints(cks.split(","))
    expected = {n: P[n].detach().numpy() for n in PARAMS}
    expected.update({n + ".momentum_buffer": opt.state[P[n]]["momentum_buffer"].numpy() for n in PARAMS})
    expected.update({n: v.astype(np.float32) for n, v in B.items()})
    worst = 0.0
    for n, want in expected.items():
        have = ck[n]
        if have.shape != want.shape or not np.allclose(have, want, rtol=1e-4, atol=1e-5):
            print("MISMATCH %s: largest difference %.3g" % (n, float(np.abs(have - want).max())))
            ok = False
        worst = max(worst, float(np.abs(have - want).max()))
    print("checkpoint: %d tensors %s (largest difference %.2g)"
          % (len(expected), "match" if ok else "differ", worst))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
