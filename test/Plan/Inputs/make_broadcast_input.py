"""Writes a model y = x + t with a batch input x [8, 256] and an input t
[1, 256] without the batch (broadcast to every row): input-memory.test."""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 256])
t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 256])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 256])
graph = helper.make_graph([helper.make_node("Add", ["x", "t"], ["y"], name="/add")],
                          "broadcast", [x, t], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          sys.argv[1])
