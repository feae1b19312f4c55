#!/usr/bin/env python3
"""Runs the ONNX backend node tests (Debian's libonnx-testdata) through
hetpar-compile and hetpar-run on the CPU backend and compares every output
with the stored reference.

Usage:
  run-node-tests.py TESTDATA_DIR --bin BUILD/bin [--jobs N] [--filter REGEX]
                    [--min-pass-rate 0.95] [--min-passed N]
                    [--markdown FILE] [--keep DIR]
  run-node-tests.py TESTDATA_DIR --bin BUILD/bin --prepare DIR
                    (sources only, for scripts/gpu-check.sh: DIR/<test>/out,
                    input_<i>.npy, expected/output_<i>.npy for every test that
                    compiles)

Each test in TESTDATA_DIR/node/test_* is one of:
  passed       compiled, ran, every output within tolerance
  failed       compiled and ran with a wrong output, or an error that is not
               an unsupported op (a bug)
  unsupported  hetpar-compile refused it before writing anything: an op,
               attribute or element type code generation does not handle, or
               a model that import cannot make static (sequences, optional
               inputs, dynamic output shapes)
Tolerance: ONNX's own backend test defaults (rtol 1e-3, atol 1e-7, numpy
assert_allclose semantics, NaN equal to NaN); integers and bools exactly.
The pass rate is passed / (passed + failed). Exit status 1 when it is below
--min-pass-rate, or when fewer than --min-passed tests pass (a supported op
that becomes unsupported lowers the count, not the rate).
"""
import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

