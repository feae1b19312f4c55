#!/usr/bin/python3
"""Writes the malformed ONNX models that test/Import/bad-input.test feeds to the tools.

Each file breaks exactly one rule. Run from this folder with Debian's python3-onnx:
    python3 make_bad_models.py
The outputs are committed; tests never run this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def model(nodes, inputs, outputs, initializers=(), opsets=OPSET, value_info=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers),
                              value_info=list(value_info))
    m = helper.make_model(graph, opset_imports=opsets, producer_name="make_bad_models")
    m.ir_version = 8
    return m


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def save(name, m):
    with open(name, "wb") as f:
        f.write(m.SerializeToString())


def valid():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2, 3])], [vi("y", [2, 3])])


def main():
    # Not a model at all.
    open("empty.onnx", "wb").close()
    with open("not-protobuf.onnx", "wb") as f:
        f.write(b"\xff\xff\xff\xff this is not a protocol buffer \x00\x01")
    data = valid().SerializeToString()
    with open("truncated.onnx", "wb") as f:
        f.write(data[: len(data) // 2])

    # Graph structure.
    save("cycle.onnx", model(
        [helper.make_node("Relu", ["b"], ["a"], name="first"),
         helper.make_node("Relu", ["a"], ["b"], name="second"),
         helper.make_node("Add", ["a", "x"], ["y"], name="add")],
        [vi("x", [2])], [vi("y", [2])]))
    save("missing-producer.onnx", model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
        [vi("x", [2])], [vi("y", [2])]))
    save("two-producers.onnx", model(
        [helper.make_node("Relu", ["x"], ["t"], name="relu"),
         helper.make_node("Neg", ["x"], ["t"], name="neg"),
         helper.make_node("Identity", ["t"], ["y"], name="id")],
        [vi("x", [2])], [vi("y", [2])]))
    save("unknown-domain.onnx", model(
        [helper.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="com.example")],
        [vi("x", [2])], [vi("y", [2])]))
    save("shape-mismatch.onnx", model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")],
        [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", [2, 5])]))
    save("negative-dim.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2, -3])], [vi("y", [2, 3])]))
    big = 1 << 40
    w = onnx.TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([big, big])  # 2^80 elements: overflows 64 bits
    w.raw_data = b""
    save("overflow-dim.onnx", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2])], [vi("y", [2])], initializers=[w]))
    save("reshape-two-minus-one.onnx", model(
        [helper.make_node("Constant", [], ["s"], name="shape",
                          value=numpy_helper.from_array(np.array([-1, -1], np.int64))),
         helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")],
        [vi("x", [2, 6])], [vi("y", [3, 4])]))

    # Names with control characters are escaped in messages.
    save("weird-name.onnx", model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mat\nmul\x01")],
        [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", [2, 5])]))
    # ONNX's own inference rejects an operator HetPar does not model.
    save("topk-too-large.onnx", model(
        [helper.make_node("Constant", [], ["k"], name="k",
                          value=numpy_helper.from_array(np.array([9], np.int64))),
         helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1)],
        [vi("x", [2, 3])], [vi("v", [2, 9]), vi("i", [2, 9], TensorProto.INT64)]))

    # onnx.Dropout's fourth operand (the training step) is HetPar's, not ONNX's.
    save("dropout-four-inputs.onnx", model(
        [helper.make_node("Dropout", ["x", "r", "t", "s"], ["y"], name="drop")],
        [vi("x", [2, 3]), vi("r", [], TensorProto.FLOAT), vi("t", [], TensorProto.BOOL),
         vi("s", [], TensorProto.INT64)], [vi("y", [2, 3])]))

    # ONNX's inference would divide by these attributes: checked before it runs.
    save("lppool-stride0.onnx", model(
        [helper.make_node("LpPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                          strides=[0, 0])],
        [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 2, 2])]))

    # Weights.
    short = onnx.TensorProto()
    short.name = "w"
    short.data_type = TensorProto.FLOAT
    short.dims.extend([2, 3])
    short.raw_data = np.zeros(5, np.float32).tobytes()  # 20 bytes; 24 are needed
    save("short-initializer.onnx", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], initializers=[short]))

    def external(name, location, offset=0, length=None):
        t = onnx.TensorProto()
        t.name = "w"
        t.data_type = TensorProto.FLOAT
        t.dims.extend([2, 3])
        t.data_location = TensorProto.EXTERNAL
        for k, v in [("location", location), ("offset", str(offset))] + (
                [("length", str(length))] if length is not None else []):
            e = t.external_data.add()
            e.key, e.value = k, v
        save(name, model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                         [vi("x", [2, 3])], [vi("y", [2, 3])], initializers=[t]))

    external("external-missing.onnx", "no-such-file.bin")
    external("external-outside.onnx", "../outside.bin")
    external("external-absolute.onnx", "/etc/passwd")
    with open("short.bin", "wb") as f:
        f.write(np.zeros(4, np.float32).tobytes())  # 16 bytes; 24 are needed
    external("external-short.onnx", "short.bin", offset=0, length=24)
    # A valid model with external data (tools must never write over ok.bin).
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    with open("ok.bin", "wb") as f:
        f.write(w.raw_data)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "ok.bin"), ("offset", "0"), ("length", "24")]:
        e = w.external_data.add()
        e.key, e.value = k, v
    save("external-ok.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                   [vi("x", [2, 3])], [vi("y", [2, 3])], initializers=[w]))
    os.makedirs("weights.dir", exist_ok=True)
    with open(os.path.join("weights.dir", "keep"), "w") as f:
        f.write("external data that is a folder, not a file\n")
    external("external-directory.onnx", "weights.dir")


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    main()
