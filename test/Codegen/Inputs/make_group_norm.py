"""Writes GroupNormalization models (ONNX opsets 18 and 21, newer than
Debian's ONNX library 1.12, whose onnx.helper writes them unchecked) with
PyTorch's outputs in float64 as references (Debian's python3-torch 1.13),
and malformed ones for the importer's diagnostics.

Good models, each one node with scale and bias as initializers:
- gn21: opset 21 (scale and bias per channel, [C]), X [2, 6, 5, 4],
  3 groups: torch.nn.functional.group_norm(x, 3, scale, bias, 1e-5);
- gn21_rank3: opset 21, X [3, 8, 7], 8 groups (one channel per group),
  epsilon 1e-3;
- gn21_rank2: opset 21, X [4, 6] (no spatial axes), 2 groups;
- gn18: opset 18 (scale and bias per group, [G]), X [2, 6, 3, 3, 2],
  2 groups: group_norm without an affine part, then each group's scale
  and bias (ONNX's GroupNormalization-18 definition).
Inputs are float32 from a normal distribution with mean 3 and deviation 2
(a mean far from 0 checks that the variance is of the centred values).
Writes DIR/NAME/model.onnx, input_0.npy and output_0.npy (the reference
rounded to float32). Deterministic (seed 0).

Bad models (DIR/bad/NAME.onnx): groups-not-dividing (4 groups of 6
channels), more-groups-than-channels (12 of 6), no-num-groups,
scale-per-group-at-21 (scale [G] at opset 21), scale-float16 (X float32),
opset-17 (the op is not defined before opset 18), stash-type-0,
extents-past-int64 (X [N, 8, 2^63 - 1, 3]: a group's element count
overflowed int64; found by the onnx-mutate fuzzer; the importer's size check
of graph inputs refuses it first now, and the rewrite still counts with
overflow checks).

Usage: /usr/bin/python3 make_group_norm.py DIR
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper


def model(x_shape, opset, groups, scale, bias, attrs=None):
    attrs = {"num_groups": groups, **(attrs or {})}
    if attrs["num_groups"] is None:
        del attrs["num_groups"]
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"],
                            ["y"], name="gn", **attrs)
    graph = helper.make_graph(
        [node], "group_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)],
        initializer=[numpy_helper.from_array(scale, "scale"),
                     numpy_helper.from_array(bias, "bias")])
    m = helper.make_model(graph,
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def reference(x, opset, groups, scale, bias, eps):
    xt = torch.from_numpy(x.astype(np.float64))
    s = torch.from_numpy(scale.astype(np.float64))
    b = torch.from_numpy(bias.astype(np.float64))
    if opset >= 21:
        return F.group_norm(xt, groups, s, b, eps).numpy()
    y = F.group_norm(xt, groups, eps=eps)
    n = x.shape[0]
    y = y.reshape(n, groups, -1) * s[None, :, None] + b[None, :, None]
    return y.reshape(x.shape).numpy()


def good(out, name, x_shape, opset, groups, eps, rng):
    c = x_shape[1]
    extent = c if opset >= 21 else groups
    scale = rng.standard_normal(extent).astype(np.float32)
    bias = rng.standard_normal(extent).astype(np.float32)
    x = (3 + 2 * rng.standard_normal(x_shape)).astype(np.float32)
    attrs = {} if eps == 1e-5 else {"epsilon": eps}
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model(x_shape, opset, groups, scale, bias, attrs),
              os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_0.npy"), x)
    y = reference(x, opset, groups, scale, bias, eps)
    np.save(os.path.join(d, "output_0.npy"), y.astype(np.float32))


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    good(out, "gn21", [2, 6, 5, 4], 21, 3, 1e-5, rng)
    good(out, "gn21_rank3", [3, 8, 7], 21, 8, 1e-3, rng)
    good(out, "gn21_rank2", [4, 6], 21, 2, 1e-5, rng)
    good(out, "gn18", [2, 6, 3, 3, 2], 18, 2, 1e-5, rng)

    bad = os.path.join(out, "bad")
    os.makedirs(bad, exist_ok=True)
    six = np.ones(6, np.float32)
    two = np.ones(2, np.float32)
    cases = {
        "groups-not-dividing": model([2, 6, 4], 21, 4, six, six),
        "more-groups-than-channels": model([2, 6, 4], 21, 12, six, six),
        "no-num-groups": model([2, 6, 4], 21, None, six, six),
        "scale-per-group-at-21": model([2, 6, 4], 21, 2, two, six),
        "scale-float16": model([2, 6, 4], 21, 2, six.astype(np.float16), six),
        "opset-17": model([2, 6, 4], 17, 2, two, two),
        "stash-type-0": model([2, 6, 4], 21, 2, six, six, {"stash_type": 0}),
        "extents-past-int64": model(["N", 8, 2**63 - 1, 3], 21, 8,
                                    np.ones(8, np.float32),
                                    np.ones(8, np.float32)),
    }
    for name, m in cases.items():
        onnx.save(m, os.path.join(bad, name + ".onnx"))


if __name__ == "__main__":
    main()
