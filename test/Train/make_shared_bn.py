#!/usr/bin/env python3
"""Writes OUT/model.onnx: Linear, BatchNorm1d, ReLU, Linear, the same
BatchNorm1d again, Linear, exported by PyTorch in training mode, so that two
BatchNormalization nodes update the same running-statistics initializers
(test/Train/pipeline.test: a pipeline that puts them on two stages is
refused, as one device refuses them).

Usage: /usr/bin/python3 test/Train/make_shared_bn.py OUT
Needs torch and onnx (Debian's python3-torch, python3-onnx).
"""
import os
import sys

import onnx
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, 8)
        self.fc3 = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.fc1(x)))
        return self.fc3(self.bn(self.fc2(y)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    path = os.path.join(out, "model.onnx")
    torch.onnx.export(Net(), (torch.randn(4, 6),), path, input_names=["x"],
                      output_names=["logits"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    model = onnx.load(path)
    bns = [n for n in model.graph.node if n.op_type == "BatchNormalization"]
    assert len(bns) == 2 and bns[0].input[3] == bns[1].input[3], bns
    print("\n".join(n.name for n in model.graph.node))


if __name__ == "__main__":
    main()
