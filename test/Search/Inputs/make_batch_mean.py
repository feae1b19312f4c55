"""Writes OUT/batch-mean.onnx: x [8, 64] -> MatMul -> ReduceMean over axis 0
(the batch) -> [1, 64], an op that mixes the samples of the batch, so data
parallelism and microbatches cannot split it. Usage: make_batch_mean.py OUT;
run with /usr/bin/python3."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
w = numpy_helper.from_array(
    (np.random.default_rng(0).standard_normal((64, 64)) / 8).astype(np.float32), "w")
nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="/mm"),
         helper.make_node("ReduceMean", ["h"], ["y"], name="/mean", axes=[0])]
graph = helper.make_graph(
    nodes, "batch-mean", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
os.makedirs(out, exist_ok=True)
onnx.save(model, os.path.join(out, "batch-mean.onnx"))
