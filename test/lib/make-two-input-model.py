"""Writes a one-op model of two graph inputs x and s (inputs with the batch,
or without it, for the batch analysis' tests), with random inputs and
NumPy's result as the reference:

    make-two-input-model.py OUT OP XSHAPE SSHAPE
        (OP: Add, MatMul, ReluAdd or GatherAdd)

OUT/model.onnx computes y = OP(x, s), node '/op' (ReluAdd: Relu(x) + s, the
Relu node '/relu', so that a pipeline's stages read one input each;
GatherAdd: rows x (int64, in [0, 10)) of a constant table of 10 rows,
node '/gather', plus s);
OUT/inputs/input_0.npy and input_1.npy hold x and s,
OUT/reference/output_0.npy NumPy's y (a hand computation: x + s with
broadcasting, x @ s, max(x, 0) + s, or table[x] + s)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out, op = sys.argv[1], sys.argv[2]
xs, ss = ([int(d) for d in a.split("x")] for a in sys.argv[3:5])
rng = np.random.default_rng(0)
x = rng.standard_normal(xs).astype(np.float32)
s = rng.standard_normal(ss).astype(np.float32)
table = np.arange(10 * ss[-1], dtype=np.float32).reshape(10, ss[-1])
if op == "GatherAdd":
    x = rng.integers(0, 10, xs).astype(np.int64)
y = {"Add": np.add, "MatMul": np.matmul,
     "ReluAdd": lambda a, b: np.maximum(a, 0) + b,
     "GatherAdd": lambda a, b: table[a] + b}[op](x, s)
value = lambda name, a: helper.make_tensor_value_info(
    name, TensorProto.INT64 if a.dtype == np.int64 else TensorProto.FLOAT,
    list(a.shape))
initializers = []
if op == "GatherAdd":
    initializers = [helper.make_tensor("table", TensorProto.FLOAT, table.shape,
                                       table.flatten().tolist())]
    nodes = [helper.make_node("Gather", ["table", "x"], ["r"], name="/gather"),
             helper.make_node("Add", ["r", "s"], ["y"], name="/op")]
elif op == "ReluAdd":
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="/relu"),
             helper.make_node("Add", ["r", "s"], ["y"], name="/op")]
else:
    nodes = [helper.make_node(op, ["x", "s"], ["y"], name="/op")]
graph = helper.make_graph(nodes, "two-inputs", [value("x", x), value("s", s)],
                          [value("y", y)], initializer=initializers)
for d in ("inputs", "reference"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "model.onnx"))
np.save(os.path.join(out, "inputs", "input_0.npy"), x)
np.save(os.path.join(out, "inputs", "input_1.npy"), s)
np.save(os.path.join(out, "reference", "output_0.npy"), y)
