#!/usr/bin/env python3
"""ONNX Runtime's latency on one model, for bench/peers/run.sh.

Usage: ort_latency.py MODEL.onnx REPEAT THREADS [INPUT.npy ...]

Runs MODEL with the CPU execution provider, THREADS intra-op threads and one
inter-op thread, all graph optimizations on, on the given inputs (in the
model's input order; a model with one input and the name of input_ids gets
the file given), after 5 warm-up runs, and prints
"median MS min MS" of REPEAT runs of session.run alone (no input conversion).
Exits 1 with a message when a file or the model cannot be read.
"""
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    model, repeat, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    arrays = [np.load(p) for p in sys.argv[4:]]
    if len(arrays) != len(names):
        sys.exit("ort_latency.py: %s has %d inputs, %d files given" %
                 (model, len(names), len(arrays)))
    feed = dict(zip(names, arrays))
    for _ in range(5):
        session.run(None, feed)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    print("median %.3f min %.3f" % (float(np.median(times)), min(times)))


if __name__ == "__main__":
    main()
