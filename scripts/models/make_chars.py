#!/usr/bin/env python3
"""Makes a character-level (byte-level) language-modelling data set from a text file,
for HetPar training (examples/models/char-gpt):

    OUTDIR/input_ids.npy  int64 [N, SEQ]  token ids of bytes t .. t+SEQ-1
    OUTDIR/labels.npy     int64 [N, SEQ]  the next bytes, t+1 .. t+SEQ
    OUTDIR/vocab.json     {"bytes": [b0, b1, ...], "size": V}: id i is byte b_i

The vocabulary is the sorted set of the bytes of the file (so V depends on the file;
for /usr/share/common-licenses/GPL-3, which ships with every Debian system (35149
bytes), V = 76 and an untrained model's cross-entropy is about ln(76) = 4.3307;
N = 1098 at SEQ 32).
Samples are the consecutive non-overlapping windows starting at 0, SEQ, 2 SEQ, ...
(N = (len - 1) // SEQ); nothing is shuffled. With --eval-windows K the last K
windows go to OUTDIR/eval/ (input_ids.npy, labels.npy: held-out text for
hetpar-run --eval-data, with the same vocabulary) instead.

Usage: python3 scripts/models/make_chars.py TEXTFILE OUTDIR [--seq 32] [--eval-windows K]
"""
import argparse
import json
import os

import numpy as np


def vocab_of(data):
    return sorted(set(data))


def make(data, seq):
    vocab = vocab_of(data)
    lut = np.zeros(256, np.int64)
    lut[vocab] = np.arange(len(vocab))
    ids = lut[np.frombuffer(data, np.uint8)]
    n = (len(ids) - 1) // seq
    x = ids[:n * seq].reshape(n, seq)
    y = ids[1:n * seq + 1].reshape(n, seq)
    return x, y, vocab


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("textfile")
    ap.add_argument("outdir")
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--eval-windows", type=int, default=0,
                    help="the last K windows go to OUTDIR/eval/ (held out)")
    a = ap.parse_args()
    with open(a.textfile, "rb") as f:
        data = f.read()
    x, y, vocab = make(data, a.seq)
    if not 0 <= a.eval_windows < x.shape[0]:
        ap.error("--eval-windows must be in [0, %d)" % x.shape[0])
    if a.eval_windows:
        held = os.path.join(a.outdir, "eval")
        os.makedirs(held, exist_ok=True)
        np.save(os.path.join(held, "input_ids.npy"), x[-a.eval_windows:])
        np.save(os.path.join(held, "labels.npy"), y[-a.eval_windows:])
        x, y = x[:-a.eval_windows], y[:-a.eval_windows]
    os.makedirs(a.outdir, exist_ok=True)
    np.save(os.path.join(a.outdir, "input_ids.npy"), x)
    np.save(os.path.join(a.outdir, "labels.npy"), y)
    with open(os.path.join(a.outdir, "vocab.json"), "w") as f:
        json.dump({"bytes": vocab, "size": len(vocab)}, f)
        f.write("\n")
    print(f"{x.shape[0]} samples of {a.seq} tokens, vocabulary {len(vocab)} (ln V = {np.log(len(vocab)):.4f})"
          + (f"; {a.eval_windows} held out" if a.eval_windows else ""))


if __name__ == "__main__":
    main()
