#!/usr/bin/python3
"""Writes a GPT-2-shaped ONNX model with random weights, built node by node with the
onnx package (no PyTorch needed), for the import benchmark.

The default is GPT-2 small (Radford et al. 2019): 12 layers, hidden 768, 12 heads,
vocabulary 50257, 1024 positions, tied input/output embedding: 124.4 M parameters,
about 498 MB of float32 weights in the file. The graph follows Hugging Face's GPT-2:
pre-LayerNorm blocks, fused QKV projection split three ways, causal mask added to
the scaled scores, GELU (erf form), and logits from the transposed token embedding.

Usage: make_gpt2.py OUT.onnx [--layers 12 --hidden 768 --heads 12 --vocab 50257
                              --positions 1024 --batch 1 --seq 128]
       [--external]  store weights in OUT.onnx.data instead of inside the model
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers, hidden, heads, vocab, positions, batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    head_dim = hidden // heads

    def weight(name, shape, scale=0.02):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32), name))
        return name

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    wte = weight("wte", (vocab, hidden))
    wpe = weight("wpe", (positions, hidden))
    pos = const("position_ids", np.arange(seq, dtype=np.int64).reshape(1, seq))
    mask = np.triu(np.full((seq, seq), -1e4, np.float32), 1).reshape(1, 1, seq, seq)
    const("causal_mask", mask)
    const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    const("split_qkv", np.array([hidden] * 3, np.int64))
    const("heads_shape", np.array([batch, seq, heads, head_dim], np.int64))
    const("hidden_shape", np.array([batch, seq, hidden], np.int64))
    const("half", np.array(0.5, np.float32))
    const("one", np.array(1.0, np.float32))
    const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))

    h = node("Add", [node("Gather", [wte, "input_ids"], "tok_emb"),
                     node("Gather", [wpe, pos], "pos_emb")], "emb")
    for i in range(layers):
        p = f"h{i}."

        def ln(x, tag):
            g = const(p + tag + ".weight", np.ones(hidden, np.float32))
            b = const(p + tag + ".bias", np.zeros(hidden, np.float32))
            return node("LayerNormalization", [x, g, b], p + tag, axis=-1, epsilon=1e-5)

        def linear(x, tag, fan_in, fan_out):
            w = weight(p + tag + ".weight", (fan_in, fan_out))
            b = const(p + tag + ".bias", np.zeros(fan_out, np.float32))
            return node("Add", [node("MatMul", [x, w], p + tag + ".matmul"), b], p + tag)

        x = ln(h, "ln_1")
        qkv = linear(x, "attn.c_attn", hidden, 3 * hidden)
        q, k, v = p + "q", p + "k", p + "v"
        nodes.append(helper.make_node("Split", [qkv, "split_qkv"], [q, k, v], name=p + "split",
                                      axis=-1))

        def heads_of(t, perm):
            r = node("Reshape", [t, "heads_shape"], t + ".heads")
            return node("Transpose", [r], t + ".t", perm=perm)

        qh, kh, vh = heads_of(q, [0, 2, 1, 3]), heads_of(k, [0, 2, 3, 1]), heads_of(v, [0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [qh, kh], p + "scores"), "scale"], p + "scaled")
        probs = node("Softmax", [node("Add", [s, "causal_mask"], p + "masked")], p + "probs",
                     axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, vh], p + "ctx")], p + "ctx.t",
                   perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "hidden_shape"], p + "ctx.merged")
        h = node("Add", [h, linear(ctx, "attn.c_proj", hidden, hidden)], p + "res1")
        x = linear(ln(h, "ln_2"), "mlp.c_fc", hidden, 4 * hidden)
        erf = node("Erf", [node("Mul", [x, "inv_sqrt2"], p + "gelu.scaled")], p + "gelu.erf")
        gelu = node("Mul", [node("Mul", [x, "half"], p + "gelu.half"),
                            node("Add", [erf, "one"], p + "gelu.plus1")], p + "gelu")
        h = node("Add", [h, linear(gelu, "mlp.c_proj", 4 * hidden, hidden)], p + "res2")
    g = const("ln_f.weight", np.ones(hidden, np.float32))
    b = const("ln_f.bias", np.zeros(hidden, np.float32))
    h = node("LayerNormalization", [h, g, b], "ln_f", axis=-1, epsilon=1e-5)
    nodes.append(helper.make_node("Transpose", [wte], ["wte.t"], name="lm_head.t", perm=[1, 0]))
    nodes.append(helper.make_node("MatMul", [h, "wte.t"], ["logits"], name="lm_head"))

    graph = helper.make_graph(
        nodes, "gpt2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, seq, vocab])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="hetpar-bench")
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--external", action="store_true")
    a = ap.parse_args()
    model = build(a.layers, a.hidden, a.heads, a.vocab, a.positions, a.batch, a.seq)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.data_type == TensorProto.FLOAT)
    if a.external:
        onnx.save_model(model, a.out, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(a.out) + ".data", size_threshold=1024)
    else:
        onnx.save_model(model, a.out)
    print(f"{a.out}: {params / 1e6:.1f} M parameters, {os.path.getsize(a.out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
