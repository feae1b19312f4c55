#!/usr/bin/env python3
"""Compares hetpar-run outputs with stored reference outputs (ONNX Runtime's).

Usage: compare-outputs.py MODEL.onnx GOT_DIR REF_DIR [--dtype float32|float16|bfloat16]

Every REF_DIR/output_<i>.npy must match GOT_DIR/output_<i>.npy in shape and
within |got - ref| <= tol * (1 + |ref|), where the tolerance grows with the
longest reduction L in the model (the K of every MatMul / Gemm, C/group times
the window of every Conv, the normalized extent of LayerNormalization, the
spatial extent of InstanceNormalization, C/num_groups times the spatial extent
of GroupNormalization):

    tol = 4 * u * sqrt(L)

u is the unit roundoff of the compute dtype (2^-24 float32, 2^-11 float16,
2^-8 bfloat16); sqrt(L) is the usual probabilistic bound on rounding error
growth of a sum of L terms (Higham, "Accuracy and Stability of Numerical
Algorithms", 2nd ed., section 3.5), and 4 allows for error carried through
the layers (the bundled models' errors are 10-40x below the bound in every
dtype). Prints one line per output; exit status 1 on any mismatch.
"""
import argparse
import glob
import math
import os
import sys

import numpy as np
import onnx
from onnx import shape_inference

UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11,
                 "bfloat16": 2.0 ** -8}


def longest_reduction(model_path):
    model = shape_inference.infer_shapes(onnx.load(model_path))
    g = model.graph
    shapes = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        dims = [d.dim_value if d.HasField("dim_value") else 0
                for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    longest = 1
    for node in g.node:
        ins = [shapes.get(n, []) for n in node.input]
        if node.op_type == "MatMul" and ins[0]:
            longest = max(longest, ins[0][-1])
        elif node.op_type == "Gemm" and ins[0]:
            trans_a = any(a.name == "transA" and a.i for a in node.attribute)
            longest = max(longest, ins[0][0] if trans_a else ins[0][-1])
        elif node.op_type == "Conv" and len(ins) > 1 and ins[1]:
            longest = max(longest, int(np.prod(ins[1][1:])))
        elif node.op_type in ("LayerNormalization", "ReduceMean", "Softmax") and ins[0]:
            longest = max(longest, ins[0][-1])
        elif node.op_type == "InstanceNormalization" and len(ins[0]) > 2:
            longest = max(longest, int(np.prod(ins[0][2:])))
        elif node.op_type == "GroupNormalization" and len(ins[0]) >= 2:
            groups = [a.i for a in node.attribute if a.name == "num_groups"]
            if groups and groups[0] > 0:
                longest = max(longest, int(np.prod(ins[0][1:])) // groups[0])
    return longest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("got")
    ap.add_argument("ref")
    ap.add_argument("--dtype", default="float32", choices=sorted(UNIT_ROUNDOFF))
    args = ap.parse_args()
    L = longest_reduction(args.model)
    tol = 4 * UNIT_ROUNDOFF[args.dtype] * math.sqrt(L)
    refs = sorted(glob.glob(os.path.join(args.ref, "output_*.npy")))
    if not refs:
        print("no reference outputs in %s" % args.ref)
        return 1
    ok = True
    for ref_path in refs:
        name = os.path.basename(ref_path)
        got_path = os.path.join(args.got, name)
        ref = np.load(ref_path)
        if not os.path.exists(got_path):
            print("%s: MISSING" % name)
            ok = False
            continue
        got = np.load(got_path)
        if got.shape != ref.shape or got.dtype != ref.dtype:
            print("%s: MISMATCH shape/dtype %s %s, expected %s %s" %
                  (name, got.shape, got.dtype, ref.shape, ref.dtype))
            ok = False
            continue
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        worst = float(np.max(err / (1 + np.abs(ref)))) if ref.size else 0.0
        status = "ok" if worst <= tol else "MISMATCH"
        ok &= status == "ok"
        print("%s: %s (max scaled error %.2e, tolerance %.2e, longest "
              "reduction %d)" % (name, status, worst, tol, L))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
