#!/usr/bin/env python3
"""make_bad_models.py OUTDIR: models code generation must refuse.
hardmax.onnx: a Hardmax node named 'my_hardmax' (an op without code generation);
custom.onnx: an op of a custom domain ('MyOp' in 'com.example')."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
hardmax = helper.make_graph(
    [helper.make_node("Hardmax", ["x"], ["y"], name="my_hardmax")],
    "bad", [x], [y])
onnx.save(helper.make_model(hardmax, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "hardmax.onnx"))
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
custom = helper.make_graph(
    [helper.make_node("MyOp", ["x"], ["z"], name="mine", domain="com.example")],
    "bad", [x], [z])
onnx.save(helper.make_model(custom, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.example", 1)]),
          os.path.join(out, "custom.onnx"))
