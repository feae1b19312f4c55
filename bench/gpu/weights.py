#!/usr/bin/env python3
"""Moves a compiled program's weights to a GPU machine without carrying them.

The working tree that travels to a lent GPU machine is limited to 64 MiB
(/work/.library/device/README.md); GPT-2 small's weights alone are 250 MB in
bfloat16. So the large tensors of weights.bin stay here and are made again
there from the ONNX model, which the GPU machine rebuilds with the same
deterministic generator (bench/import/make_gpt2.py, bench/gpu/models.py).

  weights.py strip OUT [--keep-bytes N]
      here, after hetpar-compile --targets=none: writes OUT/weights.kept.bin
      (the bytes of every tensor of at most N bytes, default 64 KiB, in index
      order) and removes OUT/weights.bin. weights.json is unchanged: it keeps
      every tensor's offset, size, dtype and CRC-32.
  weights.py restore OUT [--onnx MODEL.onnx] [--fill]
      there: writes OUT/weights.bin again. A kept tensor is copied back; a
      stripped one is the ONNX initializer of its name, converted to its dtype
      (bfloat16 and float16 rounded to nearest even, as hetpar-compile does);
      its CRC-32 must equal the index's, so the program runs on the very
      weights it was compiled with. With --fill, a stripped tensor that the
      model does not hold (or that does not match) is filled with
      deterministic normal values of standard deviation 0.02 and its CRC in
      weights.json is updated: such a program is for timing only, and
      restore says which tensors were filled.

Exit status 1 with one line naming the tensor when a tensor cannot be
restored. Needs numpy, and onnx for --onnx.
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np

KEPT = "weights.kept.bin"


def load_index(out):
    with open(os.path.join(out, "weights.json")) as f:
        return json.load(f)


def strip(out, keep_bytes):
    index = load_index(out)
    path = os.path.join(out, index["file"])
    kept = 0
    with open(path, "rb") as src, open(os.path.join(out, KEPT), "wb") as dst:
        for t in index["tensors"]:
            if t["bytes"] <= keep_bytes:
                src.seek(t["offset"])
                dst.write(src.read(t["bytes"]))
                kept += t["bytes"]
    os.remove(path)
    with open(os.path.join(out, "weights.strip.json"), "w") as f:
        json.dump({"keep_bytes": keep_bytes}, f)
    print("%s: kept %d of %d bytes" % (out, kept, index["bytes"]))
    return 0


def to_dtype(array, dtype):
    """The little-endian bytes of ARRAY (float32) as DTYPE, rounded to nearest even."""
    a = np.ascontiguousarray(array)
    if dtype == "float32":
        return a.astype("<f4").tobytes()
    if dtype == "float16":
        return a.astype("<f2").tobytes()
    if dtype == "bfloat16":
        bits = a.astype("<f4").view("<u4")
        rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16
        nan = np.isnan(a)
        return np.where(nan, np.uint32(0x7FC0), rounded).astype("<u2").tobytes()
    if dtype in ("int64", "int32", "bool", "uint8", "int8"):
        return a.astype({"int64": "<i8", "int32": "<i4", "bool": "?",
                         "uint8": "u1", "int8": "i1"}[dtype]).tobytes()
    raise ValueError("dtype %s" % dtype)


def fill_bytes(t, seed):
    rng = np.random.default_rng(seed)
    count = t["bytes"] // {"float32": 4, "float16": 2, "bfloat16": 2}.get(t["dtype"], 1)
    if t["dtype"] not in ("float32", "float16", "bfloat16"):
        return bytes(t["bytes"])
    return to_dtype(rng.standard_normal(count, dtype=np.float32) * 0.02, t["dtype"])


def initializers(model_path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(model_path)
    return {i.name: i for i in model.graph.initializer}, numpy_helper


def restore(out, onnx_path, fill):
    index = load_index(out)
    with open(os.path.join(out, "weights.strip.json")) as f:
        keep_bytes = json.load(f)["keep_bytes"]
    inits, numpy_helper = initializers(onnx_path) if onnx_path else ({}, None)
    filled = []
    tmp = os.path.join(out, index["file"] + ".tmp")
    with open(os.path.join(out, KEPT), "rb") as kept, open(tmp, "wb") as dst:
        dst.truncate(index["bytes"])
        for k, t in enumerate(index["tensors"]):
            if t["bytes"] <= keep_bytes:
                data = kept.read(t["bytes"])
            else:
                data = None
                if t["name"] in inits:
                    data = to_dtype(numpy_helper.to_array(inits[t["name"]]), t["dtype"])
                    if zlib.crc32(data) != t["crc32"]:
                        data = None
                if data is None and fill:
                    data = fill_bytes(t, k)
                    t["crc32"] = zlib.crc32(data)
                    filled.append(t["name"])
            if data is None or len(data) != t["bytes"] or zlib.crc32(data) != t["crc32"]:
                os.remove(tmp)
                print("%s: error: tensor '%s' (%s %s) is not in %s with the CRC it was "
                      "compiled with" % (out, t["name"], t["dtype"], t["shape"],
                                         onnx_path or "the kept bytes"), file=sys.stderr)
                return 1
            dst.seek(t["offset"])
            dst.write(data)
    os.replace(tmp, os.path.join(out, index["file"]))
    if filled:
        with open(os.path.join(out, "weights.json"), "w") as f:
            json.dump(index, f, indent=2)
        print("%s: %d tensors filled with random values (timing only): %s" % (
            out, len(filled), ", ".join(filled[:4]) + (" ..." if len(filled) > 4 else "")))
    print("%s: restored %d bytes" % (out, index["bytes"]))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("strip")
    s.add_argument("out")
    s.add_argument("--keep-bytes", type=int, default=65536)
    r = sub.add_parser("restore")
    r.add_argument("out")
    r.add_argument("--onnx")
    r.add_argument("--fill", action="store_true")
    a = ap.parse_args()
    if a.cmd == "strip":
        return strip(a.out, a.keep_bytes)
    return restore(a.out, a.onnx, a.fill)


if __name__ == "__main__":
    sys.exit(main())
