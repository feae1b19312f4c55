"""Exports 1-D convolutions as speech and sequence models write them, to check
that code generation runs them as 2-D convolutions of height 1 (every
hp_conv2d_launch path) against PyTorch (Debian's python3-torch 1.13, opset 17,
eval mode, static shapes).

- plain: kernel 3, padding 1, bias, 24 -> 40 channels over 50 steps, then
  ReLU (a FusedConv with its activation);
- strided: kernel 5, stride 2, dilation 2, padding 3, no bias;
- grouped: 2 groups of 8 -> 2 x 12 channels, kernel 3;
- depthwise: 16 channels, one per group, kernel 7, padding 3 (a wav2vec-style
  positional convolution), plus the input (a residual FusedConv);
- pointwise: kernel 1 (the GEMM path without im2col);
- asymmetric: ConstantPad1d (2, 0) then kernel 3 without padding (a causal
  convolution; the exporter folds the pad into the Conv's pads [2, 0]).

Writes DIR/NAME/model.onnx, DIR/NAME/input_0.npy and DIR/NAME/output_0.npy
(PyTorch's output). Deterministic (torch.manual_seed(0)).

Usage: /usr/bin/python3 make_conv1d.py DIR
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(24, 40, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Depthwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(16, 16, 7, padding=3, groups=16)

    def forward(self, x):
        return self.conv(x) + x


class Causal(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ConstantPad1d((2, 0), 0.0)
        self.conv = nn.Conv1d(8, 12, 3)

    def forward(self, x):
        return self.conv(self.pad(x))


def export(root, name, module, x):
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    module.eval()
    with torch.no_grad():
        out = module(x)
    torch.onnx.export(module, (x,), os.path.join(folder, "model.onnx"),
                      input_names=["x"], output_names=["y"], opset_version=17)
    np.save(os.path.join(folder, "input_0.npy"), x.numpy())
    np.save(os.path.join(folder, "output_0.npy"), out.numpy())


def main(root):
    torch.manual_seed(0)
    export(root, "plain", Plain(), torch.randn(2, 24, 50))
    export(root, "strided",
           nn.Conv1d(8, 16, 5, stride=2, dilation=2, padding=3, bias=False),
           torch.randn(3, 8, 41))
    export(root, "grouped", nn.Conv1d(16, 24, 3, groups=2),
           torch.randn(2, 16, 33))
    export(root, "depthwise", Depthwise(), torch.randn(2, 16, 64))
    export(root, "pointwise", nn.Conv1d(32, 48, 1), torch.randn(2, 32, 20))
    export(root, "asymmetric", Causal(), torch.randn(2, 8, 30))


if __name__ == "__main__":
    main(sys.argv[1])
