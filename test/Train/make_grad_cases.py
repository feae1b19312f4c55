#!/usr/bin/env python3
"""Writes the gradient-rule reference cases in test/Train/Inputs/grad/.

One tiny ONNX model (opset 17, built with onnx.helper; 18, 20 or 21 for the operators
newer than onnx 1.12) per case, in
Inputs/grad/<case>/model.onnx. Every float operand of the operator under test is an
initializer (so HetPar trains it), and so are the integer/bool operands (indices,
shapes, axes, conditions). The graph has no inputs and one output, the float32
scalar

    loss = ReduceSum(out_0 * R0) [+ ReduceSum(out_1 * R1) + ...]

where R<i> are further random float initializers (their gradients are the op
outputs). Next to the model:

    loss.npy              float32 scalar, the forward value
    grad_<init>.npy       float32, d loss / d <init>, for every float initializer

computed with PyTorch autograd (float32) on a hand-written torch expression of
the operator's ONNX semantics (never with HetPar). When onnxruntime is importable,
each torch expression is checked against ONNX Runtime on the same model, op outputs
included, and each float32 gradient against a float64 autograd run.

Values stay away from kinks and singularities (Relu/Abs/LeakyRelu away from 0,
Log/Sqrt/Pow bases positive, no ties for Max/Min/ReduceMax/MaxPool/Clip).

Exception, on purpose: the fused patterns (gelu_erf, gelu_tanh, rmsnorm, pow2_const)
carry their mathematical constants (exponents 2 and 3, sqrt(2), 0.5, 1) as Constant
NODES, as torch's exporter writes them in the bundled models; a Constant node is not
an initializer, so it is not trained and has no gradient file. (An initializer
exponent would be trained, and d/dy x^y = x^y ln x is NaN for x < 0.)

Usage: python3 test/Train/make_grad_cases.py [--out DIR] [case ...]
Needs numpy, torch, onnx; onnxruntime is optional (checks only). Writes README.md.
"""
import argparse
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
HERE = os.path.dirname(os.path.abspath(__file__))


class Case:
    def __init__(self, name, op, attrs, inits, nodes, outs, fn, buffers=(),
                 opset=OPSET):
        self.name, self.op, self.attrs = name, op, attrs
        self.inits, self.nodes, self.outs, self.fn = inits, nodes, outs, fn
        # Float initializers HetPar does not train (BatchNormalization's running
        # statistics in training mode): no gradient file.
        self.buffers = set(buffers)
        # Opsets above OPSET (operators newer than Debian's onnx 1.12, which
        # cannot check such a model; ONNX Runtime still runs it).
        self.opset = opset


CASES = []


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def add(name, op, attrs, inits, nodes, fn, outs=("Y",), buffers=(),
        opset=OPSET):
    CASES.append(Case(name, op, attrs, inits, nodes, list(outs), fn, buffers,
                      opset))


def node(op, ins, outs=("Y",), **kw):
    return helper.make_node(op, list(ins), list(outs), **kw)


def const(name, value):
    """A Constant node (not an initializer: frozen, no gradient)."""
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(value, np.float32), name))


def i64(*v):
    return np.array(v, np.int64)


# value generators; `g` is the case's numpy Generator
def rn(g, *s):
    return g.standard_normal(s).astype(np.float32)


def pos(g, *s):
    return g.uniform(0.5, 2.0, s).astype(np.float32)


def away(g, *s):  # |v| in [0.2, 1.5], random sign
    return (g.uniform(0.2, 1.5, s) * g.choice([-1.0, 1.0], s)).astype(np.float32)


def distinct(g, *s):  # a random permutation of well separated values (no ties)
    n = int(np.prod(s)) if s else 1
    return (g.permutation(n).astype(np.float32) * 0.1 - 0.05 * n
            + g.uniform(-0.02, 0.02, n)).astype(np.float32).reshape(s)


