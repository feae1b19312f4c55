"""Writes mha.onnx, a self-attention block in the form PyTorch exports
nn.MultiheadAttention(batch_first=True) (torch.nn.functional.
multi_head_attention_forward): the input [N, L, E] is transposed to the
sequence-first [L, N, E]; each projection is reshaped to [L, N*H, E/H] and
transposed to [N*H, L, E/H], so the batch is the outer part of a merged
batch-times-heads dimension; after attention the heads are merged back with
[L, N*H, E/H] -> [L*N, E], the output projection is a Gemm over those L*N
rows (the batch inside them, L outside), and [L*N, E] -> [L, N, E] and a
transpose give [N, L, E]; then the residual and a LayerNormalization.

Also writes an input (N=4, L=6, E=16, H=4) and the output computed here with
NumPy from the same weights. Deterministic (seed 0); run with
/usr/bin/python3."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N, L, E, H = 4, 6, 16, 4
D = E // H
rng = np.random.default_rng(0)
w = {n: (rng.standard_normal((E, E)) / 4).astype(np.float32)
     for n in ("wq", "wk", "wv", "wo")}
bo = (rng.standard_normal(E) / 4).astype(np.float32)
gamma = (1 + rng.standard_normal(E) / 8).astype(np.float32)
beta = (rng.standard_normal(E) / 8).astype(np.float32)
x = rng.standard_normal((N, L, E)).astype(np.float32)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


inits = [numpy_helper.from_array(v, k) for k, v in w.items()]
inits += [numpy_helper.from_array(bo, "bo"), numpy_helper.from_array(gamma, "gamma"),
          numpy_helper.from_array(beta, "beta"),
          const("heads_shape", [L, N * H, D]), const("rows_shape", [L * N, E]),
          const("seq_shape", [L, N, E]),
          const("scale", 1 / np.sqrt(D), np.float32)]
nodes = [helper.make_node("Transpose", ["x"], ["xs"], name="/attn/Transpose", perm=[1, 0, 2])]
for p in "qkv":
    nodes.append(helper.make_node("MatMul", ["xs", "w" + p], [p + "_lin"],
                                  name=f"/attn/{p}_proj/MatMul"))
    nodes.append(helper.make_node("Reshape", [p + "_lin", "heads_shape"], [p + "_heads"],
                                  name=f"/attn/{p}/Reshape"))
    nodes.append(helper.make_node("Transpose", [p + "_heads"], [p + "_t"],
                                  name=f"/attn/{p}/Transpose", perm=[1, 0, 2]))
nodes += [
    helper.make_node("Mul", ["q_t", "scale"], ["q_s"], name="/attn/Mul"),
    helper.make_node("Transpose", ["k_t"], ["k_tt"], name="/attn/k/Transpose_1", perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q_s", "k_tt"], ["scores"], name="/attn/MatMul"),
    helper.make_node("Softmax", ["scores"], ["probs"], name="/attn/Softmax", axis=-1),
    helper.make_node("MatMul", ["probs", "v_t"], ["ctx"], name="/attn/MatMul_1"),
    helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="/attn/Transpose_1", perm=[1, 0, 2]),
    helper.make_node("Reshape", ["ctx_t", "rows_shape"], ["rows"], name="/attn/Reshape_rows"),
    helper.make_node("Gemm", ["rows", "wo", "bo"], ["out_rows"], name="/attn/out_proj/Gemm",
                     transB=1),
    helper.make_node("Reshape", ["out_rows", "seq_shape"], ["out_seq"], name="/attn/Reshape_seq"),
    helper.make_node("Transpose", ["out_seq"], ["attn"], name="/attn/Transpose_2", perm=[1, 0, 2]),
    helper.make_node("Add", ["x", "attn"], ["res"], name="/Add"),
    helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], name="/norm",
                     axis=-1, epsilon=1e-5),
]
graph = helper.make_graph(
    nodes, "mha",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, L, E])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, L, E])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)

# The reference, step by step as the graph computes it.
xs = x.transpose(1, 0, 2)
heads = {p: (xs @ w["w" + p]).reshape(L, N * H, D).transpose(1, 0, 2) for p in "qkv"}
scores = (heads["q"] / np.sqrt(D)) @ heads["k"].transpose(0, 2, 1)
probs = np.exp(scores - scores.max(-1, keepdims=True))
probs /= probs.sum(-1, keepdims=True)
rows = (probs @ heads["v"]).transpose(1, 0, 2).reshape(L * N, E)
attn = (rows @ w["wo"].T + bo).reshape(L, N, E).transpose(1, 0, 2)
res = x + attn
mean = res.mean(-1, keepdims=True)
var = ((res - mean) ** 2).mean(-1, keepdims=True)
y = (res - mean) / np.sqrt(var + 1e-5) * gamma + beta

here = os.path.dirname(os.path.abspath(__file__))
onnx.save(model, os.path.join(here, "mha.onnx"))
os.makedirs(os.path.join(here, "mha"), exist_ok=True)
np.save(os.path.join(here, "mha", "input_0.npy"), x)
np.save(os.path.join(here, "mha", "output_0.npy"), y.astype(np.float32))
