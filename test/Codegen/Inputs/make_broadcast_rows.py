"""Makes a model of fused elementwise kernels with broadcast operands, with
inputs and numpy's outputs.

Usage: make_broadcast_rows.py OUT_DIR

OUT_DIR/model.onnx, seven outputs:
  y0 = x [2, 3, 16] * r [2, 3, 1] * w [16]       (RMSNorm's scaling: rows of
       16, r read once per row, w along the row)
  y1 = Relu(a [2, 4, 5, 6] + b [4, 1, 1])        (a channel bias: rows of 30)
  y2 = s [2, 3, 16] + p [3, 16]                  (rows of 48, p from 0)
  y3 = u [5, 4] * v [5, 1]                       (rows of 4: too short, one
       iteration per element)
  y4 = Sigmoid(t [2, 1, 8, 12] + m [3, 1, 12])   (output [2, 3, 8, 12]:
       t broadcast over dim 1, m over dim 2: rows of 12)
  y5 = q [1, 12] - z [1, 1]                      (z a scalar to the kernel)
  y6 = BatchNormalization(bx [2, 1, 4, 4], bs, bb, bm, bv [1]) (inference;
       one channel, its parameters graph inputs: read once, not along the
       row of 32)
OUT_DIR/input_<k>.npy and OUT_DIR/output_<k>.npy: the inputs and numpy's
outputs (float64, rounded to float32), the reference the test compares
with. Needs Debian's python3-onnx and python3-numpy only.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
shapes = {"x": (2, 3, 16), "r": (2, 3, 1), "w": (16,), "a": (2, 4, 5, 6),
          "b": (4, 1, 1), "s": (2, 3, 16), "p": (3, 16), "u": (5, 4),
          "v": (5, 1), "t": (2, 1, 8, 12), "m": (3, 1, 12), "q": (1, 12),
          "z": (1, 1), "bx": (2, 1, 4, 4), "bs": (1,), "bb": (1,), "bm": (1,),
          "bv": (1,)}
vals = {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
vals["bv"] = np.abs(vals["bv"]) + 0.5  # a variance

nodes = [
    helper.make_node("Mul", ["x", "r"], ["xr"]),
    helper.make_node("Mul", ["xr", "w"], ["y0"]),
    helper.make_node("Add", ["a", "b"], ["ab"]),
    helper.make_node("Relu", ["ab"], ["y1"]),
    helper.make_node("Add", ["s", "p"], ["y2"]),
    helper.make_node("Mul", ["u", "v"], ["y3"]),
    helper.make_node("Add", ["t", "m"], ["tm"]),
    helper.make_node("Sigmoid", ["tm"], ["y4"]),
    helper.make_node("Sub", ["q", "z"], ["y5"]),
    helper.make_node("BatchNormalization", ["bx", "bs", "bb", "bm", "bv"], ["y6"]),
]
d = {k: v.astype(np.float64) for k, v in vals.items()}
refs = [
    d["x"] * d["r"] * d["w"],
    np.maximum(d["a"] + d["b"], 0),
    d["s"] + d["p"],
    d["u"] * d["v"],
    1 / (1 + np.exp(-(d["t"] + d["m"]))),
    d["q"] - d["z"],
    (d["bx"] - d["bm"][0]) / np.sqrt(d["bv"][0] + 1e-5) * d["bs"][0] + d["bb"][0],
]
inputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v)
          for k, v in shapes.items()]
outputs = [helper.make_tensor_value_info("y%d" % k, TensorProto.FLOAT,
                                         r.shape) for k, r in enumerate(refs)]
graph = helper.make_graph(nodes, "broadcast_rows", inputs, outputs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "model.onnx"))
for k, name in enumerate(shapes):
    np.save(os.path.join(out, "input_%d.npy" % k), vals[name])
for k, r in enumerate(refs):
    np.save(os.path.join(out, "output_%d.npy" % k), r.astype(np.float32))
