"""Writes a training model whose parameter X runs through ONNX's tanh-form
Gelu (opset 20) far into both tails: loss = ReduceSum(Gelu(X) * R), with
X = [-300, -20, -5, -1, 0.5, 2, 5, 20, 300] and R = [1, 2, 3, 1, 2, 3, 1, 2,
3] as initializers (both trained), no graph inputs. In float16, x^2 is inf
from |x| = 256, and the gradient rule must not turn that into NaN (which
would skip every step of dynamic loss scaling).

Usage: /usr/bin/python3 make_gelu_tails.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = np.array([-300, -20, -5, -1, 0.5, 2, 5, 20, 300], np.float32)
r = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3], np.float32)
nodes = [helper.make_node("Gelu", ["X"], ["Y"], approximate="tanh"),
         helper.make_node("Mul", ["Y", "R"], ["P"]),
         helper.make_node("ReduceSum", ["P"], ["loss"], keepdims=0)]
graph = helper.make_graph(
    nodes, "gelu_tails", [],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    initializer=[numpy_helper.from_array(x, "X"),
                 numpy_helper.from_array(r, "R")])
model = helper.make_model(graph,
                          opset_imports=[helper.make_opsetid("", 20)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
