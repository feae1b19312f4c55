"""Writes grouped-conv.onnx, a MobileNet-style block of grouped convolutions:
a 3x3 Conv (8 -> 16 channels), a depthwise 3x3 Conv (group 16), a grouped
1x1 Conv (group 4, 16 -> 8 channels: 4 input and 2 output channels per
group), each with a bias and a Relu, then a global average pool. Also writes
an input (N=4, 8 x 8 x 8) and the output computed here with NumPy (direct
convolution by the ONNX Conv definition). Deterministic (seed 0); run with
/usr/bin/python3."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N, C, S = 4, 8, 8
rng = np.random.default_rng(0)
# (name, out channels, in channels per group, kernel, group)
layers = [("conv", 16, 8, 3, 1), ("depthwise", 16, 1, 3, 16), ("grouped", 8, 4, 1, 4)]
x = rng.standard_normal((N, C, S, S)).astype(np.float32)


def conv(x, w, b, group, pad):
    """ONNX Conv, stride 1, symmetric padding: y[n, m] = b[m] + sum over the
    input channels c of m's group and the window of x[n, c] * w[m, c]."""
    n, c, h, wd = x.shape
    m, cg, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    y = np.zeros((n, m, oh, ow), np.float64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(cg):
            for dy in range(k):
                for dx in range(k):
                    y[:, o] += xp[:, g * cg + i, dy:dy + oh, dx:dx + ow] * w[o, i, dy, dx]
        y[:, o] += b[o]
    return y


nodes, inits, y, prev = [], [], x.astype(np.float64), "x"
for name, m, cg, k, group in layers:
    w = (rng.standard_normal((m, cg, k, k)) / np.sqrt(cg * k * k)).astype(np.float32)
    b = (rng.standard_normal(m) / 4).astype(np.float32)
    inits += [numpy_helper.from_array(w, name + ".w"), numpy_helper.from_array(b, name + ".b")]
    pad = k // 2
    nodes.append(helper.make_node("Conv", [prev, name + ".w", name + ".b"], [name + ".y"],
                                  name=f"/{name}/Conv", group=group, kernel_shape=[k, k],
                                  pads=[pad] * 4))
    nodes.append(helper.make_node("Relu", [name + ".y"], [name + ".r"], name=f"/{name}/Relu"))
    prev = name + ".r"
    y = np.maximum(conv(y, w, b, group, pad), 0)
nodes.append(helper.make_node("GlobalAveragePool", [prev], ["y"], name="/pool"))
y = y.mean(axis=(2, 3), keepdims=True)
graph = helper.make_graph(
    nodes, "grouped-conv",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, C, S, S])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, 8, 1, 1])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
here = os.path.dirname(os.path.abspath(__file__))
onnx.save(model, os.path.join(here, "grouped-conv.onnx"))
os.makedirs(os.path.join(here, "grouped-conv"), exist_ok=True)
np.save(os.path.join(here, "grouped-conv", "input_0.npy"), x)
np.save(os.path.join(here, "grouped-conv", "output_0.npy"), y.astype(np.float32))
