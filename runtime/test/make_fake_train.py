#!/usr/bin/env python3
"""Writes the program folder and a data folder for FakeTrainProgram.cpp.

usage: make_fake_train.py OUT DATA [--dim D] [--nan-at K] [--library SO]

OUT: manifest.json (with the "training" object of docs/training.md),
weights.json, weights.bin (w = 0, w.momentum_buffer = 0, hetpar.step = 0,
lr = 0.1), model.onnx (pred = MatMul(x, w) + b, initializers w [D] and b []),
and OUT/device_0.cpu.so copied from --library when given.
DATA: x.npy float32 [N,D] and labels.npy float32 [N]. With D = 2 the five
samples x = [1,0] [0,1] [1,1] [2,0] [0,2], labels = x . [1,2] (the tests'
hand computations use them); else N = 4, x_i = the unit vector e_(i mod D),
labels 1. --nan-at K makes x[K,0] NaN.
Runs with Debian's /usr/bin/python3 (numpy, onnx).
"""
import argparse
import json
import os
import shutil
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH = 2


def tensors(dim):
    return [("w", np.zeros(dim, np.float32), "param", {}),
            ("w.momentum_buffer", np.zeros(dim, np.float32), "optimizer",
             {"of": "w", "slot": "momentum_buffer"}),
            ("hetpar.step", np.array(0, np.int64), "step", {}),
            ("lr", np.array(0.1, np.float32), "constant", {})]


def write_weights(out, dim):
    blob, index = b"", []
    for name, value, role, extra in tensors(dim):
        data = value.tobytes()
        entry = {"name": name, "dtype": str(value.dtype), "shape": list(value.shape),
                 "offset": len(blob), "bytes": len(data),
                 "crc32": zlib.crc32(data), "role": role}
        entry.update(extra)
        index.append(entry)
        blob += data
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(blob)
    with open(os.path.join(out, "weights.json"), "w") as f:
        json.dump({"file": "weights.bin", "bytes": len(blob), "tensors": index}, f, indent=1)
    return len(blob)


def write_manifest(out, dim, weights_bytes):
    manifest = {
        "format": "hetpar-program", "version": 1, "model": "model.onnx", "dtype": "float32",
        "training": {
            "loss": "mse", "labels": "labels", "batch_size": BATCH, "tokens_per_sample": 0,
            "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": False,
                          "weight_decay": 0.0, "clip_grad_norm": 0.0,
                          "schedule": {"kind": "constant"}},
            "model": "model.onnx"},
        "devices": [{
            "id": 0, "source": "device_0.cu", "libraries": {"cpu": "device_0.cpu.so"},
            "arena_bytes": 256, "weights_bytes": weights_bytes,
            "weights": "weights.bin", "weights_index": "weights.json",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [BATCH, dim], "batch_dim": 0},
                       {"name": "labels", "dtype": "float32", "shape": [BATCH], "batch_dim": 0}],
            "outputs": [{"name": "loss", "dtype": "float32", "shape": []}]}]}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def write_model(out, dim):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pred"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, dim])],
        [helper.make_tensor_value_info("pred", TensorProto.FLOAT, [BATCH])],
        [numpy_helper.from_array(np.full(dim, 0.5, np.float32), "w"),
         numpy_helper.from_array(np.array(0.25, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, "model.onnx"))


def write_data(data, dim, nan_at):
    if dim == 2:
        x = np.array([[1, 0], [0, 1], [1, 1], [2, 0], [0, 2]], np.float32)
        labels = x @ np.array([1, 2], np.float32)
    else:
        x = np.zeros((4, dim), np.float32)
        for i in range(4):
            x[i, i % dim] = 1
        labels = np.ones(4, np.float32)
    if nan_at is not None:
        x[nan_at, 0] = np.nan
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "labels.npy"), labels.astype(np.float32))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("data")
    p.add_argument("--dim", type=int, default=2)
    p.add_argument("--nan-at", type=int)
    p.add_argument("--library")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.data, exist_ok=True)
    write_manifest(a.out, a.dim, write_weights(a.out, a.dim))
    write_model(a.out, a.dim)
    write_data(a.data, a.dim, a.nan_at)
    if a.library:
        shutil.copy(a.library, os.path.join(a.out, "device_0.cpu.so"))


if __name__ == "__main__":
    main()
