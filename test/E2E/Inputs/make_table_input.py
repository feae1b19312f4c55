"""Writes OUT/model.onnx, y = x @ s with x [8, 8] the batch and s [8, 8] a
table every sample reads (the same extent in dimension 0: the batch analysis
takes it for a batch input unless --batch-dim s=none says otherwise), with
OUT/inputs/input_{0,1}.npy and the reference OUT/reference/output_0.npy
(NumPy's product): batch-dim-none.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
os.makedirs(os.path.join(out, "reference"), exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])
s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 8])
graph = helper.make_graph([helper.make_node("MatMul", ["x", "s"], ["y"], name="/mix")],
                          "table", [x, s], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "model.onnx"))
rng = np.random.default_rng(0)
xv = rng.standard_normal((8, 8)).astype(np.float32)
sv = rng.standard_normal((8, 8)).astype(np.float32)
np.save(os.path.join(out, "inputs", "input_0.npy"), xv)
np.save(os.path.join(out, "inputs", "input_1.npy"), sv)
np.save(os.path.join(out, "reference", "output_0.npy"), xv @ sv)
