"""Exports attention modules written the way models write them, to check
hetpar-onnx-fuse-attention's kernels against the unfused graph and against
PyTorch (Debian's python3-torch 1.13, opset 17, eval mode, static shapes).

- causal: GPT-2's block, Q K^T / sqrt(d), masked_fill of a causal buffer
  with the dtype's lowest value (Where(mask, S, min)); 3 heads of 8, an odd
  sequence of 37;
- padding: BERT's additive mask from a run-time [N, L] 0/1 input,
  (1 - m) * -10000 added after the Div; two samples, the second padded;
- cross: 5 queries over 300 keys (two blocks of keys), the scale as a Mul,
  masked_fill(-inf) of keys the run-time mask drops (Where(mask, -inf, S));
  head dimension 12 for Q and K, 20 for V;
- long: one causal head of 32 over 4096 tokens;
- narrow: heads of width 1 (D = 1: the strides of KT's rows mean nothing),
  K^T from a Transpose, and the scale a [1, 1, 1, 1] constant;
- flat: 2-D attention without a batch dimension, K^T a 2-D Transpose;
- suffix: the last 5 positions of 300 attending causally (a KV cache's
  queries: query i sees keys up to 295 + i), Llama's additive mask (a
  constant triu of -inf), two heads of 16;
- soft: GPT-2's causal block with an old exporter's finite fill (-10000),
  which code generation must not treat as causal (exp(-10000 - max) is not
  0 where every kept score is below -9900).
- gqa: grouped-query attention as Hugging Face's Llama writes it: 6 query
  heads over 2 key/value heads, each repeated 3 times by repeat_kv (Unsqueeze,
  Expand, Reshape), K's repeat read through its transpose, an additive causal
  mask; 2 samples of 11 tokens, heads of 8 (hetpar-onnx-fuse-attention folds
  the repeats into kv_repeat 3: K and V are read in place).

Writes DIR/NAME/model.onnx, DIR/NAME/input_<i>.npy and DIR/NAME/output_0.npy
(PyTorch's output, the reference). Deterministic (torch.manual_seed(0)).

Usage: /usr/bin/python3 make_attention.py DIR
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn


class Causal(nn.Module):
    """fill: what masked scores become (None: the dtype's lowest)."""

    def __init__(self, length, heads=3, dim=8, fill=None):
        super().__init__()
        self.h, self.d, self.fill = heads, dim, fill
        self.qkv = nn.Linear(heads * dim, 3 * heads * dim)
        self.register_buffer(
            "bias", torch.tril(torch.ones(length, length, dtype=torch.bool)))

    def forward(self, x):
        n, l, _ = x.shape
        q, k, v = self.qkv(x).split(self.h * self.d, dim=2)
        q, k, v = (t.view(n, l, self.h, self.d).transpose(1, 2)
                   for t in (q, k, v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        fill = torch.finfo(s.dtype).min if self.fill is None else self.fill
        s = torch.where(self.bias[:l, :l], s, torch.tensor(fill))
        y = torch.matmul(s.softmax(dim=-1), v)
        return y.transpose(1, 2).reshape(n, l, self.h * self.d)


class Padding(nn.Module):
    def __init__(self, heads=4, dim=16):
        super().__init__()
        self.h, self.d = heads, dim
        self.qkv = nn.Linear(heads * dim, 3 * heads * dim)

    def forward(self, x, keep):
        n, l, _ = x.shape
        q, k, v = self.qkv(x).split(self.h * self.d, dim=2)
        q, k, v = (t.view(n, l, self.h, self.d).permute(0, 2, 1, 3)
                   for t in (q, k, v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        s = s + (1.0 - keep[:, None, None, :]) * -10000.0
        return torch.matmul(torch.softmax(s, dim=-1), v)


class Cross(nn.Module):
    def __init__(self, dim=12, value_dim=20):
        super().__init__()
        self.scale = dim ** -0.5

    def forward(self, q, k, v, drop):
        s = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        s = s.masked_fill(drop[:, None, :], float("-inf"))
        return torch.matmul(torch.softmax(s, dim=-1), v)


class Narrow(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.full((1, 1, 1, 1), 0.7))

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        return torch.matmul(torch.softmax(s, dim=-1), v)


class Flat(nn.Module):
    def forward(self, q, k, v):
        s = torch.matmul(q, k.t()) / 2.0
        return torch.matmul(torch.softmax(s, dim=-1), v)


class Suffix(nn.Module):
    def __init__(self, queries=5, keys=300):
        super().__init__()
        mask = torch.full((queries, keys), float("-inf"))
        self.register_buffer("mask",
                             torch.triu(mask, diagonal=keys - queries + 1))

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-1, -2)) / 4.0 + self.mask
        return torch.matmul(torch.softmax(s, dim=-1), v)


class GroupedQuery(nn.Module):
    def __init__(self, length, heads=6, kv_heads=2, dim=8):
        super().__init__()
        self.h, self.kv, self.d = heads, kv_heads, dim
        self.q = nn.Linear(heads * dim, heads * dim, bias=False)
        self.k = nn.Linear(heads * dim, kv_heads * dim, bias=False)
        self.v = nn.Linear(heads * dim, kv_heads * dim, bias=False)
        mask = torch.full((length, length), float("-inf"))
        self.register_buffer("mask", torch.triu(mask, diagonal=1))

    def repeat_kv(self, x):
        # transformers' repeat_kv: [n, kv, l, d] -> [n, kv * rep, l, d].
        n, kv, l, d = x.shape
        rep = self.h // self.kv
        x = x[:, :, None, :, :].expand(n, kv, rep, l, d)
        return x.reshape(n, kv * rep, l, d)

    def forward(self, x):
        n, l, _ = x.shape
        q = self.q(x).view(n, l, self.h, self.d).transpose(1, 2)
        k = self.k(x).view(n, l, self.kv, self.d).transpose(1, 2)
        v = self.v(x).view(n, l, self.kv, self.d).transpose(1, 2)
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d)
        s = s + self.mask[:l, :l]
        y = torch.matmul(torch.softmax(s, dim=-1), v)
        return y.transpose(1, 2).reshape(n, l, self.h * self.d)


def export(root, name, module, inputs, names):
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    module.eval()
    with torch.no_grad():
        out = module(*inputs)
    torch.onnx.export(module, tuple(inputs), os.path.join(folder, "model.onnx"),
                      input_names=names, output_names=["y"], opset_version=17)
    for i, x in enumerate(inputs):
        np.save(os.path.join(folder, "input_%d.npy" % i), x.numpy())
    np.save(os.path.join(folder, "output_0.npy"), out.numpy())


def main(root):
    torch.manual_seed(0)
    export(root, "causal", Causal(37), [torch.randn(2, 37, 24)], ["x"])
    keep = torch.ones(2, 19)
    keep[1, 13:] = 0
    export(root, "padding", Padding(), [torch.randn(2, 19, 64), keep],
           ["x", "keep"])
    drop = torch.zeros(3, 300, dtype=torch.bool)
    drop[:, 290:] = True
    drop[1, :200] = True
    export(root, "cross", Cross(),
           [torch.randn(3, 5, 12), torch.randn(3, 300, 12),
            torch.randn(3, 300, 20), drop], ["q", "k", "v", "drop"])
    export(root, "long", Causal(4096, heads=1, dim=32),
           [torch.randn(1, 4096, 32)], ["x"])
    export(root, "narrow", Narrow(),
           [torch.randn(2, 3, 8, 1), torch.randn(2, 3, 10, 1),
            torch.randn(2, 3, 10, 5)], ["q", "k", "v"])
    export(root, "flat", Flat(),
           [torch.randn(7, 4), torch.randn(9, 4), torch.randn(9, 3)],
           ["q", "k", "v"])
    export(root, "suffix", Suffix(),
           [torch.randn(1, 2, 5, 16), torch.randn(1, 2, 300, 16),
            torch.randn(1, 2, 300, 16)], ["q", "k", "v"])
    export(root, "soft", Causal(21, fill=-10000.0), [torch.randn(2, 21, 24)],
           ["x"])
    export(root, "gqa", GroupedQuery(11), [torch.randn(2, 11, 48)], ["x"])


if __name__ == "__main__":
    main(sys.argv[1])
