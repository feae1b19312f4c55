#!/usr/bin/env python3
"""make_bad_models.py OUTDIR: models code generation must refuse.
einsum.onnx: an Einsum node named 'my_einsum' (an op without code generation);
custom.onnx: an op of a custom domain ('MyOp' in 'com.example')."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])
einsum = helper.make_graph(
    [helper.make_node("Einsum", ["x"], ["y"], name="my_einsum", equation="ij->ji")],
    "bad", [x], [y])
onnx.save(helper.make_model(einsum, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "einsum.onnx"))
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
custom = helper.make_graph(
    [helper.make_node("MyOp", ["x"], ["z"], name="mine", domain="com.example")],
    "bad", [x], [z])
onnx.save(helper.make_model(custom, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.example", 1)]),
          os.path.join(out, "custom.onnx"))
