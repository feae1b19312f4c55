#!/usr/bin/env python3
"""Runs every gradient case of a folder (test/Train/Inputs/grad/<case>/, made
by test/Train/make_grad_cases.py from PyTorch autograd) through HetPar and
compares the loss and every parameter's gradient with the references.

  check-grad-cases.py BIN_DIR CASES_DIR WORK_DIR [--jobs N] [--only NAME,...]

Each case: hetpar-compile model.onnx --mode training --loss output
--optimizer none (the program returns the loss and one gradient per
parameter, named PARAM.grad), hetpar-run --outputs, then loss.npy and each
grad_<PARAM>.npy are compared with numpy.allclose (rtol 1e-4, atol 1e-5 times
the reference's largest magnitude, at least 1e-5). Prints one line per case
and "N passed, M failed"; exits 1 when a case fails."""
import concurrent.futures
import json
import os
import subprocess
import sys

import numpy as np


def run_case(bin_dir, case_dir, work):
    name = os.path.basename(case_dir)
    out = os.path.join(work, name)
    subprocess.run(["rm", "-rf", out, out + "-out"])
    c = subprocess.run([os.path.join(bin_dir, "hetpar-compile"),
                        os.path.join(case_dir, "model.onnx"), "--mode", "training",
                        "--loss", "output", "--optimizer", "none", "--targets", "cpu", "--opt-level=1",
                        "-o", out], capture_output=True, text=True)
    if c.returncode:
        return name, False, "compile: " + c.stderr.strip().splitlines()[-1]
    r = subprocess.run([os.path.join(bin_dir, "hetpar-run"), out, "--backend", "cpu",
                        "--outputs", out + "-out"], capture_output=True, text=True)
    if r.returncode:
        return name, False, "run: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    outputs = json.load(open(os.path.join(out, "manifest.json")))["devices"][0]["outputs"]
    worst = 0.0
    for i, o in enumerate(outputs):
        ref_file = "loss.npy" if i == 0 else "grad_%s.npy" % o["name"][:-len(".grad")]
        ref_path = os.path.join(case_dir, ref_file)
        if not os.path.exists(ref_path):
            return name, False, "no reference %s for output %s" % (ref_file, o["name"])
        ref = np.load(ref_path).astype(np.float64)
        got = np.load(os.path.join(out + "-out", "output_%d.npy" % i)).astype(np.float64)
        if got.shape != ref.shape:
            return name, False, "%s: shape %s, reference %s" % (o["name"], got.shape, ref.shape)
        scale = max(float(np.abs(ref).max()) if ref.size else 0.0, 1.0)
        err = float(np.abs(got - ref).max()) if ref.size else 0.0
        if not np.allclose(got, ref, rtol=1e-4, atol=1e-5 * scale):
            return name, False, "%s: max error %.3g (scale %.3g)" % (o["name"], err, scale)
        worst = max(worst, err / scale)
    return name, True, "%d gradients, largest scaled error %.2g" % (len(outputs) - 1, worst)


def main():
    bin_dir, cases_dir, work = sys.argv[1:4]
    jobs, only = 2, None
    args = sys.argv[4:]
    if "--jobs" in args:
        jobs = int(args[args.index("--jobs") + 1])
    if "--only" in args:
        only = set(args[args.index("--only") + 1].split(","))
    os.makedirs(work, exist_ok=True)
    cases = sorted(d for d in os.listdir(cases_dir)
                   if os.path.isdir(os.path.join(cases_dir, d)) and (not only or d in only))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for name, ok, msg in pool.map(lambda c: run_case(bin_dir, os.path.join(cases_dir, c), work), cases):
            print("%s %s: %s" % ("PASS" if ok else "FAIL", name, msg))
            failed += not ok
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