def build_cases():
    # ---- elementwise binary, broadcasting both ways -------------------------
    binops = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div}
    shapes = {
        "same": ((3, 5, 7), (3, 5, 7)),
        "bcast_right": ((3, 5, 7), (5, 7)),   # B broadcast
        "bcast_left": ((5, 1), (3, 5, 7)),    # A broadcast
        "bcast_both": ((3, 1, 7), (5, 1)),    # both broadcast -> [3,5,7]
        "scalar": ((3, 5, 7), ()),
    }
    for op, f in binops.items():
        for tag, (sa, sb) in shapes.items():
            name = f"{op.lower()}_{tag}"
            g = rng_for(name)
            a = rn(g, *sa)
            b = (away(g, *sb) if op == "Div" else rn(g, *sb))
            add(name, op, f"A{list(sa)} B{list(sb)}", {"A": a, "B": b},
                [node(op, ["A", "B"])], lambda T, f=f: [f(T["A"], T["B"])])
    g = rng_for("add_self")
    add("add_self", "Add", "Add(A, A): one initializer used twice", {"A": rn(g, 3, 5)},
        [node("Add", ["A", "A"])], lambda T: [T["A"] + T["A"]])
    g = rng_for("mul_self")
    add("mul_self", "Mul", "Mul(A, A)", {"A": rn(g, 3, 5)},
        [node("Mul", ["A", "A"])], lambda T: [T["A"] * T["A"]])

    # ---- elementwise unary ---------------------------------------------------
    unary = [
        ("neg", "Neg", rn, torch.neg, {}),
        ("exp", "Exp", rn, torch.exp, {}),
        ("log", "Log", pos, torch.log, {}),
        ("sqrt", "Sqrt", pos, torch.sqrt, {}),
        ("reciprocal", "Reciprocal", away, torch.reciprocal, {}),
        ("tanh", "Tanh", rn, torch.tanh, {}),
        ("sigmoid", "Sigmoid", rn, torch.sigmoid, {}),
        ("relu", "Relu", away, torch.relu, {}),
        ("leakyrelu", "LeakyRelu", away, lambda x: F.leaky_relu(x, 0.1), {"alpha": 0.1}),
        ("erf", "Erf", rn, torch.erf, {}),
        ("abs", "Abs", away, torch.abs, {}),
        ("cos", "Cos", rn, torch.cos, {}),
        ("sin", "Sin", rn, torch.sin, {}),
        ("identity", "Identity", rn, lambda x: x, {}),
        ("cast_float", "Cast", rn, lambda x: x.to(x.dtype), {"to": TensorProto.FLOAT}),
        ("dropout", "Dropout", rn, lambda x: x, {}),
    ]
    for name, op, gen, f, kw in unary:
        g = rng_for(name)
        attrs = ", ".join(f"{k}={v}" for k, v in kw.items()) if name != "cast_float" else "to=FLOAT"
        add(name, op, ("X[3,5,7] " + attrs).strip(), {"X": gen(g, 3, 5, 7)},
            [node(op, ["X"], **kw)], lambda T, f=f: [f(T["X"])])
    g = rng_for("dropout_ratio")
    add("dropout_ratio", "Dropout",
        "X[3,5,7], ratio 0.5 (float initializer: its gradient is 0), training_mode false",
        {"X": rn(g, 3, 5, 7), "ratio": np.array(0.5, np.float32), "training_mode": np.array(False)},
        [node("Dropout", ["X", "ratio", "training_mode"])],
        lambda T: [T["X"] + 0.0 * T["ratio"]])

    # Pow with an initializer exponent (trained: d/dy = x^y ln x, so x > 0)
    for tag, e in (("2", 2.0), ("3", 3.0), ("0_5", 0.5)):
        name = f"pow_{tag}"
        g = rng_for(name)
        add(name, "Pow", f"X[3,5,7] > 0, exponent initializer Y = {e} (scalar)",
            {"X": pos(g, 3, 5, 7), "Y": np.array(e, np.float32)},
            [node("Pow", ["X", "Y"], ["Z"])], lambda T: [torch.pow(T["X"], T["Y"])], outs=["Z"])
    g = rng_for("pow_bcast")
    add("pow_bcast", "Pow", "X[3,5,7] > 0, exponent initializer Y[7] in [0.5, 3]",
        {"X": pos(g, 3, 5, 7), "Y": g.uniform(0.5, 3, 7).astype(np.float32)},
        [node("Pow", ["X", "Y"], ["Z"])], lambda T: [torch.pow(T["X"], T["Y"])], outs=["Z"])
    g = rng_for("pow2_const")
    add("pow2_const", "Pow", "X[3,5,7] of both signs, exponent a Constant node 2.0 (not trained)",
        {"X": away(g, 3, 5, 7)}, [const("two", 2.0), node("Pow", ["X", "two"])],
        lambda T: [torch.pow(T["X"], 2.0)])

    # ---- softmax ---------------------------------------------------------------
    for op, f in (("Softmax", torch.softmax), ("LogSoftmax", torch.log_softmax)):
        for axis in (-1, 1, 0):
            name = f"{op.lower()}_axis{'m1' if axis < 0 else axis}"
            g = rng_for(name)
            add(name, op, f"X[3,5,7] axis={axis}", {"X": rn(g, 3, 5, 7)},
                [node(op, ["X"], axis=axis)], lambda T, f=f, axis=axis: [f(T["X"], axis)])

    # ---- MatMul / Gemm / Einsum --------------------------------------------------
    mm = [
        ("matmul_2d", (3, 5), (5, 7)),
        ("matmul_batched", (2, 3, 5), (2, 5, 7)),
        ("matmul_weight", (2, 3, 5), (5, 7)),  # a linear layer: batch x weight
        ("matmul_bcast_batch", (2, 1, 3, 5), (4, 5, 7)),
        ("matmul_vec_left", (5,), (3, 5, 7)),
        ("matmul_vec_right", (3, 5), (5,)),
        ("matmul_vec_vec", (5,), (5,)),
    ]
    for name, sa, sb in mm:
        g = rng_for(name)
        add(name, "MatMul", f"A{list(sa)} B{list(sb)}", {"A": rn(g, *sa), "B": rn(g, *sb)},
            [node("MatMul", ["A", "B"])], lambda T: [torch.matmul(T["A"], T["B"])])

    def gemm_fn(ta, tb, alpha, beta, has_c):
        def f(T):
            a = T["A"].t() if ta else T["A"]
            b = T["B"].t() if tb else T["B"]
            y = alpha * (a @ b)
            return [y + beta * T["C"] if has_c else y]
        return f
    gemms = [  # name, transA, transB, alpha, beta, C shape (None: no C)
        ("gemm_default", 0, 0, 1.0, 1.0, (7,)),
        ("gemm_transA", 1, 0, 1.0, 1.0, (1, 7)),
        ("gemm_transB", 0, 1, 1.0, 1.0, (3, 7)),
        ("gemm_alpha_beta_col", 1, 1, 0.7, 1.3, (3, 1)),
        ("gemm_scalar_c", 0, 1, 1.0, 0.5, ()),
        ("gemm_no_c", 0, 0, 2.0, 1.0, None),
    ]
    for name, ta, tb, alpha, beta, sc in gemms:
        g = rng_for(name)
        inits = {"A": rn(g, *((5, 3) if ta else (3, 5))), "B": rn(g, *((7, 5) if tb else (5, 7)))}
        ins = ["A", "B"]
        if sc is not None:
            inits["C"] = rn(g, *sc)
            ins.append("C")
        add(name, "Gemm", f"A{list(inits['A'].shape)} B{list(inits['B'].shape)} "
            + (f"C{list(sc)} " if sc is not None else "no C ")
            + f"transA={ta} transB={tb} alpha={alpha} beta={beta}", inits,
            [node("Gemm", ins, transA=ta, transB=tb, alpha=alpha, beta=beta)],
            gemm_fn(ta, tb, alpha, beta, sc is not None))
    g = rng_for("einsum_bmm")
    add("einsum_bmm", "Einsum", 'equation "bij,bjk->bik", A[2,3,5] B[2,5,7]',
        {"A": rn(g, 2, 3, 5), "B": rn(g, 2, 5, 7)},
        [node("Einsum", ["A", "B"], equation="bij,bjk->bik")],
        lambda T: [torch.einsum("bij,bjk->bik", T["A"], T["B"])])

    # ---- shape ops -----------------------------------------------------------------
    g = rng_for("transpose_perm")
    add("transpose_perm", "Transpose", "X[3,5,7] perm=[2,0,1]", {"X": rn(g, 3, 5, 7)},
        [node("Transpose", ["X"], perm=[2, 0, 1])], lambda T: [T["X"].permute(2, 0, 1)])
    g = rng_for("transpose_default")
    add("transpose_default", "Transpose", "X[3,5,7] no perm (reverse)", {"X": rn(g, 3, 5, 7)},
        [node("Transpose", ["X"])], lambda T: [T["X"].permute(2, 1, 0)])
    g = rng_for("reshape_zero_minus1")
    add("reshape_zero_minus1", "Reshape", "X[3,5,7] shape=[0,-1] -> [3,35]",
        {"X": rn(g, 3, 5, 7), "shape": i64(0, -1)}, [node("Reshape", ["X", "shape"])],
        lambda T: [T["X"].reshape(3, -1)])
    g = rng_for("reshape_3d")
    add("reshape_3d", "Reshape", "X[3,5,7] shape=[7,-1,3]",
        {"X": rn(g, 3, 5, 7), "shape": i64(7, -1, 3)}, [node("Reshape", ["X", "shape"])],
        lambda T: [T["X"].reshape(7, -1, 3)])
    for axis in (2, 0):
        name = f"flatten_axis{axis}"
        g = rng_for(name)
        add(name, "Flatten", f"X[3,5,7] axis={axis}", {"X": rn(g, 3, 5, 7)},
            [node("Flatten", ["X"], axis=axis)],
            lambda T, axis=axis: [T["X"].reshape(int(np.prod(T["X"].shape[:axis])), -1)])
    g = rng_for("squeeze_axis")
    add("squeeze_axis", "Squeeze", "X[3,1,7] axes=[1]", {"X": rn(g, 3, 1, 7), "axes": i64(1)},
        [node("Squeeze", ["X", "axes"])], lambda T: [T["X"].squeeze(1)])
    g = rng_for("squeeze_all")
    add("squeeze_all", "Squeeze", "X[1,5,1,7] no axes", {"X": rn(g, 1, 5, 1, 7)},
        [node("Squeeze", ["X"])], lambda T: [T["X"].reshape(5, 7)])
    g = rng_for("unsqueeze")
    add("unsqueeze", "Unsqueeze", "X[3,5,7] axes=[0,3] -> [1,3,5,1,7]",
        {"X": rn(g, 3, 5, 7), "axes": i64(0, 3)}, [node("Unsqueeze", ["X", "axes"])],
        lambda T: [T["X"].reshape(1, 3, 5, 1, 7)])
    g = rng_for("unsqueeze_neg")
    add("unsqueeze_neg", "Unsqueeze", "X[3,5] axes=[-1]",
        {"X": rn(g, 3, 5), "axes": i64(-1)}, [node("Unsqueeze", ["X", "axes"])],
        lambda T: [T["X"].unsqueeze(-1)])
    g = rng_for("concat_axis1")
    add("concat_axis1", "Concat", "A[3,2,7] B[3,4,7] C[3,1,7] axis=1",
        {"A": rn(g, 3, 2, 7), "B": rn(g, 3, 4, 7), "C": rn(g, 3, 1, 7)},
        [node("Concat", ["A", "B", "C"], axis=1)],
        lambda T: [torch.cat([T["A"], T["B"], T["C"]], 1)])
    g = rng_for("concat_neg_self")
    add("concat_neg_self", "Concat", "A[3,5] B[3,2] A again, axis=-1",
        {"A": rn(g, 3, 5), "B": rn(g, 3, 2)}, [node("Concat", ["A", "B", "A"], axis=-1)],
        lambda T: [torch.cat([T["A"], T["B"], T["A"]], -1)])
    g = rng_for("split_sizes")
    add("split_sizes", "Split", "X[3,10,7] axis=1 split=[2,5,3], three outputs",
        {"X": rn(g, 3, 10, 7), "split": i64(2, 5, 3)},
        [node("Split", ["X", "split"], ["Y0", "Y1", "Y2"], axis=1)],
        lambda T: list(torch.split(T["X"], [2, 5, 3], 1)), outs=["Y0", "Y1", "Y2"])
    g = rng_for("split_equal")
    add("split_equal", "Split", "",
        {"X": rn(g, 3, 6, 7)}, [node("Split", ["X"], ["Y0", "Y1"], axis=1)],
        lambda T: list(torch.split(T["X"], 3, 1)), outs=["Y0", "Y1"])
    CASES[-1].attrs = "X[3,6,7] axis=1, 2 equal outputs (no split input)"

    def np_slice(shape, starts, ends, axes, steps):
        idx = [slice(None)] * len(shape)
        for s, e, a, st in zip(starts, ends, axes, steps):
            # ONNX clamps like Python slicing; the huge negative end means "to the front"
            idx[a] = slice(s, None if (st < 0 and e < -shape[a]) else e, st)
        return tuple(idx)
    slices = [
        ("slice_steps", (5, 9, 7), (0, 1), (5, 9), (0, 1), (2, 3)),
        ("slice_reverse", (3, 5, 7), (-1,), (-1000,), (1,), (-2,)),
        ("slice_negidx", (3, 5, 7), (-4, 1), (-1, 100), (2, 0), (1, 1)),
        ("slice_neg_step3", (3, 5, 7), (5,), (0,), (-1,), (-3,)),
    ]
    for name, shp, st, en, ax, sp in slices:
        g = rng_for(name)
        sl = np_slice(shp, st, en, [a % len(shp) for a in ax], sp)
        def f(T, sl=sl):
            x = T["X"]
            for d, s in enumerate(sl):
                if s.step is not None and s.step < 0:
                    # torch has no negative steps: index with explicit positions
                    n = x.shape[d]
                    pos_idx = list(range(n))[s]
                    x = x.index_select(d, torch.tensor(pos_idx, dtype=torch.long))
                elif s != slice(None):
                    x = x[(slice(None),) * d + (s,)]
            return [x]
        add(name, "Slice", f"X{list(shp)} starts={list(st)} ends={list(en)} axes={list(ax)} steps={list(sp)}",
            {"X": rn(g, *shp), "starts": i64(*st), "ends": i64(*en), "axes": i64(*ax), "steps": i64(*sp)},
            [node("Slice", ["X", "starts", "ends", "axes", "steps"])], f)

    g = rng_for("gather_embedding")
    ids = np.array([[1, 4, 4, 0, 10], [7, 1, 1, 1, 3], [10, 2, 9, 4, 6]], np.int64)
    add("gather_embedding", "Gather", "W[11,7] (V=11, D=7), int64 indices [3,5] with repeats, axis=0",
        {"W": rn(g, 11, 7), "ids": ids}, [node("Gather", ["W", "ids"], axis=0)],
        lambda T: [F.embedding(T["ids"], T["W"])])
    g = rng_for("gather_axis1")
    add("gather_axis1", "Gather", "X[3,5,7], indices [4,0,-1,2] (-1 = 4 again), axis=1",
        {"X": rn(g, 3, 5, 7), "idx": i64(4, 0, -1, 2)}, [node("Gather", ["X", "idx"], axis=1)],
        lambda T: [T["X"].index_select(1, T["idx"] % 5)])
    g = rng_for("gather_scalar_idx")
    add("gather_scalar_idx", "Gather", "X[3,5,7], scalar index 2, axis=2 -> [3,5]",
        {"X": rn(g, 3, 5, 7), "idx": np.array(2, np.int64)}, [node("Gather", ["X", "idx"], axis=2)],
        lambda T: [T["X"][:, :, 2]])

    g = rng_for("expand")
    add("expand", "Expand", "X[3,1,7] shape=[2,3,5,7]",
        {"X": rn(g, 3, 1, 7), "shape": i64(2, 3, 5, 7)}, [node("Expand", ["X", "shape"])],
        lambda T: [T["X"].expand(2, 3, 5, 7)])
    g = rng_for("expand_bcast_shape")
    add("expand_bcast_shape", "Expand", "X[5,7] shape=[3,1,1] (result [3,5,7])",
        {"X": rn(g, 5, 7), "shape": i64(3, 1, 1)}, [node("Expand", ["X", "shape"])],
        lambda T: [T["X"].expand(3, 5, 7)])
    g = rng_for("tile")
    add("tile", "Tile", "X[3,5,7] repeats=[2,1,3]",
        {"X": rn(g, 3, 5, 7), "repeats": i64(2, 1, 3)}, [node("Tile", ["X", "repeats"])],
        lambda T: [T["X"].repeat(2, 1, 3)])
    g = rng_for("where")
    add("where", "Where", "cond bool[3,5,7], X[3,5,7], Y[5,1] (broadcast)",
        {"cond": g.random((3, 5, 7)) < 0.5, "X": rn(g, 3, 5, 7), "Y": rn(g, 5, 1)},
        [node("Where", ["cond", "X", "Y"], ["Z"])], lambda T: [torch.where(T["cond"], T["X"], T["Y"])],
        outs=["Z"])
    g = rng_for("where_bcast")
    add("where_bcast", "Where", "cond bool[5,7], X[3,5,7], Y scalar",
        {"cond": g.random((5, 7)) < 0.5, "X": rn(g, 3, 5, 7), "Y": np.array(0.3, np.float32)},
        [node("Where", ["cond", "X", "Y"], ["Z"])], lambda T: [torch.where(T["cond"], T["X"], T["Y"])],
        outs=["Z"])

    # ---- reductions ------------------------------------------------------------------
    def red_fn(f, axes, keep):
        def fn(T):
            x = T["X"]
            ax = list(range(x.dim())) if axes is None else axes
            return [f(x, ax, keep)]
        return fn
    tsum = lambda x, ax, k: x.sum(dim=ax, keepdim=bool(k))
    tmean = lambda x, ax, k: x.mean(dim=ax, keepdim=bool(k))
    def tmax(x, ax, k):
        for a in sorted([a % x.dim() for a in ax], reverse=True):
            x = x.amax(dim=a, keepdim=bool(k))
        return x
    for axes, keep in (([1], 1), ([0, 2], 0), (None, 0), ([-1], 1)):
        name = "reducesum_" + ("all" if axes is None else "_".join(str(a).replace("-", "m") for a in axes)) + f"_k{keep}"
        g = rng_for(name)
        inits = {"X": rn(g, 3, 5, 7)}
        ins = ["X"]
        if axes is not None:
            inits["axes"] = i64(*axes)
            ins.append("axes")
        add(name, "ReduceSum", f"X[3,5,7] axes={axes if axes is not None else 'none (all)'} (input) keepdims={keep}",
            inits, [node("ReduceSum", ins, keepdims=keep)], red_fn(tsum, axes, keep))
    for axes, keep in (([1], 1), ([0, 2], 0), (None, 1), ([-1], 0)):
        name = "reducemean_" + ("all" if axes is None else "_".join(str(a).replace("-", "m") for a in axes)) + f"_k{keep}"
        g = rng_for(name)
        kw = {"keepdims": keep}
        if axes is not None:
            kw["axes"] = axes
        add(name, "ReduceMean", f"X[3,5,7] axes={axes if axes is not None else 'none (all)'} (attribute) keepdims={keep}",
            {"X": rn(g, 3, 5, 7)}, [node("ReduceMean", ["X"], **kw)], red_fn(tmean, axes, keep))
    for axes, keep in (([1], 1), ([2], 0), ([0, 2], 1)):
        name = "reducemax_" + "_".join(map(str, axes)) + f"_k{keep}"
        g = rng_for(name)
        add(name, "ReduceMax", f"X[3,5,7] (no ties) axes={axes} keepdims={keep}",
            {"X": distinct(g, 3, 5, 7)}, [node("ReduceMax", ["X"], axes=axes, keepdims=keep)],
            red_fn(tmax, axes, keep))

    # ---- normalization -------------------------------------------------------------------
    g = rng_for("layernorm_last")
    add("layernorm_last", "LayerNormalization", "X[3,5,7] axis=-1 epsilon=1e-5, Scale[7] B[7]",
        {"X": rn(g, 3, 5, 7), "Scale": rn(g, 7), "B": rn(g, 7)},
        [node("LayerNormalization", ["X", "Scale", "B"], axis=-1, epsilon=1e-5)],
        lambda T: [F.layer_norm(T["X"], (7,), T["Scale"], T["B"], 1e-5)])
    g = rng_for("layernorm_axis1")
    add("layernorm_axis1", "LayerNormalization", "X[3,5,7] axis=1 (normalizes [5,7]) epsilon=1e-5, Scale[5,7] B[5,7]",
        {"X": rn(g, 3, 5, 7), "Scale": rn(g, 5, 7), "B": rn(g, 5, 7)},
        [node("LayerNormalization", ["X", "Scale", "B"], axis=1, epsilon=1e-5)],
        lambda T: [F.layer_norm(T["X"], (5, 7), T["Scale"], T["B"], 1e-5)])
    g = rng_for("layernorm_bcast_scale")
    add("layernorm_bcast_scale", "LayerNormalization",
        "X[3,5,7] axis=1 (normalizes [5,7]) epsilon=1e-5, Scale[7] B[1,7] (broadcast)",
        {"X": rn(g, 3, 5, 7), "Scale": rn(g, 7), "B": rn(g, 1, 7)},
        [node("LayerNormalization", ["X", "Scale", "B"], axis=1, epsilon=1e-5)],
        lambda T: [F.layer_norm(T["X"], (5, 7), None, None, 1e-5) * T["Scale"] + T["B"]])
    g = rng_for("layernorm_nobias_long")
    add("layernorm_nobias_long", "LayerNormalization",
        "X[4,70] axis=-1 epsilon=1e-3, Scale[70], no B (rows longer than a warp)",
        {"X": rn(g, 4, 70), "Scale": rn(g, 70)},
        [node("LayerNormalization", ["X", "Scale"], axis=-1, epsilon=1e-3)],
        lambda T: [F.layer_norm(T["X"], (70,), T["Scale"], None, 1e-3)])
    g = rng_for("batchnorm_inference")

    def bn(T):
        sh = (1, -1, 1, 1)
        return [(T["X"] - T["mean"].reshape(sh)) / torch.sqrt(T["var"].reshape(sh) + 1e-5)
                * T["scale"].reshape(sh) + T["B"].reshape(sh)]
    add("batchnorm_inference", "BatchNormalization",
        "X[2,3,5,7] scale[3] B[3] input_mean[3] input_var[3] (all trained) epsilon=1e-5 training_mode=0",
        {"X": rn(g, 2, 3, 5, 7), "scale": rn(g, 3), "B": rn(g, 3), "mean": rn(g, 3), "var": pos(g, 3)},
        [node("BatchNormalization", ["X", "scale", "B", "mean", "var"], epsilon=1e-5, training_mode=0)], bn)
    g = rng_for("batchnorm_training")
    add("batchnorm_training", "BatchNormalization",
        "X[2,3,5,7] scale[3] B[3] (trained), input_mean[3] input_var[3] (running statistics: "
        "buffers, not trained) epsilon=1e-5 momentum=0.9 training_mode=1 (batch statistics; "
        "outputs Y, running_mean, running_var)",
        {"X": rn(g, 2, 3, 5, 7), "scale": rn(g, 3), "B": rn(g, 3), "mean": rn(g, 3), "var": pos(g, 3)},
        [node("BatchNormalization", ["X", "scale", "B", "mean", "var"], ["Y", "running_mean", "running_var"],
              epsilon=1e-5, momentum=0.9, training_mode=1)],
        lambda T: [F.batch_norm(T["X"], None, None, T["scale"], T["B"], training=True, eps=1e-5)],
        buffers=("mean", "var"))
    g = rng_for("instancenorm")
    add("instancenorm", "InstanceNormalization", "X[2,3,5,7] scale[3] B[3] epsilon=1e-5",
        {"X": rn(g, 2, 3, 5, 7), "scale": rn(g, 3), "B": rn(g, 3)},
        [node("InstanceNormalization", ["X", "scale", "B"], epsilon=1e-5)],
        lambda T: [F.instance_norm(T["X"], weight=T["scale"], bias=T["B"], eps=1e-5)])

    # ---- convolution and pooling ----------------------------------------------------------
    g = rng_for("conv_s2_p1_bias")
    add("conv_s2_p1_bias", "Conv", "X[2,3,9,11] W[4,3,3,3] B[4] strides=2 pads=1",
        {"X": rn(g, 2, 3, 9, 11), "W": rn(g, 4, 3, 3, 3), "B": rn(g, 4)},
        [node("Conv", ["X", "W", "B"], strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3])],
        lambda T: [F.conv2d(T["X"], T["W"], T["B"], stride=2, padding=1)])
    g = rng_for("conv_depthwise")
    add("conv_depthwise", "Conv", "X[2,4,9,11] W[4,1,3,3] B[4] group=4 strides=2 pads=1",
        {"X": rn(g, 2, 4, 9, 11), "W": rn(g, 4, 1, 3, 3), "B": rn(g, 4)},
        [node("Conv", ["X", "W", "B"], strides=[2, 2], pads=[1, 1, 1, 1], group=4)],
        lambda T: [F.conv2d(T["X"], T["W"], T["B"], stride=2, padding=1, groups=4)])
    g = rng_for("conv_rect_nobias")
    add("conv_rect_nobias", "Conv", "X[2,3,7,9] W[5,3,3,2] no bias, strides=1 pads=0",
        {"X": rn(g, 2, 3, 7, 9), "W": rn(g, 5, 3, 3, 2)}, [node("Conv", ["X", "W"])],
        lambda T: [F.conv2d(T["X"], T["W"])])
    g = rng_for("conv_asym_pads")
    add("conv_asym_pads", "Conv", "X[1,2,6,7] W[3,2,3,3] B[3] pads=[0,1,2,1] strides=[1,2]",
        {"X": rn(g, 1, 2, 6, 7), "W": rn(g, 3, 2, 3, 3), "B": rn(g, 3)},
        [node("Conv", ["X", "W", "B"], pads=[0, 1, 2, 1], strides=[1, 2])],
        lambda T: [F.conv2d(F.pad(T["X"], (1, 1, 0, 2)), T["W"], T["B"], stride=(1, 2))])
    pools = [
        ("maxpool_2x2_s2", "MaxPool", (2, 3, 8, 10), 2, 2, 0, None),
        ("maxpool_2x2_s2_odd", "MaxPool", (2, 3, 9, 11), 2, 2, 0, None),
        ("maxpool_3x3_s2_p1", "MaxPool", (2, 3, 9, 11), 3, 2, 1, None),
        ("avgpool_2x2_s2", "AveragePool", (2, 3, 8, 10), 2, 2, 0, 0),
        ("avgpool_3x3_s2_p1_excl", "AveragePool", (2, 3, 9, 11), 3, 2, 1, 0),
        ("avgpool_3x3_s2_p1_incl", "AveragePool", (2, 3, 9, 11), 3, 2, 1, 1),
        # Windows far larger than the input (401 x 401, padding 200): every
        # window covers the whole plane; the gradient kernels try only the
        # kernel positions that land on an output window.
        ("maxpool_window_past_input", "MaxPool", (1, 2, 5, 6), 401, 1, 200, None),
        ("avgpool_window_past_input_excl", "AveragePool", (1, 2, 5, 6), 401, 1, 200, 0),
        ("avgpool_window_past_input_incl", "AveragePool", (1, 2, 5, 6), 401, 1, 200, 1),
    ]
    for name, op, shp, k, s, p, cip in pools:
        g = rng_for(name)
        kw = dict(kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
        if cip is not None:
            kw["count_include_pad"] = cip
        if op == "MaxPool":
            x = distinct(g, *shp)
            f = lambda T, k=k, s=s, p=p: [F.max_pool2d(T["X"], k, s, p)]
        else:
            x = rn(g, *shp)
            f = lambda T, k=k, s=s, p=p, cip=cip: [F.avg_pool2d(T["X"], k, s, p, count_include_pad=bool(cip))]
        add(name, op, f"X{list(shp)} kernel={k}x{k} strides={s} pads={p}"
            + (f" count_include_pad={cip}" if cip is not None else ""), {"X": x},
            [node(op, ["X"], **kw)], f)
    g = rng_for("globalavgpool")
    add("globalavgpool", "GlobalAveragePool", "X[2,3,5,7]", {"X": rn(g, 2, 3, 5, 7)},
        [node("GlobalAveragePool", ["X"])], lambda T: [T["X"].mean(dim=(2, 3), keepdim=True)])

    # ---- variadic / misc ----------------------------------------------------------------
    for op, f in (("Max", torch.maximum), ("Min", torch.minimum)):
        name = f"{op.lower()}_bcast"
        g = rng_for(name)
        v = distinct(g, 3 * 5 * 7 + 5)
        add(name, op, "A[3,5,7] B[5,1] (no ties)",
            {"A": v[:105].reshape(3, 5, 7), "B": v[105:].reshape(5, 1)},
            [node(op, ["A", "B"])], lambda T, f=f: [f(T["A"], T["B"])])
        name = f"{op.lower()}_three"
        g = rng_for(name)
        v = distinct(g, 35 + 7 + 35)
        add(name, op, "A[5,7] B[7] C[5,7] (three inputs, no ties)",
            {"A": v[:35].reshape(5, 7), "B": v[35:42], "C": v[42:].reshape(5, 7)},
            [node(op, ["A", "B", "C"])], lambda T, f=f: [f(f(T["A"], T["B"]), T["C"])])
    g = rng_for("clip_min_max")
    x = rn(g, 3, 5, 7)
    x[np.abs(x + 0.5) < 0.02] += 0.05
    x[np.abs(x - 0.7) < 0.02] += 0.05
    add("clip_min_max", "Clip", "X[3,5,7], min=-0.5 max=0.7 (scalar initializers, trained)",
        {"X": x, "min": np.array(-0.5, np.float32), "max": np.array(0.7, np.float32)},
        [node("Clip", ["X", "min", "max"])],
        lambda T: [torch.minimum(torch.maximum(T["X"], T["min"]), T["max"])])
    g = rng_for("clip_min_only")
    x = rn(g, 3, 5, 7)
    x[np.abs(x) < 0.02] += 0.05
    add("clip_min_only", "Clip", "X[3,5,7], min=0.0 initializer, max omitted (empty name)",
        {"X": x, "min": np.array(0.0, np.float32)}, [node("Clip", ["X", "min", ""])],
        lambda T: [torch.maximum(T["X"], T["min"])])
    g = rng_for("cumsum_axis1")
    add("cumsum_axis1", "CumSum", "X[3,5,7] axis=1 (int64 scalar initializer)",
        {"X": rn(g, 3, 5, 7), "axis": np.array(1, np.int64)}, [node("CumSum", ["X", "axis"])],
        lambda T: [torch.cumsum(T["X"], 1)])
    g = rng_for("cumsum_excl_rev")
    def cs_er(T):
        x = T["X"].flip(-1)
        y = torch.cumsum(x, -1) - x  # exclusive
        return [y.flip(-1)]
    add("cumsum_excl_rev", "CumSum", "X[3,5,7] axis=-1 exclusive=1 reverse=1",
        {"X": rn(g, 3, 5, 7), "axis": np.array(-1, np.int64)},
        [node("CumSum", ["X", "axis"], exclusive=1, reverse=1)], cs_er)

    def pad_fn(pads):
        def f(T):
            x = T["X"]
            r = x.dim()
            tp = []
            for d in reversed(range(r)):
                tp += [pads[d], pads[d + r]]
            y = F.pad(x, tp)  # zeros in the new border
            border = F.pad(torch.zeros_like(x), tp, value=1.0)
            return [y + T["value"] * border]
        return f
    for name, pads in (("pad_constant", [0, 1, 2, 1, 0, 3]), ("pad_negative", [0, -1, 1, 1, 2, -2])):
        g = rng_for(name)
        add(name, "Pad", f"X[3,5,7] mode=constant pads={pads} value=0.3 (scalar initializer, trained)",
            {"X": rn(g, 3, 5, 7), "pads": i64(*pads), "value": np.array(0.3, np.float32)},
            [node("Pad", ["X", "pads", "value"], mode="constant")], pad_fn(pads))

    # ---- recurrent ops (unrolled by hetpar-onnx-decompose-rnn), ONNX's equations in torch ----
    Tn, Bn, In, Hn = 3, 2, 4, 3
    sig = torch.sigmoid

    def lstm(T):
        W, R, b, p = T["W"][0], T["R"][0], T["B"][0], T["P"][0]
        h, c = T["H0"][0], T["C0"][0]
        ys = []
        for t in range(Tn):
            gates = T["X"][t] @ W.T + h @ R.T + b[:4 * Hn] + b[4 * Hn:]
            i, o, f, cc = gates.split(Hn, -1)  # ONNX's gate order: i, o, f, c
            i = sig(i + p[:Hn] * c)
            f = sig(f + p[2 * Hn:] * c)
            c = f * c + i * torch.tanh(cc)
            o = sig(o + p[Hn:2 * Hn] * c)
            h = o * torch.tanh(c)
            ys.append(h)
        return [torch.stack(ys)[:, None], h[None], c[None]]
    g = rng_for("lstm")
    add("lstm", "LSTM", f"X[{Tn},{Bn},{In}] hidden_size={Hn}, forward, bias B, initial_h H0, initial_c C0, peepholes P; outputs Y, Y_h, Y_c",
        {"X": rn(g, Tn, Bn, In), "W": rn(g, 1, 4 * Hn, In) * 0.5, "R": rn(g, 1, 4 * Hn, Hn) * 0.5,
         "B": rn(g, 1, 8 * Hn) * 0.5, "H0": rn(g, 1, Bn, Hn), "C0": rn(g, 1, Bn, Hn),
         "P": rn(g, 1, 3 * Hn) * 0.5},
        [node("LSTM", ["X", "W", "R", "B", "", "H0", "C0", "P"], ["Y", "Y_h", "Y_c"],
              hidden_size=Hn)], lstm, outs=("Y", "Y_h", "Y_c"))

    def gru(T):
        W, R, b = T["W"][0], T["R"][0], T["B"][0]
        wb, rb = b[:3 * Hn], b[3 * Hn:]
        h, ys = T["H0"][0], [None] * Tn
        for t in reversed(range(Tn)):
            xw = T["X"][t] @ W.T + wb
            hr = h @ R[:2 * Hn].T + rb[:2 * Hn]
            z = sig(xw[:, :Hn] + hr[:, :Hn])
            r = sig(xw[:, Hn:2 * Hn] + hr[:, Hn:])
            cand = torch.tanh(xw[:, 2 * Hn:] + (r * h) @ R[2 * Hn:].T + rb[2 * Hn:])
            h = (1 - z) * cand + z * h
            ys[t] = h
        return [torch.stack(ys)[:, None], h[None]]
    g = rng_for("gru")
    add("gru", "GRU", f"X[{Tn},{Bn},{In}] hidden_size={Hn}, reverse, linear_before_reset=0, bias B, initial_h H0; outputs Y, Y_h",
        {"X": rn(g, Tn, Bn, In), "W": rn(g, 1, 3 * Hn, In) * 0.5, "R": rn(g, 1, 3 * Hn, Hn) * 0.5,
         "B": rn(g, 1, 6 * Hn) * 0.5, "H0": rn(g, 1, Bn, Hn)},
        [node("GRU", ["X", "W", "R", "B", "", "H0"], ["Y", "Y_h"], hidden_size=Hn,
              direction="reverse")], gru, outs=("Y", "Y_h"))

    def rnn(T):
        ys, hs = [], []
        for d in range(2):
            W, R, b = T["W"][d], T["R"][d], T["B"][d]
            h = torch.zeros(Bn, Hn, dtype=W.dtype)
            out = [None] * Tn
            for t in (range(Tn) if d == 0 else reversed(range(Tn))):
                h = torch.tanh(T["X"][:, t] @ W.T + h @ R.T + b[:Hn] + b[Hn:])
                out[t] = h
            ys.append(torch.stack(out, 1))  # [B, T, H]
            hs.append(h)
        return [torch.stack(ys, 2), torch.stack(hs, 1)]  # [B, T, 2, H], [B, 2, H]
    g = rng_for("rnn")
    add("rnn_bidirectional", "RNN", f"X[{Bn},{Tn},{In}] (layout 1) hidden_size={Hn}, bidirectional, bias B; outputs Y, Y_h",
        {"X": rn(g, Bn, Tn, In), "W": rn(g, 2, Hn, In) * 0.5, "R": rn(g, 2, Hn, Hn) * 0.5,
         "B": rn(g, 2, 2 * Hn) * 0.5},
        [node("RNN", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=Hn,
              direction="bidirectional", layout=1)], rnn, outs=("Y", "Y_h"))

    # ---- fused patterns as torch 1.13 exports them (constants are Constant nodes) -------------
    g = rng_for("rmsnorm")
    def rms(T):
        x = T["X"]
        ms = torch.pow(x, 2.0).mean(-1, keepdim=True)
        return [x / torch.sqrt(ms + T["eps"]) * T["W"]]
    add("rmsnorm", "Pow Const 2 / ReduceMean / Add / Sqrt / Div / Mul",
        "RMSNorm: X[3,5,8] (both signs), eps=1e-5 (scalar initializer, trained), W[8]; Y = X / Sqrt(ReduceMean(Pow(X,2), axes=[-1]) + eps) * W",
        {"X": away(g, 3, 5, 8), "eps": np.array(1e-5, np.float32), "W": rn(g, 8)},
        [const("two", 2.0), node("Pow", ["X", "two"], ["sq"]),
         node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
         node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
         node("Div", ["X", "rms"], ["xn"]), node("Mul", ["xn", "W"], ["Y"])], rms)
    g = rng_for("gelu_erf")
    add("gelu_erf", "Div / Erf / Add / Mul / Mul",
        "GELU (none): X[3,5,7]; Y = X * (Erf(X / 1.4142135) + 1) * 0.5, constants as Constant nodes",
        {"X": rn(g, 3, 5, 7)},
        [const("c_sqrt2", 1.4142135381698608), const("c_one", 1.0), const("c_half", 0.5),
         node("Div", ["X", "c_sqrt2"], ["d"]), node("Erf", ["d"], ["e"]),
         node("Add", ["e", "c_one"], ["a"]), node("Mul", ["X", "a"], ["m"]),
         node("Mul", ["m", "c_half"], ["Y"])],
        lambda T: [F.gelu(T["X"])])
    g = rng_for("gelu_tanh")
    add("gelu_tanh", "Pow / Mul / Add / Mul / Tanh / Add / Mul / Mul",
        "GELU (tanh): X[3,5,7]; Y = 0.5 * X * (1 + Tanh(0.7978846 * (X + 0.044715 * X^3))), constants as Constant nodes",
        {"X": rn(g, 3, 5, 7)},
        [const("c3", 3.0), const("c_k", 0.044715), const("c_s", 0.7978845608028654),
         const("c_one", 1.0), const("c_half", 0.5),
         node("Pow", ["X", "c3"], ["p"]), node("Mul", ["p", "c_k"], ["pk"]),
         node("Add", ["X", "pk"], ["inner"]), node("Mul", ["inner", "c_s"], ["u"]),
         node("Tanh", ["u"], ["t"]), node("Add", ["t", "c_one"], ["t1"]),
         node("Mul", ["X", "t1"], ["xt"]), node("Mul", ["xt", "c_half"], ["Y"])],
        lambda T: [F.gelu(T["X"], approximate="tanh")])

    # ---- operators newer than onnx 1.12's opset 17 -----------------------------------------
    g = rng_for("gelu20")
    add("gelu20", "Gelu (opset 20)", "X[3,5,7] (scaled by 3: both tails), approximate none",
        {"X": rn(g, 3, 5, 7) * 3}, [node("Gelu", ["X"])],
        lambda T: [F.gelu(T["X"])], opset=20)
    g = rng_for("gelu20_tanh")
    add("gelu20_tanh", "Gelu (opset 20)", "X[3,5,7] (scaled by 3), approximate tanh",
        {"X": rn(g, 3, 5, 7) * 3}, [node("Gelu", ["X"], approximate="tanh")],
        lambda T: [F.gelu(T["X"], approximate="tanh")], opset=20)
    g = rng_for("mish18")
    add("mish18", "Mish (opset 18)", "X[3,5,7] (scaled by 3)",
        {"X": rn(g, 3, 5, 7) * 3}, [node("Mish", ["X"])],
        lambda T: [F.mish(T["X"])], opset=18)
    g = rng_for("groupnorm21")
    add("groupnorm21", "GroupNormalization (opset 21)",
        "X[2,6,5,4] scale[6] bias[6] (per channel) num_groups=3 epsilon=1e-5",
        {"X": rn(g, 2, 6, 5, 4), "scale": rn(g, 6), "bias": rn(g, 6)},
        [node("GroupNormalization", ["X", "scale", "bias"], num_groups=3, epsilon=1e-5)],
        lambda T: [F.group_norm(T["X"], 3, T["scale"], T["bias"], 1e-5)], opset=21)
    g = rng_for("groupnorm18")

    def group_norm18(T):
        # GroupNormalization-18: scale and bias per group.
        y = F.group_norm(T["X"], 2, eps=1e-3).reshape(2, 2, -1)
        return [(y * T["scale"].reshape(1, 2, 1) + T["bias"].reshape(1, 2, 1)).reshape(2, 4, 3, 5)]
    add("groupnorm18", "GroupNormalization (opset 18)",
        "X[2,4,3,5] scale[2] bias[2] (per group) num_groups=2 epsilon=1e-3",
        {"X": rn(g, 2, 4, 3, 5), "scale": rn(g, 2), "bias": rn(g, 2)},
        [node("GroupNormalization", ["X", "scale", "bias"], num_groups=2, epsilon=1e-3)],
        group_norm18, opset=18)


def to_torch(inits, dtype, buffers=()):
    T = {}
    for k, v in inits.items():
        if v.dtype == np.float32:
            T[k] = torch.tensor(v, dtype=dtype, requires_grad=k not in buffers)
        elif v.dtype == np.bool_:
            T[k] = torch.tensor(v)
        else:
            T[k] = torch.tensor(v, dtype=torch.long)
    return T


def torch_run(case, R, dtype):
    T = to_torch(case.inits, dtype, case.buffers)
    for k, v in R.items():
        T[k] = torch.tensor(v, dtype=dtype, requires_grad=True)
    outs = case.fn(T)
    loss = sum((o * T[f"R{i}"]).sum() for i, o in enumerate(outs))
    floats = [k for k, t in T.items() if t.requires_grad]
    grads = torch.autograd.grad(loss, [T[k] for k in floats], allow_unused=True)
    g = {k: (np.zeros(T[k].shape, np.float32) if gr is None else gr.detach().numpy())
         for k, gr in zip(floats, grads)}
    return loss.detach().numpy(), g, [o.detach().numpy() for o in outs]


def build_model(case, R, extra_outputs=None):
    inits = [numpy_helper.from_array(v, k) for k, v in list(case.inits.items()) + list(R.items())]
    nodes = list(case.nodes)
    sums = []
    for i, o in enumerate(case.outs):
        nodes.append(helper.make_node("Mul", [o, f"R{i}"], [f"prod{i}"]))
        nodes.append(helper.make_node("ReduceSum", [f"prod{i}"], [f"sum{i}"], keepdims=0))
        sums.append(f"sum{i}")
    acc = sums[0]
    for i, s in enumerate(sums[1:]):
        nodes.append(helper.make_node("Add", [acc, s], [f"acc{i}"]))
        acc = f"acc{i}"
    nodes[-1].output[0] = "loss"
    outputs = [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])]
    if extra_outputs:
        outputs += [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(s))
                    for o, s in zip(case.outs, extra_outputs)]
    graph = helper.make_graph(nodes, case.name, [], outputs, initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)],
                          producer_name="hetpar-make-grad-cases")
    m.ir_version = 8
    if case.opset <= OPSET:
        onnx.checker.check_model(m, full_check=True)
    return m


