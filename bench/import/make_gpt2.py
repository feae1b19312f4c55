#!/usr/bin/python3
"""Writes a GPT-2-shaped ONNX model with random weights, built node by node with the
onnx package (no PyTorch needed), for the import benchmark.

The default is GPT-2 small (Radford et al. 2019): 12 layers, hidden 768, 12 heads,
vocabulary 50257, 1024 positions, tied input/output embedding: 124.4 M parameters,
about 498 MB of float32 weights in the file. The graph follows Hugging Face's GPT-2:
pre-LayerNorm blocks, fused QKV projection split three ways, causal mask added to
the scaled scores, GELU (erf form), and logits from the transposed token embedding.
Nodes are named as PyTorch's exporter names Hugging Face's modules
(/transformer/wte/Gather, /transformer/h.0/attn/MatMul, /lm_head/MatMul).
bench/search/make_gpt.py builds GPT-3 sizes, without weights, with the same build().

Usage: make_gpt2.py OUT.onnx [--layers 12 --hidden 768 --heads 12 --vocab 50257
                              --positions 1024 --batch 1 --seq 128]
       [--external]  store weights in OUT.onnx.data instead of inside the model
       [--encoder]   a BERT-style encoder of the same blocks (no causal mask, the
                     final hidden states as output): BERT-base-sized with
                     --vocab 30522 --positions 512
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def materialize(name, shape, make):
    """The default tensor maker of build(): the float tensor NAME with make()'s values."""
    return numpy_helper.from_array(make(), name)


def build(layers, hidden, heads, vocab, positions, batch, seq, seed=0, tensor=materialize,
          encoder=False):
    """The model as an onnx.ModelProto; with ENCODER, a BERT-style encoder of the same
    blocks instead: no causal mask, and the output is the final LayerNorm's hidden
    states [batch, seq, hidden] (no LM head). Every float tensor of more than one element (the
    weights, LayerNorm scales and biases, the causal mask) comes from
    tensor(name, shape, make), where make() computes its values; a maker that never
    calls make() writes the graph without weights. Nodes are named the way PyTorch's
    exporter names Hugging Face's GPT-2, /transformer/h.<i>/attn/MatMul_1 and so on:
    the module path, the op type, and a count for the scope's later ops of that type;
    a node's output is named after it."""
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    rng = np.random.default_rng(seed)
    inits, nodes, counts = [], [], {}
    head_dim = hidden // heads

    def weight(name, shape, scale=0.02):
        inits.append(tensor(name, shape, lambda: (
            rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)))
        return name

    def filled(name, shape, value):
        inits.append(tensor(name, shape, lambda: np.full(shape, value, np.float32)))
        return name

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, inputs, scope, outputs=1, **attrs):
        k = counts.get((scope, op), 0)
        counts[scope, op] = k + 1
        name = f"{scope}/{op}" + (f"_{k}" if k else "")
        outs = [name] if outputs == 1 else [f"{name}_output_{j}" for j in range(outputs)]
        nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    wte = weight("wte", (vocab, hidden))
    wpe = weight("wpe", (positions, hidden))
    pos = const("position_ids", np.arange(seq, dtype=np.int64).reshape(1, seq))
    mask_shape = (1, 1, seq, seq)
    if not encoder:
        # float32's lowest above the diagonal, as Hugging Face's GPT-2 masks
        # (torch.finfo(dtype).min; older versions used -1e4).
        inits.append(tensor("causal_mask", mask_shape, lambda: np.triu(
            np.full((seq, seq), np.finfo(np.float32).min, np.float32),
            1).reshape(mask_shape)))
    const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    const("split_qkv", np.array([hidden] * 3, np.int64))
    const("heads_shape", np.array([batch, seq, heads, head_dim], np.int64))
    const("hidden_shape", np.array([batch, seq, hidden], np.int64))
    const("half", np.array(0.5, np.float32))
    const("one", np.array(1.0, np.float32))
    const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))

    def ln(x, prefix, scope):
        g = filled(prefix + ".weight", (hidden,), 1.0)
        b = filled(prefix + ".bias", (hidden,), 0.0)
        return node("LayerNormalization", [x, g, b], scope, axis=-1, epsilon=1e-5)

    h = node("Add", [node("Gather", [wte, "input_ids"], "/transformer/wte"),
                     node("Gather", [wpe, pos], "/transformer/wpe")], "/transformer")
    for i in range(layers):
        p, scope = f"h{i}.", f"/transformer/h.{i}"
        attn, mlp = scope + "/attn", scope + "/mlp"

        def linear(x, tag, fan_in, fan_out):
            w = weight(p + tag + ".weight", (fan_in, fan_out))
            b = filled(p + tag + ".bias", (fan_out,), 0.0)
            s = scope + "/" + tag.replace(".", "/")
            return node("Add", [node("MatMul", [x, w], s), b], s)

        x = ln(h, p + "ln_1", scope + "/ln_1")
        q, k, v = node("Split", [linear(x, "attn.c_attn", hidden, 3 * hidden), "split_qkv"],
                       attn, outputs=3, axis=-1)

        def heads_of(t, perm):
            return node("Transpose", [node("Reshape", [t, "heads_shape"], attn)], attn, perm=perm)

        qh, kh, vh = heads_of(q, [0, 2, 1, 3]), heads_of(k, [0, 2, 3, 1]), heads_of(v, [0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [qh, kh], attn), "scale"], attn)
        if not encoder:
            s = node("Add", [s, "causal_mask"], attn)
        probs = node("Softmax", [s], attn, axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, vh], attn)], attn, perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "hidden_shape"], attn)
        h = node("Add", [h, linear(ctx, "attn.c_proj", hidden, hidden)], scope)
        x = linear(ln(h, p + "ln_2", scope + "/ln_2"), "mlp.c_fc", hidden, 4 * hidden)
        act = mlp + "/act"
        erf = node("Erf", [node("Mul", [x, "inv_sqrt2"], act)], act)
        gelu = node("Mul", [node("Mul", [x, "half"], act), node("Add", [erf, "one"], act)], act)
        h = node("Add", [h, linear(gelu, "mlp.c_proj", 4 * hidden, hidden)], scope)
    h = ln(h, "ln_f", "/transformer/ln_f")
    if encoder:
        nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"],
                                      name="/encoder/Identity"))
        output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                               [batch, seq, hidden])
    else:
        wte_t = node("Transpose", [wte], "/lm_head", perm=[1, 0])
        nodes.append(helper.make_node("MatMul", [h, wte_t], ["logits"], name="/lm_head/MatMul"))
        output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, seq, vocab])

    graph = helper.make_graph(
        nodes, "encoder" if encoder else "gpt2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])],
        [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="hetpar-bench")
    model.ir_version = 8
    return model


def parameters(model):
    """The number of float parameters (the elements of the float initializers)."""
    floats = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer
               if t.data_type in floats)


def save(model, out, external):
    """Writes MODEL to OUT (its tensors of 1 kB or more to OUT.data if EXTERNAL) and
    prints its size."""
    if external:
        onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(out) + ".data", size_threshold=1024)
    else:
        onnx.save_model(model, out)
    print(f"{out}: {parameters(model) / 1e6:.1f} M parameters, "
          f"{os.path.getsize(out) / 1e6:.1f} MB")


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
    ap.add_argument("--encoder", action="store_true",
                    help="a BERT-style encoder of the same blocks: no causal mask, no LM head")
    a = ap.parse_args()
    model = build(a.layers, a.hidden, a.heads, a.vocab, a.positions, a.batch, a.seq,
                  encoder=a.encoder)
    save(model, a.out, a.external)


if __name__ == "__main__":
    main()
