"""Writes mlp10.onnx (10 layers of Gemm 16 -> 16 + Relu, a dynamic batch), an
input (8 x 16) and the output computed here with NumPy (x W^T + b, then max(0,
.) ten times): the model of the forced-plan end-to-end tests (10 layers over 3
pipeline stages). Deterministic (seed 0); run with /usr/bin/python3."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
nodes, inits = [], []
x = rng.standard_normal((8, 16)).astype(np.float32)
y = x
prev = "x"
for i in range(10):
    w = (rng.standard_normal((16, 16)) / 4).astype(np.float32)
    b = (rng.standard_normal(16) / 4).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
    nodes.append(helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"h{i}"],
                                  name=f"/layers.{i}/Gemm", transB=1))
    out = "y" if i == 9 else f"r{i}"
    nodes.append(helper.make_node("Relu", [f"h{i}"], [out], name=f"/layers.{i}/Relu"))
    prev = out
    y = np.maximum(y @ w.T + b, 0)
graph = helper.make_graph(
    nodes, "mlp10",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
here = os.path.dirname(os.path.abspath(__file__))
onnx.save(model, os.path.join(here, "mlp10.onnx"))
os.makedirs(os.path.join(here, "mlp10"), exist_ok=True)
np.save(os.path.join(here, "mlp10", "input_0.npy"), x)
np.save(os.path.join(here, "mlp10", "output_0.npy"), y.astype(np.float32))
