"""The one safetensors reader of the test scripts (json and numpy; the
`safetensors` package is not a dependency): read_safetensors(path) returns
{name: numpy array}, without __metadata__."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(body[b:e], DTYPES[t["dtype"]]).reshape(t["shape"])
    return out
