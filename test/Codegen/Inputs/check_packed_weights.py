"""Checks the packed copies of constant weights in a program folder.

Usage: check_packed_weights.py OUT [MODEL.onnx]

hetpar-compile writes some constant float32 weights a second time, named
"<name>.packed" (runtime/include/hetpar/device/hetpar_packed.h):
  conv2d_channels  a 2-D Conv's w [G*Mg, Cg, kH, kW] as [G][Cg*kH*kW][Mp]
                   (Mp: Mg rounded up to its block's width, 16, 32 or a
                   multiple of 64, zero past Mg);
  gemm_panels      a GEMM's B [K, N] (or [N, K], transB) as panels
                   [ceil(N/64)][K][64] of B (zero past N).
For every such entry this rebuilds the layout from the original with numpy
(trying B and its transpose for a GEMM, and saying which matched) and compares
bit for bit. The original
is MODEL's initializer of that name, else weights.json's entry (a CPU-only
build leaves out the own copy of a constant only packed kernels read).
Prints "packed N" (the number of packed weights), each one's name, layout and
shape, "unpacked N" (how many originals weights.json still holds),
"mismatch NAME" for each that differs and "no original NAME" for each it
cannot check.
"""
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper

out = sys.argv[1]
index = json.load(open(out + "/weights.json"))
blob = open(out + "/weights.bin", "rb").read()
byName = {t["name"]: t for t in index["tensors"]}
initializers = {}
if len(sys.argv) > 2:
    model = onnx.load(sys.argv[2])
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def array(t):
    a = np.frombuffer(blob, dtype=np.float32, count=t["bytes"] // 4, offset=t["offset"])
    return a.reshape(t["shape"])


packed = [t for t in index["tensors"] if "packed" in t]
print("packed", len(packed))


def conv2d_channels(w, shape):
    g, k, mp = shape
    mg = w.shape[0] // g
    want = np.zeros((g, k, mp), np.float32)
    want[:, :, :mg] = w.reshape(g, mg, k).transpose(0, 2, 1)
    return [(want, "")]


def gemm_panels(b, shape):
    panels, k, width = shape
    wants = []
    for op, how in ((b, "as B"), (b.T, "as B transposed")):
        if op.shape[0] != k:
            continue
        n = op.shape[1]
        full = np.zeros((k, panels * width), np.float32)
        full[:, :n] = op
        wants.append((full.reshape(k, panels, width).transpose(1, 0, 2), how))
    return wants


unpacked = 0
for t in packed:
    name = t["name"][: t["name"].index(".packed")]
    unpacked += name in byName
    if name in initializers:
        original = initializers[name].astype(np.float32)
    elif name in byName:
        original = array(byName[name])
    else:
        print("no original", name)
        continue
    wants = {"conv2d_channels": conv2d_channels,
             "gemm_panels": gemm_panels}[t["packed"]](original, t["shape"])
    got = array(t)
    match = [how for w, how in wants if np.array_equal(got, w)]
    print(t["name"], t["packed"], "x".join(map(str, t["shape"])),
          *[how for how in match[:1] if how])
    if not match:
        print("mismatch", t["name"])
print("unpacked", unpacked)