def write_case(case, out_root, ort):
    # shapes of the op outputs, for R
    T = to_torch(case.inits, torch.float32)
    shapes = [tuple(o.shape) for o in case.fn(T)]
    g = rng_for(case.name + "/R")
    R = {f"R{i}": rn(g, *s) for i, s in enumerate(shapes)}
    clash = set(R) & set(case.inits)
    assert not clash, clash
    loss, grads, outs = torch_run(case, R, torch.float32)
    loss64, grads64, _ = torch_run(case, R, torch.float64)
    for k in grads:
        scale = max(1.0, float(np.abs(grads64[k]).max()))
        err = float(np.abs(grads[k] - grads64[k]).max())
        assert err <= 1e-4 * scale, (case.name, k, err)
        assert np.all(np.isfinite(grads[k])), (case.name, k)
    model = build_model(case, R)
    if ort is not None:
        check = build_model(case, R, shapes)
        sess = ort.InferenceSession(check.SerializeToString(), providers=["CPUExecutionProvider"])
        got = sess.run(None, {})
        np.testing.assert_allclose(got[0], loss, rtol=1e-5, atol=1e-5, err_msg=case.name + " loss")
        for o, t in zip(got[1:], outs):
            assert o.shape == t.shape, (case.name, o.shape, t.shape)
            np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-5, err_msg=case.name + " output")
    d = os.path.join(out_root, case.name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "loss.npy"), np.asarray(loss, np.float32).reshape(()))
    for k, v in grads.items():
        np.save(os.path.join(d, f"grad_{k}.npy"), v.astype(np.float32))
    return sorted(grads)


