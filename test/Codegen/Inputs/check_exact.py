#!/usr/bin/env python3
"""check_exact.py NAME GOT.npy EXPECTED.npy: prints "NAME: ok [shape]" when
the arrays have the same shape, dtype and values, else "NAME: WRONG ..."."""
import sys

import numpy as np

name, got_path, want_path = sys.argv[1:4]
got, want = np.load(got_path), np.load(want_path)
nan_ok = want.dtype.kind == "f"  # NaN where NaN is expected
if got.shape == want.shape and got.dtype == want.dtype and \
        np.array_equal(got, want, equal_nan=nan_ok):
    print("%s: ok %s" % (name, list(got.shape)))
else:
    print("%s: WRONG got %s %s %s, expected %s %s" % (
        name, got.dtype, list(got.shape), got.tolist(), list(want.shape), want.tolist()))
    sys.exit(1)
