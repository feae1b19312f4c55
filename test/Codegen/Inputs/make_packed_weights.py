"""Makes a model of 2-D convolutions and GEMMs that run on packed weights,
with inputs and PyTorch's outputs.

Usage: make_packed_weights.py OUT_DIR

OUT_DIR/model.onnx: x [2, 6, 9, 9] -> Conv (2 groups of 3 -> 20 channels,
3 x 3, padding 1, bias) -> Relu -> Conv (40 -> 70 channels, 3 x 3, stride 2,
no bias) -> Add of a 1 x 1 Conv of the first's output (stride 2, 70 channels)
-> output [2, 70, 5, 5]. The first has 20 channels per group (two vectors of
16, the second partly used, in each group), the second 70 (two blocks of
four vectors), the 1 x 1 one none (hp_conv2d_channels_runs refuses it);
hetpar-onnx-fuse-conv fuses the Add into the second as a residual.
t [3, 7, 40] -> MatMul with a constant [40, 50] (three batches sharing it,
21 rows) -> Reshape to [21, 50] -> Gemm with a constant B [80, 50] (transB),
bias [80] and alpha 0.5 -> output [21, 80]. One square constant sq [40, 40]
read twice: t -> MatMul(t, sq) -> output [3, 7, 40], and t as [21, 40] ->
Gemm(., sq, transB) -> output [21, 40] (two packed copies, B and B
transposed).
OUT_DIR/input_<k>.npy and OUT_DIR/output_<k>.npy: the inputs and the outputs
of the same computation in torch.nn.functional (float64, rounded to float32),
the reference the test compares with. Needs Debian's python3-torch and
python3-onnx only.
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
x = rng.standard_normal((2, 6, 9, 9)).astype(np.float32)
w1 = (rng.standard_normal((40, 3, 3, 3)) * 0.3).astype(np.float32)
b1 = rng.standard_normal(40).astype(np.float32)
w2 = (rng.standard_normal((70, 40, 3, 3)) * 0.1).astype(np.float32)
w3 = (rng.standard_normal((70, 40, 1, 1)) * 0.1).astype(np.float32)
t_in = rng.standard_normal((3, 7, 40)).astype(np.float32)
wm = (rng.standard_normal((40, 50)) * 0.2).astype(np.float32)
wg = (rng.standard_normal((80, 50)) * 0.2).astype(np.float32)
bg = rng.standard_normal(80).astype(np.float32)
shape = np.array([21, 50], np.int64)
sq = (rng.standard_normal((40, 40)) * 0.2).astype(np.float32)
shape40 = np.array([21, 40], np.int64)

nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="grouped", group=2,
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
    helper.make_node("Conv", ["r1", "w2"], ["c2"], name="strided",
                     kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["r1", "w3"], ["c3"], name="pointwise",
                     kernel_shape=[1, 1], strides=[2, 2]),
    helper.make_node("Add", ["c2", "c3"], ["y"], name="add"),
    helper.make_node("MatMul", ["t", "wm"], ["mm"], name="matmul"),
    helper.make_node("Reshape", ["mm", "shape"], ["rows"], name="rows"),
    helper.make_node("Gemm", ["rows", "wg", "bg"], ["z"], name="gemm",
                     transB=1, alpha=0.5),
    helper.make_node("MatMul", ["t", "sq"], ["u"], name="square"),
    helper.make_node("Reshape", ["t", "shape40"], ["t2"], name="rows40"),
    helper.make_node("Gemm", ["t2", "sq"], ["v"], name="square_t", transB=1),
]
graph = helper.make_graph(
    nodes, "packed_convs",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 9, 9]),
     helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 7, 40])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 70, 5, 5]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [21, 80]),
     helper.make_tensor_value_info("u", TensorProto.FLOAT, [3, 7, 40]),
     helper.make_tensor_value_info("v", TensorProto.FLOAT, [21, 40])],
    [numpy_helper.from_array(a, n) for a, n in
     ((w1, "w1"), (b1, "b1"), (w2, "w2"), (w3, "w3"), (wm, "wm"), (wg, "wg"),
      (bg, "bg"), (shape, "shape"), (sq, "sq"), (shape40, "shape40"))])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "model.onnx"))

t = lambda a: torch.from_numpy(a).double()
F = torch.nn.functional
r1 = F.relu(F.conv2d(t(x), t(w1), t(b1), padding=1, groups=2))
y = F.conv2d(r1, t(w2), stride=2, padding=1) + F.conv2d(r1, t(w3), stride=2)
z = 0.5 * ((t(t_in) @ t(wm)).reshape(21, 50) @ t(wg).T) + t(bg)
np.save(os.path.join(out, "input_0.npy"), x)
np.save(os.path.join(out, "input_1.npy"), t_in)
np.save(os.path.join(out, "output_0.npy"), y.float().numpy())
np.save(os.path.join(out, "output_1.npy"), z.float().numpy())
np.save(os.path.join(out, "output_2.npy"), (t(t_in) @ t(sq)).float().numpy())
np.save(os.path.join(out, "output_3.npy"),
        (t(t_in).reshape(21, 40) @ t(sq).T).float().numpy())
