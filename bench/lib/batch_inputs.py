#!/usr/bin/env python3
"""batch_inputs.py MODEL_DIR PREFIX [BATCH]: a bundled model's stored inputs
(MODEL_DIR/input_*.npy) repeated along dimension 0 to a batch of BATCH
(default 32), saved as PREFIX_input_K.npy. Prints the files, comma-separated,
then a space and hetpar-compile's --input-shape options for
MODEL_DIR/model-dynamic.onnx (one per input, by the model's input names):
the throughput shapes of bench/peers/run.sh and bench/codegen/fusion-ab.sh."""
import glob
import sys

import numpy as np
import onnx


def main():
    src, dst = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    model = onnx.load(src + "/model-dynamic.onnx", load_external_data=False)
    names = [i.name for i in model.graph.input]
    files, shapes = [], []
    for k, path in enumerate(sorted(glob.glob(src + "/input_*.npy"))):
        a = np.load(path)
        a = np.concatenate([a] * (batch // a.shape[0]), axis=0)
        out = "%s_input_%d.npy" % (dst, k)
        np.save(out, a)
        files.append(out)
        shapes.append("--input-shape=%s=%s" % (names[k], "x".join(map(str, a.shape))))
    print(",".join(files), " ".join(shapes))


if __name__ == "__main__":
    main()
