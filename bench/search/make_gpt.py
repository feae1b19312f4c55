#!/usr/bin/python3
"""Writes a GPT-shaped ONNX model, GPT-2 small up to GPT-3 175B, for the planner
benchmark. The graph is bench/import/make_gpt2.py's build(): pre-LayerNorm blocks,
fused QKV projection, dense causal attention, GELU MLP of width 4 x hidden, logits
from the tied token embedding, nodes named as PyTorch's exporter names Hugging
Face's GPT-2 (/transformer/wte/Gather, /transformer/h.<i>/ln_1/..., .../attn/...,
.../mlp/..., /transformer/ln_f/LayerNormalization, /lm_head/MatMul).

Presets (layers, hidden, heads, vocabulary, positions):
  gpt3-175b   96  12288  96  50257  2048   Brown et al. 2020, "Language Models are
  gpt3-13b    40   5120  40  50257  2048   Few-Shot Learners", Table 2.1 (n_layers,
  gpt3-6.7b   32   4096  32  50257  2048   d_model, n_heads, d_head; n_ctx = 2048
  gpt3-2.7b   32   2560  32  50257  2048   for all sizes). The vocabulary is GPT-2's
  gpt3-1.3b   24   2048  16  50257  2048   BPE, which GPT-3 reuses (Sec. 2.1).
  gpt2-small  12    768  12  50257  1024   Radford et al. 2019, Table 2 (12 layers,
                                           d_model 768), with Hugging Face's 'gpt2'
                                           config (12 heads, n_positions 1024).
Two rows of Table 2.1 do not multiply out, and heads x d_head = d_model is kept here:
GPT-3 XL (1.3B) has d_model 2048, n_heads 24 and d_head 128, and 24 heads do not
divide 2048: 16 heads of the table's d_head 128 do. GPT-3 13B has d_model 5140, which
its 40 heads do not divide: 40 x d_head 128 = 5120 is used. GPT-3 alternates dense
and locally banded sparse attention layers; every layer here is dense (the weights
are the same; the attention-score FLOPs, a few percent of the total, are dense ones).

Parameters, counted as the planner counts them (every float initializer of more than
one element, the seq x seq causal mask included): gpt3-175b 174.61 B at seq 2048
(Table 2.1 rounds to 175.0 B), gpt2-small 124.46 M at seq 128, 125.49 M at 1024.

The batch is 8 sequences and the sequence the preset's full context (2048 tokens
for the gpt3 presets, 1024 for gpt2-small) unless --batch and --seq say otherwise;
--layers, --hidden, --heads, --vocab and --positions override the preset's values.

--dtype float16 or bfloat16 writes every float tensor (weights, constants, the logits)
in that type instead of float32: the graph a model converted to 16 bits has, for
comparing with planning the float32 graph under hetpar-compile --dtype.

--no-weights writes no weight values: every float tensor of more than one element
(weights, biases, LayerNorm scales, the causal mask) is an external-data reference
(location OUT.data, offset, length) into a file that is never written, and nothing
is generated, so gpt3-175b takes seconds and its .onnx stays well under 1 MB.
hetpar-compile --plan-only never reads weight data and plans such a model. Without
--no-weights the weights are random and are written to OUT.data, refused above
--max-weights-gb.

Usage:
  make_gpt.py OUT.onnx --preset gpt3-175b --no-weights
  make_gpt.py OUT.onnx --preset gpt2-small --batch 4 --seq 128
  make_gpt.py OUT.onnx --preset gpt3-1.3b --layers 4 --no-weights
  make_gpt.py OUT.onnx --preset gpt3-175b --batch 1536 --no-weights --dtype float16
then, for example:
  hetpar-compile OUT.onnx --cluster examples/clusters/mixed-64.yaml --mode training \\
    --plan-only -o PLANDIR
"""
import argparse
import math
import os
import sys
import time

import numpy as np
from onnx import TensorProto, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "import"))
import make_gpt2  # noqa: E402  (bench/import is not a package: 'import' is a keyword)

# name: (layers, hidden, heads, vocab, positions); sources in the docstring.
PRESETS = {
    "gpt3-175b": (96, 12288, 96, 50257, 2048),
    "gpt3-13b": (40, 5120, 40, 50257, 2048),
    "gpt3-6.7b": (32, 4096, 32, 50257, 2048),
    "gpt3-2.7b": (32, 2560, 32, 50257, 2048),
    "gpt3-1.3b": (24, 2048, 16, 50257, 2048),
    "gpt2-small": (12, 768, 12, 50257, 1024),
}
FIELDS = ("layers", "hidden", "heads", "vocab", "positions")
DEFAULT_BATCH = 8
DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
          "bfloat16": TensorProto.BFLOAT16}


