"""Checks the packed copies of Conv weights in a program folder's weights.bin.

Usage: check_packed_weights.py OUT

hetpar-compile writes a 2-D Conv's constant float32 weight w [G*Mg, Cg, kH, kW]
a second time, as [G][Cg*kH*kW][Mp] (Mp: Mg rounded up to 16, zero past Mg),
named "<name>.packed" (runtime/include/hetpar/device/hetpar_conv2d.h). For
every such entry this rebuilds the layout from the original entry with numpy
and compares bit for bit. Prints "packed N" (the number of packed weights, each
with its shape) and "mismatch NAME" for each that differs.
"""
import json
import sys

import numpy as np

out = sys.argv[1]
index = json.load(open(out + "/weights.json"))
blob = open(out + "/weights.bin", "rb").read()
byName = {t["name"]: t for t in index["tensors"]}


def array(t):
    a = np.frombuffer(blob, dtype=np.float32, count=t["bytes"] // 4, offset=t["offset"])
    return a.reshape(t["shape"])


packed = [t for t in index["tensors"] if t.get("packed") == "conv2d_channels"]
print("packed", len(packed))
for t in packed:
    g, k, mp = t["shape"]
    w = array(byName[t["name"][: -len(".packed")]])
    mg = w.shape[0] // g
    want = np.zeros((g, k, mp), np.float32)
    want[:, :, :mg] = w.reshape(g, mg, k).transpose(0, 2, 1)
    print(t["name"], "x".join(map(str, t["shape"])))
    if not np.array_equal(array(t), want):
        print("mismatch", t["name"])
