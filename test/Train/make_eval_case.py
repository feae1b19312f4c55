#!/usr/bin/env python3
"""Writes test/Train/Inputs/bn-dropout/eval/: held-out data for the conv +
BatchNorm + Dropout network of make_bn_dropout_case.py and PyTorch's
evaluation loss on it, for `hetpar-run --eval-data` (test/Train/bn-dropout.test).

The data: x.npy [10, 3, 6, 6] (standard normal) and labels.npy [10] (classes
0..4), from numpy's default_rng(7). At the program's batch of 4 that is two
whole batches; the last 2 samples do not fill one.

The reference (reference.json, "eval_loss_after_adamw1"): the network of
make_bn_dropout_case.Net with the weights PyTorch computed for AdamW step 1
(train/adamw_<param>.npy) and the running statistics after that step
(train/running_<buffer>.npy), in eval() mode under no_grad (BatchNorm
normalizes with the running statistics, Dropout is the identity), the mean of
F.cross_entropy over the two whole batches. Nothing here comes from HetPar.

Usage: /usr/bin/python3 test/Train/make_eval_case.py [--out DIR]
Needs numpy and torch 1.13.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_bn_dropout_case import Net  # noqa: E402

BATCH, SAMPLES, CLASSES = 4, 10, 5


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "Inputs", "bn-dropout", "eval"))
    args = ap.parse_args()
    train = os.path.join(HERE, "Inputs", "bn-dropout", "train")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((SAMPLES, 3, 6, 6)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=SAMPLES).astype(np.int64)

    net = Net()
    state = {}
    for name in ["conv.weight", "bn.weight", "bn.bias", "fc.weight", "fc.bias"]:
        state[name] = torch.from_numpy(np.load(os.path.join(train, "adamw_%s.npy" % name)))
    for name in ["bn.running_mean", "bn.running_var"]:
        state[name] = torch.from_numpy(np.load(os.path.join(train, "running_%s.npy" % name)))
    missing, unexpected = net.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"bn.num_batches_tracked"}, (missing, unexpected)
    net.eval()
    losses = []
    with torch.no_grad():
        for b in range(SAMPLES // BATCH):
            s = slice(b * BATCH, (b + 1) * BATCH)
            logits = net(torch.from_numpy(x[s]))
            losses.append(float(F.cross_entropy(logits, torch.from_numpy(labels[s]))))

    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "x.npy"), x)
    np.save(os.path.join(args.out, "labels.npy"), labels)
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump({"eval_loss_after_adamw1": float(np.mean(losses)),
                   "batch_losses": losses, "batch_size": BATCH,
                   "source": "make_eval_case.py: torch %s, Net.eval(), adamw_* weights, "
                             "running_* statistics" % torch.__version__}, f, indent=1)
        f.write("\n")
    print("wrote", args.out, "eval loss", float(np.mean(losses)))


if __name__ == "__main__":
    main()
