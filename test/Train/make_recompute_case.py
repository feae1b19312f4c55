#!/usr/bin/env python3
"""Writes the network of test/Train/recompute.test: three residual layers
(/h.0 .. /h.2: MatMul, training-mode Dropout, Tanh, Add) and a classifier,
with node names that give three layers (hetpar's layerOf), and a batch.

  make_recompute_case.py OUT_DIR

OUT_DIR/model.onnx (x [8, 16] float32 -> logits [8, 4]), OUT_DIR/x.npy,
OUT_DIR/labels.npy (int64 [8])."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH, BATCH, CLASSES, LAYERS = 16, 8, 4, 3


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(value, name))


def layer(i, x, inits, rng):
    p = "/h.%d" % i
    w = "h.%d.fc.weight" % i
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32), w))
    nodes = [
        helper.make_node("MatMul", [x, w], [p + "/fc/out"], name=p + "/fc/MatMul"),
        const(p + "/drop/ratio", np.array(0.3, np.float32)),
        const(p + "/drop/mode", np.array(True)),
        helper.make_node("Dropout", [p + "/fc/out", p + "/drop/ratio", p + "/drop/mode"],
                         [p + "/drop/out"], name=p + "/drop/Dropout"),
        helper.make_node("Tanh", [p + "/drop/out"], [p + "/act/out"], name=p + "/act/Tanh"),
        helper.make_node("Add", [p + "/act/out", x], [p + "/out"], name=p + "/Add"),
    ]
    return nodes, p + "/out"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    inits, nodes, x = [], [], "x"
    for i in range(LAYERS):
        n, x = layer(i, x, inits, rng)
        nodes += n
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((WIDTH, CLASSES)) / np.sqrt(WIDTH)).astype(np.float32),
        "head.weight"))
    nodes.append(helper.make_node("MatMul", [x, "head.weight"], ["logits"],
                                  name="/head/MatMul"))
    graph = helper.make_graph(
        nodes, "recompute",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [BATCH, CLASSES])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    np.save(os.path.join(out, "labels.npy"), rng.integers(0, CLASSES, BATCH).astype(np.int64))


if __name__ == "__main__":
    main()
