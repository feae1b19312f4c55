#!/usr/bin/env python3
"""Training-mode Dropout end to end on the CPU backend, against masks from the
independent Philox4x32-10 of test/lib/philox.py (checked against Random123's
known answers) and numpy float32 arithmetic; never against HetPar's output.

  check-dropout.py BIN_DIR WORK_DIR

Models (built here with onnx.helper, opset 17):
  train:     loss = ReduceSum(Dropout(X, 0.3, true) * R), X and R [64, 64]
             initializers (trained), ratio and training_mode Constant nodes;
  inference: (Y, mask) = Dropout(x, 0.5, true, seed=123) of an input x [3, 50],
             compiled for inference.
Checks, each printed as one line "ok: ..." (or "FAIL: ..." and exit 1):
  1. --optimizer none: dX == R * mask / float32(0.7) and dR == X * mask /
     float32(0.7) exactly, mask = Philox(seed splitmix64(0), step 0); the
     dropped fraction within 5 standard deviations of 0.3;
  2. --seed 5: the mask of splitmix64(5) instead;
  3. --optimizer sgd --lr 1, one step, then one resumed step: the weights equal
     numpy's X - dX (exact in float32) with step 0's mask, then step 1's (a new
     mask: they differ), so the step counter drives the mask across a resume;
  4. inference: mask == Philox(seed 123, step 0), Y == x * mask / 0.5 exactly,
     and a second run gives the same bytes;
  6. ratio 0 in training mode (PyTorch exports nn.Dropout(p=0.0) so): the
     identity, --optimizer none: dX == R and dR == X exactly;
  5. --grad-accumulation-steps 2: the two microbatches of step 1 draw the
     masks of counters 0 and 1 (step * 2 + microbatch), and the SGD update
     applies the mean of their gradients, exactly.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import philox  # noqa: E402

FAILED = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        FAILED.append(what)


def run(*cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s\n%s%s" % (" ".join(map(str, cmd)), p.stdout, p.stderr))
    return p.stdout


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    dt = {"F32": np.float32, "I64": np.int64}
    return {k: np.frombuffer(data[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]],
                             dt[t["dtype"]]).reshape(t["shape"]) for k, t in header.items()}


def scalar_const(name, value, dtype):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(value, dtype), name))


def train_model(path, X, R, ratio=0.3):
    nodes = [scalar_const("ratio", ratio, np.float32), scalar_const("training", True, np.bool_),
             helper.make_node("Dropout", ["X", "ratio", "training"], ["Y"]),
             helper.make_node("Mul", ["Y", "R"], ["YR"]),
             helper.make_node("ReduceSum", ["YR"], ["loss"], keepdims=0)]
    g = helper.make_graph(nodes, "dropout_train", [],
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                          initializer=[numpy_helper.from_array(X, "X"),
                                       numpy_helper.from_array(R, "R")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def inference_model(path):
    nodes = [scalar_const("ratio", 0.5, np.float32), scalar_const("training", True, np.bool_),
             helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"], seed=123)]
    g = helper.make_graph(nodes, "dropout_inference",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 50])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 50]),
                           helper.make_tensor_value_info("mask", TensorProto.BOOL, [3, 50])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def main():
    bin_dir, work = sys.argv[1:3]
    compile_, hrun = os.path.join(bin_dir, "hetpar-compile"), os.path.join(bin_dir, "hetpar-run")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((64, 64)).astype(np.float32)
    R = rng.standard_normal((64, 64)).astype(np.float32)
    keep = np.float32(1) - np.float32(0.3)
    model = os.path.join(work, "train.onnx")
    train_model(model, X, R)

    # 1 and 2: the gradients of one step, no optimizer.
    for seed in (0, 5):
        out = os.path.join(work, "grads-seed%d" % seed)
        run(compile_, model, "--mode", "training", "--loss", "output", "--optimizer", "none",
            "--seed", seed, "--targets", "cpu", "-o", out)
        run(hrun, out, "--backend", "cpu", "--outputs", out + "-out")
        names = [o["name"] for o in json.load(open(os.path.join(out, "manifest.json")))["devices"][0]["outputs"]]
        got = {n: np.load(os.path.join(out + "-out", "output_%d.npy" % i)) for i, n in enumerate(names)}
        mask = philox.dropout_mask(X.shape, philox.splitmix64(seed), 0, 0.3)
        check(np.array_equal(got["X.grad"], R * mask / keep),
              "seed %d: dX == R * mask / (1 - 0.3) exactly (Philox mask of step 0)" % seed)
        check(np.array_equal(got["R.grad"], X * mask / keep),
              "seed %d: dR == Dropout(X) == X * mask / (1 - 0.3) exactly" % seed)
        loss = float(np.sum((X * mask / keep).astype(np.float64) * R))
        check(abs(float(got["loss"]) - loss) <= 1e-4 * max(1.0, abs(loss)),
              "seed %d: loss %.6f (numpy %.6f)" % (seed, float(got["loss"]), loss))
        dropped = float(1.0 - mask.mean())
        bound = 5 * np.sqrt(0.3 * 0.7 / mask.size)
        check(abs(dropped - 0.3) < bound and abs(float((got["X.grad"] == 0).mean()) - dropped) < 1e-3,
              "seed %d: dropped fraction %.4f within %.4f of 0.3" % (seed, dropped, bound))

    # 3: two SGD steps (lr 1), the second one resumed.
    out = os.path.join(work, "sgd")
    run(compile_, model, "--mode", "training", "--loss", "output", "--optimizer", "sgd", "--lr", "1",
        "--targets", "cpu", "-o", out)
    data = os.path.join(work, "empty-data")
    os.makedirs(data, exist_ok=True)
    run(hrun, out, "--backend", "cpu", "--train", "--data", data, "--steps", "1",
        "--checkpoint", os.path.join(work, "ck1"))
    run(hrun, out, "--backend", "cpu", "--train", "--data", data, "--steps", "1",
        "--resume", os.path.join(work, "ck1"), "--checkpoint", os.path.join(work, "ck2"))
    seed = philox.splitmix64(0)
    x, r = X, R
    for step in (1, 2):
        mask = philox.dropout_mask(X.shape, seed, step - 1, 0.3)
        x, r = x - r * mask / keep, r - x * mask / keep
        ck = read_safetensors(os.path.join(work, "ck%d" % step, "checkpoint.safetensors"))
        check(np.array_equal(ck["X"], x) and np.array_equal(ck["R"], r) and int(ck["hetpar.step"]) == step,
              "step %d: X and R equal numpy's SGD update with step %d's mask exactly" % (step, step - 1))
    m0 = philox.dropout_mask(X.shape, seed, 0, 0.3)
    m1 = philox.dropout_mask(X.shape, seed, 1, 0.3)
    check(float((m0 != m1).mean()) > 0.3, "steps 1 and 2 drew different masks (%.0f%% of the "
          "elements differ)" % (100 * float((m0 != m1).mean())))

    # 5: gradient accumulation over 2 microbatches (the model has no inputs:
    # both microbatches see the same X and R): each draws its own mask, the
    # counters step * 2 + microbatch = 0 and 1, and the SGD step (lr 1) applies
    # the mean of the two gradients.
    out = os.path.join(work, "accum")
    run(compile_, model, "--mode", "training", "--loss", "output", "--optimizer", "sgd", "--lr", "1",
        "--grad-accumulation-steps", "2", "--targets", "cpu", "-o", out)
    run(hrun, out, "--backend", "cpu", "--train", "--data", data, "--steps", "1",
        "--checkpoint", os.path.join(work, "ck-accum"))
    ck = read_safetensors(os.path.join(work, "ck-accum", "checkpoint.safetensors"))
    gx = ((R * m0 / keep) + (R * m1 / keep)) * np.float32(0.5)
    gr = ((X * m0 / keep) + (X * m1 / keep)) * np.float32(0.5)
    check(np.array_equal(ck["X"], X - gx) and np.array_equal(ck["R"], R - gr),
          "accumulation: microbatches 1 and 2 of step 1 drew the masks of counters 0 and 1; "
          "X and R equal numpy's SGD update with their mean gradient exactly")

    # 6: ratio 0 drops nothing: the gradients of the identity.
    model0 = os.path.join(work, "train-ratio0.onnx")
    train_model(model0, X, R, ratio=0.0)
    out = os.path.join(work, "grads-ratio0")
    run(compile_, model0, "--mode", "training", "--loss", "output", "--optimizer", "none",
        "--targets", "cpu", "-o", out)
    run(hrun, out, "--backend", "cpu", "--outputs", out + "-out")
    names = [o["name"] for o in json.load(open(os.path.join(out, "manifest.json")))["devices"][0]["outputs"]]
    got = {n: np.load(os.path.join(out + "-out", "output_%d.npy" % i)) for i, n in enumerate(names)}
    check(np.array_equal(got["X.grad"], R) and np.array_equal(got["R.grad"], X),
          "ratio 0 in training mode: dX == R and dR == X exactly (the identity)")

    # 4: inference compile of a seeded Dropout with its mask as an output.
    model = os.path.join(work, "inference.onnx")
    inference_model(model)
    out = os.path.join(work, "inference")
    run(compile_, model, "--targets", "cpu", "-o", out)
    xin = rng.standard_normal((3, 50)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), xin)
    outs = []
    for k in range(2):
        run(hrun, out, "--backend", "cpu", "--inputs", os.path.join(work, "x.npy"),
            "--outputs", os.path.join(work, "inference-out%d" % k))
        outs.append([np.load(os.path.join(work, "inference-out%d" % k, "output_%d.npy" % i))
                     for i in range(2)])
    y, mask = outs[0]
    want = philox.dropout_mask((3, 50), 123, 0, 0.5)
    check(mask.dtype == np.bool_ and np.array_equal(mask, want),
          "inference: the mask is Philox(seed 123, step 0)")
    check(np.array_equal(y, xin * want / np.float32(0.5)), "inference: y == x * mask / 0.5 exactly")
    check(all(np.array_equal(a, b) and a.tobytes() == b.tobytes() for a, b in zip(outs[0], outs[1])),
          "inference: a second run gives the same bytes")
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
