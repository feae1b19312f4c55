#!/usr/bin/env python3
"""Writes a two-layer perceptron with a training-mode Dropout between its
layers, and data for it, for test/Train/data-parallel.test (a data-parallel
replica must draw the masks one device draws for its rows) and
pipeline.test (each microbatch of a pipeline draws the masks of one device
accumulating them).

  make_dropout_mlp.py OUTDIR [BATCH]

OUTDIR/model.onnx: x float32 [BATCH (default 8), 8] -> MatMul (node 'mm1', W1 [8, 16]) ->
Dropout ('drop', ratio 0.3, training_mode true) -> MatMul ('mm2', W2 [16, 4])
-> logits [BATCH, 4]; weights from numpy default_rng(0). OUTDIR/data/x.npy
float32 [64, 8] and OUTDIR/data/labels.npy int64 [64] in [0, 4), from
default_rng(1).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((8, 16)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((16, 4)) * 0.3).astype(np.float32)
    ratio = np.array(0.3, np.float32)
    train = np.array(True)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
        helper.make_node("Dropout", ["h", "ratio", "training_mode"], ["d"], name="drop"),
        helper.make_node("MatMul", ["d", "W2"], ["logits"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes, "dropout_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 4])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2"),
         numpy_helper.from_array(ratio, "ratio"),
         numpy_helper.from_array(train, "training_mode")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    data = np.random.default_rng(1)
    np.save(os.path.join(out, "data", "x.npy"), data.standard_normal((64, 8)).astype(np.float32))
    np.save(os.path.join(out, "data", "labels.npy"), data.integers(0, 4, 64).astype(np.int64))


if __name__ == "__main__":
    main()
