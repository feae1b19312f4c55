"""compare-onnx-weights.py A.onnx B.onnx TOL: the initializers of two ONNX
models (external data read from beside each), which must have the same names
and shapes, differ by at most TOL. Prints "N initializers compared; largest
difference D", then "ok" or the names that differ, with status 1."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def initializers(path):
    onnx.checker.check_model(path)
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def main():
    a, b, tol = initializers(sys.argv[1]), initializers(sys.argv[2]), float(sys.argv[3])
    if sorted(a) != sorted(b):
        print("different initializers: %s" % sorted(set(a) ^ set(b)))
        return 1
    bad, largest = [], 0.0
    for name in sorted(a):
        if a[name].shape != b[name].shape:
            bad.append("%s: shape %s vs %s" % (name, a[name].shape, b[name].shape))
            continue
        d = float(np.max(np.abs(a[name].astype(np.float64) - b[name]), initial=0.0))
        largest = max(largest, d)
        if d > tol:
            bad.append("%s: %g" % (name, d))
    print("%d initializers compared; largest difference %g" % (len(a), largest))
    print("\n".join(bad) if bad else "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