# hetpar-compile refuses these before writing anything; anything else that
# fails to compile is a bug and counts as failed.
UNSUPPORTED_PATTERNS = [
    r"unsupported op",
    r"not static|dynamic",
    r"unsupported (element|data) type|element type",
    r"sequence|optional|map type",
    r"unknown operator|no schema|not modeled",
    r"which HetPar does not support",
]


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def reason_of(stderr):
    for line in stderr.splitlines():
        if "error" in line:
            return line.strip()
    lines = [l for l in stderr.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no message"


def run_test(test_dir, bindir, keep, prepare=None):
    name = os.path.basename(test_dir)
    data = os.path.join(test_dir, "test_data_set_0")
    if not os.path.isdir(data):
        return name, "unsupported", "no test_data_set_0"
    if prepare:
        work = os.path.join(prepare, name)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix="hp-node-", dir=keep)
    out = os.path.join(work, "out")
    compile_cmd = [os.path.join(bindir, "hetpar-compile"),
                   os.path.join(test_dir, "model.onnx"), "-o", out,
                   "--targets=none" if prepare else "--targets=cpu",
                   "--opt-level=1"]
    p = subprocess.run(compile_cmd, capture_output=True, text=True)
    if p.returncode != 0:
        reason = reason_of(p.stderr)
        if p.returncode < 0:
            return name, "failed", "hetpar-compile crashed: " + reason
        if os.path.exists(out):
            return name, "failed", "a failed compile left its output: " + reason
        for pat in UNSUPPORTED_PATTERNS:
            if re.search(pat, p.stderr, re.IGNORECASE):
                return name, "unsupported", reason
        return name, "failed", "compile: " + reason
    inputs = sorted(glob.glob(os.path.join(data, "input_*.pb")),
                    key=lambda s: int(re.findall(r"(\d+)\.pb$", s)[0]))
    expected = sorted(glob.glob(os.path.join(data, "output_*.pb")),
                      key=lambda s: int(re.findall(r"(\d+)\.pb$", s)[0]))
    # The program's inputs are the graph inputs that are not initializers.
    model = onnx.load(os.path.join(test_dir, "model.onnx"),
                      load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in inits]
    npys = []
    try:
        for i, path in enumerate(inputs):
            arr = load_tensor(path)
            f = os.path.join(work, "input_%d.npy" % i)
            np.save(f, arr)
            npys.append(f)
    except Exception as e:  # a .pb that is not a TensorProto
        return name, "unsupported", "input is not a tensor: %s" % e
    if len(npys) != len(graph_inputs):
        return name, "unsupported", "optional inputs left out"
    if prepare:
        os.makedirs(os.path.join(work, "expected"))
        for i, path in enumerate(expected):
            np.save(os.path.join(work, "expected", "output_%d.npy" % i),
                    load_tensor(path))
        return name, "prepared", ""
    results = os.path.join(work, "results")
    run_cmd = [os.path.join(bindir, "hetpar-run"), out, "--backend", "cpu",
               "--outputs", results]
    if npys:
        run_cmd += ["--inputs", ",".join(npys)]
    p = subprocess.run(run_cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return name, "failed", "run: " + reason_of(p.stderr)
    for i, path in enumerate(expected):
        want = load_tensor(path)
        got_path = os.path.join(results, "output_%d.npy" % i)
        if not os.path.exists(got_path):
            return name, "failed", "output %d missing" % i
        got = np.load(got_path)
        if got.shape != want.shape:
            return name, "failed", "output %d shape %s, expected %s" % (
                i, got.shape, want.shape)
        if want.dtype.kind in "fc":
            try:
                np.testing.assert_allclose(got.astype(want.dtype), want,
                                           rtol=1e-3, atol=1e-7,
                                           equal_nan=True)
            except AssertionError:
                diff = np.nanmax(np.abs(got.astype(np.float64) -
                                        want.astype(np.float64))) \
                    if want.size else 0
                return name, "failed", "output %d differs (max abs diff %.3g)" % (i, diff)
        elif not np.array_equal(got.astype(want.dtype), want):
            return name, "failed", "output %d differs" % i
    if keep is None:
        subprocess.run(["rm", "-rf", work])
    return name, "passed", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("testdata")
    ap.add_argument("--bin", required=True, help="folder of hetpar-compile and hetpar-run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--filter", default="", help="regex on test names")
    ap.add_argument("--min-pass-rate", type=float, default=0.0)
    ap.add_argument("--min-passed", type=int, default=0,
                    help="fail when fewer tests pass")
    ap.add_argument("--markdown", help="write the failure and unsupported lists here")
    ap.add_argument("--keep", help="keep work folders under this folder")
    ap.add_argument("--prepare", help="write sources-only programs and data here")
    args = ap.parse_args()

    tests = sorted(glob.glob(os.path.join(args.testdata, "node", "test_*")))
    if args.filter:
        tests = [t for t in tests if re.search(args.filter, os.path.basename(t))]
    if not tests:
        print("no node tests under %s" % args.testdata, file=sys.stderr)
        return 1
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(lambda t: run_test(t, args.bin, args.keep,
                                             args.prepare), tests):
            results.append(r)
    if args.prepare:
        ready = [n for n, status, _ in results if status == "prepared"]
        for n, status, _ in results:
            if status != "prepared":
                subprocess.run(["rm", "-rf", os.path.join(args.prepare, n)])
        print("prepared %d of %d node tests in %s" % (len(ready), len(results),
                                                      args.prepare))
        return 0
    counts = {"passed": 0, "failed": 0, "unsupported": 0}
    for _, status, _ in results:
        counts[status] += 1
    supported = counts["passed"] + counts["failed"]
    rate = counts["passed"] / supported if supported else 0.0
    print("node tests: %d" % len(results))
    print("passed: %d" % counts["passed"])
    print("failed: %d" % counts["failed"])
    print("unsupported: %d" % counts["unsupported"])
    print("pass rate on supported tests: %.1f%% (%d of %d)" %
          (100 * rate, counts["passed"], supported))
    for name, status, reason in results:
        if status == "failed":
            print("FAILED %s: %s" % (name, reason))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| test | status | reason |\n| --- | --- | --- |\n")
            for name, status, reason in results:
                if status != "passed":
                    f.write("| %s | %s | %s |\n" % (name, status,
                                                   reason.replace("|", "\\|")))
    if rate < args.min_pass_rate:
        print("pass rate %.3f is below %.3f" % (rate, args.min_pass_rate))
        return 1
    if counts["passed"] < args.min_passed:
        print("%d tests passed, fewer than %d" % (counts["passed"],
                                                  args.min_passed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
