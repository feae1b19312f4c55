"""The one safetensors reader of the test scripts (json and numpy; the
`safetensors` package is not a dependency): read_safetensors(path) returns
{name: numpy array}, without __metadata__; read_checkpoints(paths) joins the
files of one checkpoint (a pipeline's stages, a sharded run's devices)."""
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


def read_layout(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    meta = json.loads(data[8:8 + n]).get("__metadata__", {})
    return json.loads(meta["layout"]) if "layout" in meta else {}


def read_checkpoints(paths):
    """The tensors of the checkpoint files `paths` (a list), joined: a
    tensor that files hold in shards (their __metadata__.layout index,
    docs/training.md, "Checkpoint layout") becomes whole. Raises ValueError
    where the shards do not cover a tensor, or where two files hold different
    values of one part of it."""
    out, shards = {}, {}
    for path in paths:
        tensors = read_safetensors(path)
        for name, entry in read_layout(path).items():
            shards.setdefault(name, []).append((entry, tensors.pop(name)))
        out.update(tensors)
    for name, pieces in shards.items():
        shape = pieces[0][0]["shape"]
        whole = np.full(int(np.prod(shape)), np.nan, np.float64)
        covered = np.zeros(whole.size, np.int64)
        index = np.arange(whole.size).reshape(shape)
        for entry, x in pieces:
            # Tensor parallelism: the file holds a slice of one dimension;
            # ZeRO-1: a range of the (sliced) tensor's flattened elements.
            part = index
            if "slice" in entry:
                cut = entry["slice"]
                part = np.take(index, range(cut["start"], cut["start"] + cut["size"]),
                               axis=cut["dim"])
            positions = part.ravel()
            if "offset" in entry:
                positions = positions[entry["offset"]:entry["offset"] + entry["elements"]]
            seen = covered[positions] > 0
            if np.any(whole[positions][seen] != x.ravel()[seen]):
                raise ValueError("%s: two files hold different values of the same part of %s"
                                 % (",".join(paths), name))
            whole[positions] = x.ravel()
            covered[positions] += 1
        if not np.all(covered >= 1):
            raise ValueError("%s: the shards of %s do not cover it" % (",".join(paths), name))
        out[name] = whole.astype(pieces[0][1].dtype).reshape(shape)
    return out
