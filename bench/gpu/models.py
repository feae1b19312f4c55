#!/usr/bin/env python3
"""The models of the GPU benchmark (bench/gpu/run.py), built deterministically, so
that the GPU machine, which has no HetPar compiler, rebuilds the very model the
program was compiled from here (bench/gpu/weights.py restores the weights from it).

  models.py NAME OUT.onnx      build one model
  models.py --list             the names, one a line: NAME DTYPE KIND

Every case is (builder, compute dtype, kind): "timing" cases are compared with
PyTorch eager's latency on the same GPU; "check" cases with PyTorch's float32
output (TF32 off). Needs numpy and onnx (Debian's 1.12 here, pip's there).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "import"))
import make_gpt2  # noqa: E402

FLOAT_MIN = np.finfo(np.float32).min


def attention(batch, heads, seq, dim, causal=False, padding=False, chain=1):
    """CHAIN scaled-dot-product attentions Softmax(Q Kᵀ / sqrt(D) + mask) V over
    inputs q, k, v [batch, heads, seq, dim], each attention's output the next one's
    queries, in the exporters' MatMul/Mul/Add/Softmax/MatMul form that
    hetpar-onnx-fuse-attention turns into one FusedAttention. CAUSAL adds the
    constant causal mask (float32's lowest above the diagonal, as Hugging Face);
    PADDING an additive key mask input [batch, 1, 1, seq]."""
    shape = [batch, heads, seq, dim]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    inits = [numpy_helper.from_array(np.array(1.0 / np.sqrt(dim), np.float32), "scale")]
    if causal:
        inits.append(numpy_helper.from_array(np.triu(np.full(
            (seq, seq), FLOAT_MIN, np.float32), 1).reshape(1, 1, seq, seq), "causal_mask"))
    if padding:
        inputs.append(helper.make_tensor_value_info("key_mask", TensorProto.FLOAT,
                                                    [batch, 1, 1, seq]))
    nodes, q = [], "q"
    for i in range(chain):
        p = "/attn%d/" % i
        nodes += [helper.make_node("Transpose", ["k"], [p + "kt"], name=p + "Transpose",
                                   perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", [q, p + "kt"], [p + "s"], name=p + "MatMul"),
                  helper.make_node("Mul", [p + "s", "scale"], [p + "m"], name=p + "Mul")]
        scores = p + "m"
        for mask in (["causal_mask"] if causal else []) + (["key_mask"] if padding else []):
            nodes.append(helper.make_node("Add", [scores, mask], [p + mask],
                                          name=p + "Add_" + mask))
            scores = p + mask
        out = "y" if i == chain - 1 else p + "y"
        nodes += [helper.make_node("Softmax", [scores], [p + "p"], name=p + "Softmax",
                                   axis=-1),
                  helper.make_node("MatMul", [p + "p", "v"], [out], name=p + "MatMul_1")]
        q = out
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              inits)
    return finish(graph)


def gemm_chain(tokens, hidden, layers):
    """LAYERS products x W_i of x [tokens, hidden] and W_i [hidden, hidden], each
    product the next one's x. The weights are written as a constant (1e-4): the
    GPU side fills them with random values (weights.py restore --fill)."""
    inits, nodes, x = [], [], "x"
    for i in range(layers):
        w = "w%d" % i
        inits.append(numpy_helper.from_array(np.full((hidden, hidden), 1e-4, np.float32), w))
        out = "y" if i == layers - 1 else "h%d" % i
        nodes.append(helper.make_node("MatMul", [x, w], [out], name="/gemm%d/MatMul" % i))
        x = out
    graph = helper.make_graph(
        nodes, "gemm_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [tokens, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [tokens, hidden])], inits)
    return finish(graph)


def finish(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="hetpar-bench-gpu")
    model.ir_version = 8
    return model


def gpt2_small(encoder=False):
    """GPT-2 small at 8 x 512 (bench/import/make_gpt2.py, seed 0); with ENCODER the
    BERT-base-sized encoder of the same blocks (vocabulary 30522, 512 positions)."""
    if encoder:
        return make_gpt2.build(12, 768, 12, 30522, 512, 8, 512, encoder=True)
    return make_gpt2.build(12, 768, 12, 50257, 1024, 8, 512)


# name: (builder, --dtype, kind)
CASES = {
    "gpt2-small-8x512-bf16": (lambda: gpt2_small(), "bfloat16", "timing"),
    "gpt2-small-8x512-f32": (lambda: gpt2_small(), "float32", "timing"),
    "encoder-base-8x512-bf16": (lambda: gpt2_small(encoder=True), "bfloat16", "timing"),
    "gemm-16384x8192x8192x4-bf16": (lambda: gemm_chain(16384, 8192, 4), "bfloat16", "timing"),
    "attn-b4h16l2048d128-bf16": (lambda: attention(4, 16, 2048, 128), "bfloat16", "timing"),
    "attn2-b4h16l2048d128-bf16": (lambda: attention(4, 16, 2048, 128, chain=2), "bfloat16",
                                  "timing"),
    "attn-causal-b4h16l2048d128-bf16": (lambda: attention(4, 16, 2048, 128, causal=True),
                                        "bfloat16", "timing"),
    "attn2-causal-b4h16l2048d128-bf16": (lambda: attention(4, 16, 2048, 128, causal=True,
                                                           chain=2), "bfloat16", "timing"),
    "attn-causal-b1h4l4096d64-f32": (lambda: attention(1, 4, 4096, 64, causal=True),
                                     "float32", "check"),
    "attn-padding-b2h4l777d64-f32": (lambda: attention(2, 4, 777, 64, padding=True),
                                     "float32", "check"),
    "attn-causal-b1h4l4096d64-bf16": (lambda: attention(1, 4, 4096, 64, causal=True),
                                      "bfloat16", "check"),
    "attn-padding-b2h4l777d64-bf16": (lambda: attention(2, 4, 777, 64, padding=True),
                                      "bfloat16", "check"),
    "attn-padding-b2h4l777d64-f16": (lambda: attention(2, 4, 777, 64, padding=True),
                                     "float16", "check"),
}


def main():
    if sys.argv[1:] == ["--list"]:
        for name, (_, dtype, kind) in CASES.items():
            print(name, dtype, kind)
        return 0
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        print("usage: models.py NAME OUT.onnx | --list", file=sys.stderr)
        return 2
    onnx.save_model(CASES[sys.argv[1]][0](), sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