def to_bfloat16_bits(x):
    """The bfloat16 bit patterns (uint16) of float32 array X, rounded to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def convert_floats(model, dtype):
    """Makes every float32 tensor of MODEL (initializers, graph inputs and outputs)
    DTYPE (TensorProto.FLOAT16 or BFLOAT16), in place. An external reference keeps
    its location and gets the 16-bit length, offsets packed anew."""
    offset = 0
    for i, t in enumerate(model.graph.initializer):
        if t.data_type != TensorProto.FLOAT:
            continue
        if t.data_location == TensorProto.EXTERNAL:
            t.data_type = dtype
            fields = {e.key: e for e in t.external_data}
            length = 2 * math.prod(t.dims)
            fields["offset"].value, fields["length"].value = str(offset), str(length)
            offset += length
            continue
        x = numpy_helper.to_array(t)
        if dtype == TensorProto.FLOAT16:
            new = numpy_helper.from_array(x.astype(np.float16), t.name)
        else:
            new = TensorProto(name=t.name, data_type=dtype, dims=t.dims,
                              raw_data=to_bfloat16_bits(x).tobytes())
        model.graph.initializer[i].CopyFrom(new)
    for v in list(model.graph.input) + list(model.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = dtype


class Placeholders:
    """A tensor maker for make_gpt2.build() that writes no values: each float tensor
    becomes a reference to its bytes in LOCATION (data_location EXTERNAL, with offset
    and length, packed one after another), and make() is never called."""

    def __init__(self, location):
        self.location, self.offset = location, 0

    def __call__(self, name, shape, make):
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape,
                        data_location=TensorProto.EXTERNAL)
        length = 4 * math.prod(shape)
        for key, value in (("location", self.location), ("offset", self.offset),
                           ("length", length)):
            t.external_data.add(key=key, value=str(value))
        self.offset += length
        return t


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the .onnx file to write")
    ap.add_argument("--preset", choices=PRESETS, default="gpt2-small",
                    help="default: gpt2-small")
    for field in FIELDS:
        ap.add_argument("--" + field, type=int, help="overrides the preset")
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                    help=f"default: {DEFAULT_BATCH}")
    ap.add_argument("--seq", type=int, help="default: the preset's positions")
    ap.add_argument("--dtype", choices=DTYPES, default="float32",
                    help="type of the float tensors (default: float32)")
    ap.add_argument("--no-weights", action="store_true",
                    help="reference weights in OUT.data without writing them")
    ap.add_argument("--max-weights-gb", type=float, default=8.0,
                    help="the largest random weights written without --no-weights")
    a = ap.parse_args()

    shape = dict(zip(FIELDS, PRESETS[a.preset]))
    shape.update({f: getattr(a, f) for f in FIELDS if getattr(a, f) is not None})
    seq = a.seq if a.seq is not None else shape["positions"]
    if seq > shape["positions"]:
        ap.error(f"--seq {seq} exceeds the {shape['positions']} positions")
    if shape["hidden"] % shape["heads"]:
        ap.error(f"hidden {shape['hidden']} is not a multiple of heads {shape['heads']}")

    start = time.monotonic()
    placeholders = Placeholders(os.path.basename(a.out) + ".data")
    model = make_gpt2.build(**shape, batch=a.batch, seq=seq, tensor=placeholders)
    if a.no_weights:
        if os.path.exists(a.out + ".data"):
            print(f"warning: {a.out}.data is left from an earlier run; this model's "
                  "external references do not describe it", file=sys.stderr)
    elif placeholders.offset > a.max_weights_gb * 1e9:
        ap.error(f"the weights would take {placeholders.offset / 1e9:.1f} GB "
                 f"(--max-weights-gb {a.max_weights_gb:g}); use --no-weights")
    else:
        model = make_gpt2.build(**shape, batch=a.batch, seq=seq)
    if a.dtype != "float32":
        convert_floats(model, DTYPES[a.dtype])
    overridden = any(getattr(a, f) is not None for f in FIELDS)
    model.graph.name = "gpt" if overridden else a.preset
    make_gpt2.save(model, a.out, external=not a.no_weights)
    print(f"{model.graph.name}: " + ", ".join(f"{f} {shape[f]}" for f in FIELDS) +
          f"; batch {a.batch} x seq {seq}; {a.dtype}; {time.monotonic() - start:.2f} s")


if __name__ == "__main__":
    main()
