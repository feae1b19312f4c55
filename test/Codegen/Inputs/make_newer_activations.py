"""Writes one-node models of the activations ONNX added after the opsets of
Debian's ONNX library (1.12, opset 17), which HetPar models natively, with
PyTorch's outputs as references (Debian's python3-torch 1.13), and checks
HetPar's outputs of the one-node models against them:

- gelu: Gelu-20, approximate "none" (torch.nn.functional.gelu);
- gelu_tanh: Gelu-20, approximate "tanh" (gelu(..., approximate="tanh"));
- mish: Mish-18 (torch.nn.functional.mish);
- matmul_gelu_tanh: MatMul by a constant [64, 48] then Gelu-20 "tanh" (the
  GEMM epilogue path; PyTorch's float32 output, for compare-outputs.py).

Inputs are float32 [4, 64] from a normal distribution scaled by 4, so that
both tails and the region around 0 are covered. The references of the
one-node models are PyTorch's in float64, rounded to float32. The models are
written with onnx.helper (onnx 1.12 writes opset 18 and 20 headers without
checking them). Writes DIR/NAME/model.onnx, input_0.npy, output_0.npy.
Deterministic (seed 0).

`check` compares y = HetPar's output with the reference r elementwise:
|y - r| <= (1 + |x|) e + 8 u (1 + |r|), u = 2^-24. e is the maximum absolute
error of the CPU's float function the op calls, from hetpar_device.h:
hp_erf 4.5e-7 (Gelu), hp_tanh 3.4e-7 (tanh Gelu, Mish); times at most
|x| in y (GELU's 0.5 x and Mish's x), and 8 u for the few roundings around
it and the reference's own rounding.

Usage: /usr/bin/python3 make_newer_activations.py DIR
       /usr/bin/python3 make_newer_activations.py check DIR NAME GOT.npy
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper


def save(out, name, nodes, opset, x, y, inits=()):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))],
        initializer=list(inits))
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_0.npy"), x)
    np.save(os.path.join(d, "output_0.npy"), y)


# The maximum absolute error of the float function each one-node model's
# op calls on the CPU (hetpar_device.h: hp_erf, hp_tanh).
FUNCTION_ERROR = {"gelu": 4.5e-7, "gelu_tanh": 3.4e-7, "mish": 3.4e-7}


def check(d, name, got_path):
    x = np.load(os.path.join(d, name, "input_0.npy")).astype(np.float64)
    ref = np.load(os.path.join(d, name, "output_0.npy")).astype(np.float64)
    got = np.load(got_path).astype(np.float64)
    if got.shape != ref.shape:
        print(f"{name}: MISMATCH shape {got.shape} against {ref.shape}")
        return 1
    tol = (1 + np.abs(x)) * FUNCTION_ERROR[name] + 8 * 2.0 ** -24 * (
        1 + np.abs(ref))
    worst = np.max(np.abs(got - ref) / tol)
    ok = worst <= 1 and np.all(np.isfinite(got))
    print(f"{name}: {'ok' if ok else 'MISMATCH'} (worst error "
          f"{worst:.2f} of its tolerance)")
    return 0 if ok else 1


def main():
    if sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:5]))
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 64)) * 4).astype(np.float32)
    t = torch.from_numpy(x).double()
    f32 = lambda y: y.numpy().astype(np.float32)
    save(out, "gelu", [helper.make_node("Gelu", ["x"], ["y"])], 20, x,
         f32(F.gelu(t)))
    save(out, "gelu_tanh",
         [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], 20, x,
         f32(F.gelu(t, approximate="tanh")))
    save(out, "mish", [helper.make_node("Mish", ["x"], ["y"])], 18, x,
         f32(F.mish(t)))
    w = (rng.standard_normal((64, 48)) / 8).astype(np.float32)
    h = torch.from_numpy(x) @ torch.from_numpy(w)
    save(out, "matmul_gelu_tanh",
         [helper.make_node("MatMul", ["x", "w"], ["h"]),
          helper.make_node("Gelu", ["h"], ["y"], approximate="tanh")], 20, x,
         F.gelu(h, approximate="tanh").numpy(),
         [numpy_helper.from_array(w, "w")])


if __name__ == "__main__":
    main()
