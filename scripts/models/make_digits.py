#!/usr/bin/env python3
"""Writes scikit-learn's bundled digits data set (8x8 images, 10 classes; no network:
load_digits() reads the copy shipped in Debian's python3-sklearn) as a HetPar training
data folder:

    OUTDIR/train/x.npy       float32 [1440, 64], pixel values / 16, in [0, 1]
    OUTDIR/train/labels.npy  int64   [1440], classes 0..9
    OUTDIR/test/x.npy        float32 [357, 64]
    OUTDIR/test/labels.npy   int64   [357]

The 1797 samples are shuffled once with a fixed seed (numpy default_rng(0)); the first
1440 (= 45 batches of 32, 90 of 16) are the training split, the other 357 the test split.
`x` is the graph input name of examples/models/digits-mlp/model.onnx.

Usage: python3 scripts/models/make_digits.py OUTDIR
"""
import os
import sys

import numpy as np

N_TRAIN = 1440


def load():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    x, y = x[perm], y[perm]
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:], y[N_TRAIN:])


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out = sys.argv[1]
    for split, (x, y) in zip(("train", "test"), load()):
        os.makedirs(os.path.join(out, split), exist_ok=True)
        np.save(os.path.join(out, split, "x.npy"), np.ascontiguousarray(x))
        np.save(os.path.join(out, split, "labels.npy"), np.ascontiguousarray(y))
        print(f"{split}: {len(y)} samples")


if __name__ == "__main__":
    main()
