#!/usr/bin/env python3
"""Prints a safetensors file, parsed by hand with json and numpy (the
`safetensors` package is not a dependency): one line per tensor in data
order, "NAME DTYPE SHAPE: values" (floats with 4 decimals), then one line per
__metadata__ entry, "meta KEY = VALUE", sorted by key. Checks that the header
length is a multiple of 8 and that the tensors tile the data exactly.
usage: read-safetensors.py FILE"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
          "U16": np.uint16, "U32": np.uint32, "U64": np.uint64, "BOOL": np.bool_}

data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
assert n % 8 == 0, "header length %d is not a multiple of 8" % n
header = json.loads(data[8:8 + n])
body = data[8 + n:]
meta = header.pop("__metadata__", {})
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
    begin, stop = t["data_offsets"]
    assert begin == end, "gap or overlap before %s" % name
    end = stop
    a = np.frombuffer(body[begin:stop], DTYPES[t["dtype"]]).reshape(t["shape"])
    values = " ".join(("%.4f" % v) if a.dtype.kind == "f" else str(v) for v in a.ravel()[:8])
    print("%s %s %s: %s" % (name, t["dtype"], list(t["shape"]), values))
assert end == len(body), "%d data bytes, the tensors cover %d" % (len(body), end)
for key in sorted(meta):
    print("meta %s = %s" % (key, meta[key]))
