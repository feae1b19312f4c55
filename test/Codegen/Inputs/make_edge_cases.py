#!/usr/bin/env python3
"""Writes the code generation edge cases into OUTDIR, one folder per case:
model.onnx, input_<i>.npy and expected_<i>.npy.

Usage: make_edge_cases.py OUTDIR

Every expected value is written out by hand below (from the ONNX operator
specification), never computed by a reference implementation. The data that
matters comes in as graph inputs, so that folding cannot compute the result
at compile time and the generated kernels do the work.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -(2 ** 63)


def model(nodes, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph(nodes, "edge", inputs, outputs,
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="make_edge_cases.py")
    onnx.checker.check_model(m)
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


CASES = {}

# Gather with indices [0, -1] on a 3x4 matrix: rows 0 and 2 (-1 is the last).
CASES["gather_negative_index"] = (
    model([helper.make_node("Gather", ["x", "idx"], ["y"], axis=0)],
          [f32("x", [3, 4])], [f32("y", [2, 4])], [i64("idx", [0, -1])]),
    [np.arange(12, dtype=np.float32).reshape(3, 4)],
    [np.array([[0, 1, 2, 3], [8, 9, 10, 11]], dtype=np.float32)])

# Slice of [1,2,3,4], start -1, step -1: end INT_MAX clamps to the last
# element, so the range from 3 down to 3 is empty; end INT_MIN clamps to -1
# (before the first element), so the whole tensor reversed.
for end, expected, tag in [(INT64_MAX, [], "int_max"),
                           (INT64_MIN, [4, 3, 2, 1], "int_min")]:
    CASES["slice_reverse_end_" + tag] = (
        model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
              [f32("x", [4])], [f32("y", [len(expected)])],
              [i64("starts", [-1]), i64("ends", [end]), i64("axes", [0]),
               i64("steps", [-1])]),
        [np.array([1, 2, 3, 4], dtype=np.float32)],
        [np.array(expected, dtype=np.float32)])

# MatMul (2,3) x (4,3,5) -> (4,2,5): A broadcasts over B's batch. With A
# selecting rows 0 and 1, out[b, i, j] = B[b, i, j] = 15b + 5i + j.
CASES["matmul_broadcast_batch"] = (
    model([helper.make_node("MatMul", ["a", "b"], ["y"])],
          [f32("a", [2, 3]), f32("b", [4, 3, 5])], [f32("y", [4, 2, 5])]),
    [np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32),
     np.arange(60, dtype=np.float32).reshape(4, 3, 5)],
    [np.array([[[15 * b + 5 * i + j for j in range(5)] for i in range(2)]
               for b in range(4)], dtype=np.float32)])

# Matrix transposes that hetpar-onnx-fold-transposes turns into Gemm's
# transA/transB (inputs, not initializers, which constant folding would
# transpose at compile time). Small integers, so every product is exact.
# A tied LM head: h (2,3,4) times the transpose of an embedding e (5,4);
# out[b, s, v] = sum_k h[b, s, k] * e[v, k].
h_tied = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5) - 2
e_tied = (np.arange(20, dtype=np.float32).reshape(5, 4) % 7) - 3
CASES["matmul_transposed_weight"] = (
    model([helper.make_node("Transpose", ["e"], ["et"], perm=[1, 0]),
           helper.make_node("MatMul", ["h", "et"], ["y"])],
          [f32("h", [2, 3, 4]), f32("e", [5, 4])], [f32("y", [2, 3, 5])]),
    [h_tied, e_tied],
    [np.einsum("bsk,vk->bsv", h_tied, e_tied).astype(np.float32)])

# Transpose(x) (4,3) -> (3,4) times b (4,2): out[i, j] = sum_k x[k, i] b[k, j].
x_left = (np.arange(12, dtype=np.float32).reshape(4, 3) % 4) - 1
b_left = (np.arange(8, dtype=np.float32).reshape(4, 2) % 3) - 1
CASES["matmul_transposed_left"] = (
    model([helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
           helper.make_node("MatMul", ["xt", "b"], ["y"])],
          [f32("x", [4, 3]), f32("b", [4, 2])], [f32("y", [3, 2])]),
    [x_left, b_left],
    [np.einsum("ki,kj->ij", x_left, b_left).astype(np.float32)])

# Gemm(a, Transpose(w), c, transB=1) is a (3,4) times w (4,2) plus c.
a_g = (np.arange(12, dtype=np.float32).reshape(3, 4) % 5) - 2
w_g = (np.arange(8, dtype=np.float32).reshape(4, 2) % 3) - 1
c_g = np.array([10, -10], dtype=np.float32)
CASES["gemm_transposed_operand"] = (
    model([helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
           helper.make_node("Gemm", ["a", "wt", "c"], ["y"], transB=1)],
          [f32("a", [3, 4]), f32("w", [4, 2])], [f32("y", [3, 2])],
          [numpy_helper.from_array(c_g, "c")]),
    [a_g, w_g],
    [(np.einsum("ik,kj->ij", a_g, w_g) + c_g).astype(np.float32)])

# LayerNormalization over an extent of 1: x - mean is 0, so y = bias.
CASES["layernorm_extent_1"] = (
    model([helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)],
          [f32("x", [2, 3, 1])], [f32("y", [2, 3, 1])],
          [numpy_helper.from_array(np.array([2.0], dtype=np.float32), "scale"),
           numpy_helper.from_array(np.array([0.5], dtype=np.float32), "bias")]),
    [np.array([[[1.0], [-7.0], [3.5]], [[0.0], [100.0], [2.0]]], dtype=np.float32)],
    [np.full((2, 3, 1), 0.5, dtype=np.float32)])

# A residual Add and a bias row computing LayerNormalization's X (its
# prologue, run in the LayerNorm's kernel), X read again after the LayerNorm
# (so it must be stored). x = a + b + c: rows [-1, 1, -1, 1] and
# [1, 3, 1, 3], each of variance 1 (epsilon 0): normalized [-1, 1, -1, 1],
# times scale [1, 2, 3, 4] plus 0.5 = [-0.5, 2.5, -2.5, 4.5]; y = that + x.
CASES["layernorm_residual_prologue"] = (
    model([helper.make_node("Add", ["a", "b"], ["s"]),
           helper.make_node("Add", ["s", "c"], ["x"]),
           helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["n"],
                            axis=-1, epsilon=0.0),
           helper.make_node("Add", ["n", "x"], ["y"])],
          [f32("a", [2, 4]), f32("b", [2, 4])], [f32("y", [2, 4])],
          [numpy_helper.from_array(np.ones(4, dtype=np.float32), "c"),
           numpy_helper.from_array(np.array([1, 2, 3, 4], dtype=np.float32), "scale"),
           numpy_helper.from_array(np.full(4, 0.5, dtype=np.float32), "bias")]),
    [np.array([[-1, -1, -1, -1], [1, 1, 1, 1]], dtype=np.float32),
     np.array([[-1, 1, -1, 1], [-1, 1, -1, 1]], dtype=np.float32)],
    [np.array([[-1.5, 3.5, -3.5, 5.5], [0.5, 5.5, -1.5, 7.5]], dtype=np.float32)])

# Expand of a [2,2] tensor to [1,2] keeps [2,2]; to [2,1,1] gives [2,2,2]
# (numpy broadcasting of both shapes).
x22 = np.array([[1, 2], [3, 4]], dtype=np.float32)
CASES["expand_to_1x2"] = (
    model([helper.make_node("Expand", ["x", "shape"], ["y"])],
          [f32("x", [2, 2])], [f32("y", [2, 2])], [i64("shape", [1, 2])]),
    [x22], [np.array([[1, 2], [3, 4]], dtype=np.float32)])
CASES["expand_to_2x1x1"] = (
    model([helper.make_node("Expand", ["x", "shape"], ["y"])],
          [f32("x", [2, 2])], [f32("y", [2, 2, 2])], [i64("shape", [2, 1, 1])]),
    [x22], [np.array([[[1, 2], [3, 4]], [[1, 2], [3, 4]]], dtype=np.float32)])

# Concat of a [0] tensor and [1,2] gives [1,2].
CASES["concat_empty"] = (
    model([helper.make_node("Concat", ["a", "b"], ["y"], axis=0)],
          [f32("a", [0]), f32("b", [2])], [f32("y", [2])]),
    [np.zeros((0,), dtype=np.float32), np.array([1, 2], dtype=np.float32)],
    [np.array([1, 2], dtype=np.float32)])

# Reshape of [0,3,4] to [3,4,0] with allowzero=1: the 0 is an extent, not
# "copy the input's dimension".
CASES["reshape_allowzero"] = (
    model([helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
          [f32("x", [0, 3, 4])], [f32("y", [3, 4, 0])], [i64("shape", [3, 4, 0])]),
    [np.zeros((0, 3, 4), dtype=np.float32)],
    [np.zeros((3, 4, 0), dtype=np.float32)])

# Scalars (rank 0) through layout kernels: Transpose of a scalar is the
# scalar, Neg of it -2.5; Expand of a scalar fills the shape.
CASES["scalar_transpose"] = (
    model([helper.make_node("Transpose", ["x"], ["t"]),
           helper.make_node("Neg", ["t"], ["y"])],
          [f32("x", [])], [f32("y", [])]),
    [np.array(2.5, dtype=np.float32)], [np.array(-2.5, dtype=np.float32)])
CASES["scalar_expand"] = (
    model([helper.make_node("Expand", ["x", "shape"], ["y"])],
          [f32("x", [])], [f32("y", [2, 3])], [i64("shape", [2, 3])]),
    [np.array(2.5, dtype=np.float32)], [np.full((2, 3), 2.5, dtype=np.float32)])

# MatMul with an empty contraction: (2,0) x (0,3) is a 2x3 matrix of zeros
# (a sum of no terms).
CASES["matmul_empty_k"] = (
    model([helper.make_node("MatMul", ["a", "b"], ["y"])],
          [f32("a", [2, 0]), f32("b", [0, 3])], [f32("y", [2, 3])]),
    [np.zeros((2, 0), dtype=np.float32), np.zeros((0, 3), dtype=np.float32)],
    [np.zeros((2, 3), dtype=np.float32)])

# Relu keeps NaN (max(x, 0) with NaN propagating, as ONNX Runtime and
# PyTorch do); -1 becomes 0.
CASES["relu_nan"] = (
    model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [3])], [f32("y", [3])]),
    [np.array([np.nan, -1.0, 2.0], dtype=np.float32)],
    [np.array([np.nan, 0.0, 2.0], dtype=np.float32)])

# Sign of NaN is NaN (ONNX's reference, ONNX Runtime); it gave 0.
CASES["sign_nan"] = (
    model([helper.make_node("Sign", ["x"], ["y"])], [f32("x", [4])], [f32("y", [4])]),
    [np.array([np.nan, -2.0, 0.0, 3.0], dtype=np.float32)],
    [np.array([np.nan, -1.0, 0.0, 1.0], dtype=np.float32)])

# Squeeze with an empty axes list removes every dimension of extent 1, as
# ONNX's inference and ONNX Runtime read it (HetPar kept them and then
# refused the model's output type).
CASES["squeeze_empty_axes"] = (
    model([helper.make_node("Squeeze", ["x", "axes"], ["y"])],
          [f32("x", [1, 3, 1])], [f32("y", [3])],
          [numpy_helper.from_array(np.zeros(0, dtype=np.int64), "axes")]),
    [np.array([[[1.0], [2.0], [3.0]]], dtype=np.float32)],
    [np.array([1.0, 2.0, 3.0], dtype=np.float32)])

# Clip without a lower bound clamps to float's lowest value, as ONNX says
# (numeric_limits::lowest()) and ONNX Runtime does, so -inf becomes -FLT_MAX;
# NaN stays NaN. The same after a Conv, where hetpar-onnx-fuse-conv makes
# the Clip the convolution's epilogue (a 1 x 1 Conv of weight 1).
LOWEST = np.finfo(np.float32).min
CASES["clip_missing_min_inf"] = (
    model([helper.make_node("Clip", ["x", "", "hi"], ["y"])],
          [f32("x", [5])], [f32("y", [5])],
          [numpy_helper.from_array(np.array(0.25, dtype=np.float32), "hi")]),
    [np.array([-np.inf, np.inf, 1.0, -2.0, np.nan], dtype=np.float32)],
    [np.array([LOWEST, 0.25, 0.25, -2.0, np.nan], dtype=np.float32)])
CASES["conv_clip_missing_min_inf"] = (
    model([helper.make_node("Conv", ["x", "w"], ["c"]),
           helper.make_node("Clip", ["c", "", "hi"], ["y"])],
          [f32("x", [1, 1, 1, 5])], [f32("y", [1, 1, 1, 5])],
          [numpy_helper.from_array(np.ones((1, 1, 1, 1), dtype=np.float32), "w"),
           numpy_helper.from_array(np.array(0.25, dtype=np.float32), "hi")]),
    [np.array([-np.inf, np.inf, 1.0, -2.0, np.nan], dtype=np.float32).reshape(1, 1, 1, 5)],
    [np.array([LOWEST, 0.25, 0.25, -2.0, np.nan], dtype=np.float32).reshape(1, 1, 1, 5)])

# 3-D convolutions (hp_conv_nd_launch: im2col and a GEMM on the CPU, cuDNN
# on the GPU), against a direct loop over ONNX's definition (pads as begin
# then end per axis, the window at o * stride - pad_begin + k * dilation).
# Small integers, so every float sum is exact in any order.
def conv_reference(x, w, b, group, strides, pads, dilations):
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    nsp = x.ndim - 2
    ks, ins = w.shape[2:], x.shape[2:]
    outs = [(ins[d] + pads[d] + pads[d + nsp] - dilations[d] * (ks[d] - 1) - 1)
            // strides[d] + 1 for d in range(nsp)]
    y = np.zeros([n, m] + outs, dtype=np.int64)
    mg = m // group
    for o in np.ndindex(*outs):
        for k in np.ndindex(*ks):
            at = [o[d] * strides[d] - pads[d] + k[d] * dilations[d] for d in range(nsp)]
            if any(a < 0 or a >= ins[d] for d, a in enumerate(at)):
                continue
            for g in range(group):
                xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + tuple(at)]
                ws = w[(slice(g * mg, (g + 1) * mg), slice(None)) + k]
                y[(slice(None), slice(g * mg, (g + 1) * mg)) + o] += xs.astype(np.int64) @ ws.T.astype(np.int64)
    return (y + b.reshape([1, m] + [1] * nsp)).astype(np.float32)


rng3 = np.random.default_rng(3)
x3 = rng3.integers(-3, 4, size=(2, 4, 4, 5, 3)).astype(np.float32)
w3 = rng3.integers(-2, 3, size=(6, 2, 3, 2, 2)).astype(np.float32)
b3 = rng3.integers(-5, 6, size=6).astype(np.float32)
CASES["conv3d_grouped_strided"] = (
    model([helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2,
                            strides=[1, 2, 1], pads=[1, 0, 1, 1, 1, 0],
                            dilations=[1, 1, 2])],
          [f32("x", [2, 4, 4, 5, 3])], [f32("y", [2, 6, 4, 3, 2])],
          [numpy_helper.from_array(w3, "w"), numpy_helper.from_array(b3, "b")]),
    [x3], [conv_reference(x3, w3, b3, 2, [1, 2, 1], [1, 0, 1, 1, 1, 0], [1, 1, 2])])
w3p = rng3.integers(-2, 3, size=(3, 4, 1, 1, 1)).astype(np.float32)
CASES["conv3d_pointwise"] = (
    model([helper.make_node("Conv", ["x", "w"], ["y"])],
          [f32("x", [2, 4, 4, 5, 3])], [f32("y", [2, 3, 4, 5, 3])],
          [numpy_helper.from_array(w3p, "w")]),
    [x3], [conv_reference(x3, w3p, np.zeros(3, dtype=np.float32), 1, [1, 1, 1],
                          [0] * 6, [1, 1, 1])])

# Dropout in training mode with ratio 0 (PyTorch's F.dropout(x, p=0.0)) is
# the identity, and its mask is all true.
CASES["dropout_ratio_0_training"] = (
    model([helper.make_node("Dropout", ["x", "ratio", "training"], ["y"])],
          [f32("x", [2, 2])], [f32("y", [2, 2])],
          [numpy_helper.from_array(np.array(0.0, dtype=np.float32), "ratio"),
           numpy_helper.from_array(np.array(True), "training")]),
    [np.array([[1, 2], [3, 4]], dtype=np.float32)],
    [np.array([[1, 2], [3, 4]], dtype=np.float32)])

# Einsum: the implicit output of "ij,jk" is "ik" (a matmul: 1*5 + 2*7 = 19,
# ...); "ii->" is the trace (1 + 4); "..." broadcasts a batch of 1 against 2:
# out[b] = A[b] (1x2) times B[0] (2x1): 1*10 + 2*20 = 50, 3*10 + 4*20 = 110.
def einsum(eq, shapes, out_shape):
    names = ["x%d" % i for i in range(len(shapes))]
    return model([helper.make_node("Einsum", names, ["y"], equation=eq)],
                 [f32(n, s) for n, s in zip(names, shapes)], [f32("y", out_shape)])
CASES["einsum_implicit_output"] = (
    einsum("ij,jk", [[2, 2], [2, 2]], [2, 2]),
    [np.array([[1, 2], [3, 4]], dtype=np.float32), np.array([[5, 6], [7, 8]], dtype=np.float32)],
    [np.array([[19, 22], [43, 50]], dtype=np.float32)])
CASES["einsum_trace"] = (
    einsum("ii->", [[2, 2]], []),
    [np.array([[1, 2], [3, 4]], dtype=np.float32)], [np.array(5, dtype=np.float32)])
CASES["einsum_ellipsis_broadcast"] = (
    einsum("...ij,...jk->...ik", [[2, 1, 2], [1, 2, 1]], [2, 1, 1]),
    [np.array([[[1, 2]], [[3, 4]]], dtype=np.float32), np.array([[[10], [20]]], dtype=np.float32)],
    [np.array([[[50]], [[110]]], dtype=np.float32)])


# A Gemm whose product a chain of scalar ops finishes (its epilogue:
# Mul by 2, then Relu), on a right-hand side from the graph (so the GEMM
# runs unpacked and the epilogue is its own pass): A B = [[1*1 + 2*1,
# 1*-1 + 2*-2], [3*1 + 4*1, 3*-1 + 4*-2]] = [[3, -5], [7, -11]], times 2,
# negatives to 0.
CASES["gemm_scale_relu_epilogue"] = (
    model([helper.make_node("Gemm", ["a", "b"], ["p"]),
           helper.make_node("Mul", ["p", "two"], ["s"]),
           helper.make_node("Relu", ["s"], ["y"])],
          [f32("a", [2, 2]), f32("b", [2, 2])], [f32("y", [2, 2])],
          [numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")]),
    [np.array([[1, 2], [3, 4]], dtype=np.float32), np.array([[1, -1], [1, -2]], dtype=np.float32)],
    [np.array([[6, 0], [14, 0]], dtype=np.float32)])

# Gemm with a scalar C and one output column: C is broadcast, not taken for
# the bias row it has the size of (its empty shape has no last extent to
# compare; found by the onnx-mutate fuzzer). y = a b + 0.5: 1*1 + 2*2 + 3*(-1)
# + 0.5 = 2.5 and 4*1 + 5*2 + 6*(-1) + 0.5 = 8.5.
CASES["gemm_scalar_c_one_column"] = (
    model([helper.make_node("Gemm", ["a", "b", "c"], ["y"])],
          [f32("a", [2, 3]), f32("b", [3, 1]), f32("c", [])], [f32("y", [2, 1])]),
    [np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32),
     np.array([[1], [2], [-1]], dtype=np.float32), np.array(0.5, dtype=np.float32)],
    [np.array([[2.5], [8.5]], dtype=np.float32)])

# Pooling windows far larger than the input (SAME-padded kernels of 40000 x
# 40000 and 1000^3 positions, under the 2^31 limit): every window covers the
# whole input, so each output is the plane's maximum or mean (by hand: 63 and
# 31.5 of a permutation of 0..63; per plane of 2 x 3 x 4 = 24 values, 23 and
# 47). The kernels visit only the positions inside the input; one by one,
# 1.6 x 10^9 per output ran for hours.
POOL_X = np.random.RandomState(5).permutation(64).astype(np.float32).reshape(1, 1, 8, 8)
CASES["maxpool_window_past_input"] = (
    model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[40000, 40000],
                            auto_pad="SAME_UPPER")],
          [f32("x", [1, 1, 8, 8])], [f32("y", [1, 1, 8, 8])]),
    [POOL_X], [np.full((1, 1, 8, 8), 63, dtype=np.float32)])
CASES["avgpool_window_past_input"] = (
    model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[40000, 40000],
                            auto_pad="SAME_LOWER")],
          [f32("x", [1, 1, 8, 8])], [f32("y", [1, 1, 8, 8])]),
    [POOL_X], [np.full((1, 1, 8, 8), 31.5, dtype=np.float32)])
CASES["maxpool3d_window_past_input"] = (
    model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1000, 1000, 1000],
                            auto_pad="SAME_UPPER")],
          [f32("x", [1, 2, 2, 3, 4])], [f32("y", [1, 2, 2, 3, 4])]),
    [np.arange(48, dtype=np.float32).reshape(1, 2, 2, 3, 4)],
    [np.concatenate([np.full((1, 1, 2, 3, 4), 23, dtype=np.float32),
                     np.full((1, 1, 2, 3, 4), 47, dtype=np.float32)], axis=1)])

# Integer division by values that arrive at run time: ONNX leaves x / 0
# undefined; HetPar gives 0 (NumPy's result) and INT_MIN / -1 wraps to
# INT_MIN (NumPy's), where C's division traps (SIGFPE killed hetpar-run with
# no message). Mod, C's remainder (fmod 1) or the divisor's sign (fmod 0),
# gives 0 for both. By hand: 5/0 = 0, -7/2 = -3 (toward zero), INT_MIN/-1 =
# INT_MIN, 9/-3 = -3; remainders 0, -1, 0, 0 (fmod 1) and 0, 1, 0, 0 (fmod 0:
# -7 mod 2 = 1).
INT_A = np.array([5, -7, -2 ** 31, 9], dtype=np.int32)
INT_B = np.array([0, 2, -1, -3], dtype=np.int32)
def int_binary(op, **attrs):
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.INT32, [4])
    return model([helper.make_node(op, ["a", "b"], ["y"], **attrs)], [vi("a"), vi("b")], [vi("y")])
CASES["div_int_by_zero_and_min_by_minus_one"] = (
    int_binary("Div"), [INT_A, INT_B], [np.array([0, -3, -2 ** 31, -3], dtype=np.int32)])
CASES["mod_fmod_int_by_zero_and_min_by_minus_one"] = (
    int_binary("Mod", fmod=1), [INT_A, INT_B], [np.array([0, -1, 0, 0], dtype=np.int32)])
CASES["mod_int_by_zero_and_min_by_minus_one"] = (
    int_binary("Mod"), [INT_A, INT_B], [np.array([0, 1, 0, 0], dtype=np.int32)])

# Integer powers past the type's range wrap, as NumPy's do (C++ leaves a
# signed product that overflows undefined; UBSan flags it). By hand,
# modulo 2^32: 3^20 = 3486784401 -> -808182895; (-3)^21 = -10460353203 ->
# -1870418611; 46341^2 = 2147488281 -> -2147479015; 2^31 -> -2^31; and with
# the constant exponent 2 (a product, not a loop): 65536^2 = 2^32 -> 0.
def wrap32(v):
    return ((v + 2 ** 31) % 2 ** 32) - 2 ** 31
POW_A = np.array([3, -3, 46341, 2], dtype=np.int32)
POW_E = np.array([20, 21, 2, 31], dtype=np.int32)
CASES["pow_int32_wraps"] = (
    int_binary("Pow"), [POW_A, POW_E],
    [np.array([wrap32(int(a) ** int(e)) for a, e in zip(POW_A, POW_E)], dtype=np.int32)])
SQUARE_X = np.array([46341, -46341, 65536, 7], dtype=np.int32)
CASES["pow_int32_square_wraps"] = (
    model([helper.make_node("Constant", [], ["two"],
                            value=helper.make_tensor("two", TensorProto.INT32, [], [2])),
           helper.make_node("Pow", ["a", "two"], ["y"])],
          [helper.make_tensor_value_info("a", TensorProto.INT32, [4])],
          [helper.make_tensor_value_info("y", TensorProto.INT32, [4])]),
    [SQUARE_X], [np.array([-2147479015, -2147479015, 0, 49], dtype=np.int32)])

# Reductions of integers keep the data type's range: ReduceMax and ReduceMin
# of uint64 values at or above 2^63 (which do not fit an int64), and the
# identity of an empty reduction, which ONNX defines as the data type's
# lowest (ReduceMax) or highest (ReduceMin) value: INT32_MIN for int32, 0
# and 2^64 - 1 for uint64.
def reduce_case(op, dtype, shape, out_shape):
    t = {np.int32: TensorProto.INT32, np.uint32: TensorProto.UINT32,
         np.uint64: TensorProto.UINT64}[dtype]
    return model([helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=0)],
                 [helper.make_tensor_value_info("x", t, shape)],
                 [helper.make_tensor_value_info("y", t, out_shape)], opset=13)


U64_BIG = np.array([[2 ** 63 + 1, 5], [3, 2 ** 64 - 1]], dtype=np.uint64)
CASES["reducemax_uint64_high"] = (
    reduce_case("ReduceMax", np.uint64, [2, 2], [2]), [U64_BIG],
    [np.array([2 ** 63 + 1, 2 ** 64 - 1], dtype=np.uint64)])
CASES["reducemin_uint64_high"] = (
    reduce_case("ReduceMin", np.uint64, [2, 2], [2]), [U64_BIG],
    [np.array([5, 3], dtype=np.uint64)])
CASES["reducemax_int32_empty"] = (
    reduce_case("ReduceMax", np.int32, [2, 0], [2]), [np.zeros((2, 0), dtype=np.int32)],
    [np.array([-2 ** 31, -2 ** 31], dtype=np.int32)])
CASES["reducemax_uint64_empty"] = (
    reduce_case("ReduceMax", np.uint64, [2, 0], [2]), [np.zeros((2, 0), dtype=np.uint64)],
    [np.array([0, 0], dtype=np.uint64)])
# ReduceLogSumExp of integers: log(sum(exp(x))) and the cast to the integer
# type, which truncates. int32 [4 x 20, 5]: log(e^4 (20 + e)) = 4 +
# log(22.718...) = 7.12... -> 7 (each exp(x - 5) term truncated to an integer
# gave 5); uint32 [0, 0, 3]: log(2 + e^3) = log(22.08...) = 3.09... -> 3 (an
# unsigned x - 3 wrapped).
CASES["reducelogsumexp_int32"] = (
    reduce_case("ReduceLogSumExp", np.int32, [1, 21], [1]),
    [np.array([[4] * 20 + [5]], dtype=np.int32)], [np.array([7], dtype=np.int32)])
CASES["reducelogsumexp_uint32"] = (
    reduce_case("ReduceLogSumExp", np.uint32, [1, 3], [1]),
    [np.array([[0, 0, 3]], dtype=np.uint32)], [np.array([3], dtype=np.uint32)])
CASES["reducemin_uint64_empty"] = (
    reduce_case("ReduceMin", np.uint64, [2, 0], [2]), [np.zeros((2, 0), dtype=np.uint64)],
    [np.array([2 ** 64 - 1, 2 ** 64 - 1], dtype=np.uint64)])

def main():
    out = sys.argv[1]
    for name, (m, inputs, expected) in CASES.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        for i, a in enumerate(inputs):
            np.save(os.path.join(d, "input_%d.npy" % i), a)
        for i, a in enumerate(expected):
            np.save(os.path.join(d, "expected_%d.npy" % i), a)
        print(name)


if __name__ == "__main__":
    main()
