#!/usr/bin/env python3
"""An initializer holding -inf (an exporter's folded mask) is a constant, not
a parameter, as PyTorch keeps such a tensor in a buffer: checked end to end
on the CPU backend against numpy.

  check_masked_logits.py BIN_DIR WORK_DIR

Model (onnx.helper, opset 17): logits = MatMul(x [8, 3], W [3, 3]) + M, with
M [1, 3] = [0, -inf, 0] an initializer (class 1 masked); cross-entropy
against labels in {0, 2}; SGD, lr 0.1, no momentum, no weight decay, 2 steps
on the same batch. Prints "ok: ..." per check (or "FAIL: ..." and exits 1):
  1. hetpar-compile says M is kept constant;
  2. both steps' losses equal numpy's (1e-5 relative) and are finite (M was
     trained before: 0 * -inf in the update made it NaN, and step 2's loss
     NaN);
  3. W after 2 steps equals numpy's W - lr * dW twice (1e-6), dW =
     x^T (softmax(logits) - onehot(labels)) / 8.
"""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

FAILED = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        FAILED.append(what)


def numpy_steps(x, w, m, labels, lr, steps):
    losses = []
    for _ in range(steps):
        z = x @ w + m
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        losses.append(float(-np.mean(np.log(p[np.arange(len(labels)), labels]))))
        onehot = np.eye(3)[labels]
        w = w - lr * (x.T @ (p - onehot) / len(labels))
    return losses, w


def main():
    bin_dir, work = sys.argv[1:3]
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    w = (rng.standard_normal((3, 3)) * 0.5).astype(np.float32)
    m = np.array([[0.0, -np.inf, 0.0]], np.float32)
    labels = np.array([0, 2, 2, 0, 2, 0, 0, 2], np.int64)
    np.save(os.path.join(work, "data", "x.npy"), x)
    np.save(os.path.join(work, "data", "labels.npy"), labels)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"], name="mm"),
             helper.make_node("Add", ["xw", "M"], ["logits"], name="mask")]
    graph = helper.make_graph(
        nodes, "masked_logits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(m, "M")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(work, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())

    out = os.path.join(work, "prog")
    p = subprocess.run([os.path.join(bin_dir, "hetpar-compile"), path, "--mode", "training",
                        "--loss", "cross-entropy", "--labels", "labels", "--optimizer", "sgd",
                        "--lr", "0.1", "--targets", "cpu", "-o", out],
                       capture_output=True, text=True)
    check(p.returncode == 0 and "initializer 'M' holds an infinity or a NaN (a mask): kept "
          "constant, not trained" in p.stderr, "M is kept constant (%s)" % p.stderr.strip()[:200])
    log = os.path.join(work, "loss.jsonl")
    p = subprocess.run([os.path.join(bin_dir, "hetpar-run"), out, "--backend", "cpu", "--train",
                        "--data", os.path.join(work, "data"), "--steps", "2", "--loss-log", log,
                        "--checkpoint", os.path.join(work, "ck")],
                       capture_output=True, text=True)
    got = [json.loads(l)["loss"] for l in open(log)] if os.path.exists(log) else []
    want, w2 = numpy_steps(x.astype(np.float64), w.astype(np.float64), m.astype(np.float64),
                           labels, 0.1, 2)
    check(p.returncode == 0 and len(got) == 2 and
          all(g is not None and abs(g - r) <= 1e-5 * abs(r) for g, r in zip(got, want)),
          "losses %s equal numpy's %s" % (got, want))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from safetensors_reader import read_checkpoints
    ck = read_checkpoints([os.path.join(work, "ck", "checkpoint.safetensors")]) \
        if p.returncode == 0 else {}
    check("W" in ck and "M" not in ck and np.max(np.abs(ck["W"] - w2)) <= 1e-6,
          "W after 2 steps equals numpy's SGD (M is no state of the checkpoint)")
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