README_HEAD = """# Gradient-rule reference cases

Written by `test/Train/make_grad_cases.py` (PyTorch autograd, never HetPar); regenerate with
`python3 test/Train/make_grad_cases.py` (Debian's python3-torch, python3-onnx; onnxruntime
optional, for the forward checks).

Each `<case>/` holds:

* `model.onnx`: opset 17 (18 for `mish18` and `groupnorm18`, 20 for `gelu20` and
  `gelu20_tanh`, 21 for `groupnorm21`), **no graph
  inputs**, one output `loss` (float32 scalar)
  `= ReduceSum(out_0 * R0) [+ ReduceSum(out_1 * R1) ...]`. Every operand of the op under
  test is an initializer, and so is every `R<i>` (so `grad_R<i>` is the op output).
  Integer and bool operands (indices, shapes, axes, pads, conditions) are initializers too,
  and are not trained (no gradient file).
* `loss.npy`: float32 scalar, the loss before any update.
* `grad_<initializer>.npy`: float32, d loss / d initializer, one file for **every float
  initializer** (initializer names are plain `[A-Za-z0-9_]`).

How a test consumes a case: compile `model.onnx --mode training --loss output`, read the
step's returned loss against `loss.npy`, and get the gradients, e.g. with `--optimizer sgd
--lr 1` (momentum 0, weight decay 0): after one step each parameter equals
`initial - grad`, so `grad = initial - trained` (initial values: `model.onnx`'s
initializers). Suggested tolerance: rtol 1e-4, atol 1e-5 (float32 against float32;
every gradient here agrees with a float64 autograd run to 1e-4 of its scale).

Constant nodes (only in the pattern cases `pow2_const`, `rmsnorm`, `gelu_erf`,
`gelu_tanh`, as torch's exporter writes them) are not initializers, hence frozen.
`dropout_ratio`'s `ratio` is a float initializer the output does not depend on: its
gradient is zeros. `batchnorm_training`'s `mean` and `var` are the running statistics
of a training-mode BatchNormalization: HetPar keeps them as state (role `buffer`), not
parameters, so they have no gradient file. GELU is covered both as the Erf and Tanh
patterns torch 1.13 exports and as ONNX's `Gelu` op (opset 20); `Gelu`, `Mish` (opset
18) and `GroupNormalization` (opsets 18 and 21) are newer than onnx 1.12, which therefore
does not check those five models.

| case | op | operands and attributes | gradient files |
| --- | --- | --- | --- |
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "Inputs", "grad"))
    ap.add_argument("--no-ort", action="store_true", help="skip the ONNX Runtime checks")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    torch.manual_seed(0)
    ort = None
    if not a.no_ort:
        try:
            import onnxruntime as ort
        except ImportError:
            print("onnxruntime not found: forward checks skipped", file=sys.stderr)
    build_cases()
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names), "duplicate case names"
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for c in CASES:
        if a.cases and c.name not in a.cases:
            continue
        gr = write_case(c, a.out, ort)
        rows.append(f"| `{c.name}` | {c.op} | {c.attrs} | {', '.join(gr)} |")
    if not a.cases:
        with open(os.path.join(a.out, "README.md"), "w") as f:
            f.write(README_HEAD + "\n".join(rows) + "\n")
    print(f"{len(rows)} cases written to {a.out}")


if __name__ == "__main__":
    main()
