#!/usr/bin/env python3
"""End-to-end runs of partitioned models on the CPU backend.

For each model and cluster: compile the model for the cluster (the search's
plan, a baseline's with --baseline, or a hand-written plan with --plan), run
the per-device programs as one MPI process per device (hetpar-run starts
them), and compare the joined outputs with a reference. Prints one line per
run: model, cluster, plan (stages, data x tensor per stage, microbatches), the
predicted step time, and match or MISMATCH; exits 1 when any run fails.

Usage:
  run-e2e.py --bin BUILD/bin --work DIR --model NAME:MODEL.onnx:SHAPES
             [--inputs DIR] [--reference DIR] --cluster FILE ...
             [--plan search | baseline:NAME | FILE.json] ... [--budget S]
  run-e2e.py ... --models-file DIR/models.txt [--family REGEX] ...

SHAPES are --input-shape specs joined by ';' (empty for a static model).
--models-file adds the static models that test/E2E/Inputs/make_exports.py
wrote (DIR/NAME.onnx for each line "NAME FAMILY SHAPES" of the file), those
whose FAMILY matches --family when it is given; each model's inputs and
reference are DIR/NAME/input_<i>.npy and output_0.npy (PyTorch's).
Inputs: --inputs DIR holds input_<i>.npy; otherwise they are made here from
the model's input types (seeded: normal floats; integers from 0 to
--int-high; inputs named *mask* all ones but the last position of odd rows). The reference: --reference DIR holds output_<i>.npy (ONNX
Runtime's); otherwise the model compiled for one device (whose outputs the
real-model tests check against ONNX Runtime) gives it.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx


# The device programs' C++ is built at -O1 by default (--opt-level): these
# runs check values, not speed, and -O2's optimization was about a third of a
# program's build.


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)


def make_inputs(model_path, shapes, out_dir, int_high):
    """Seeded inputs for the model's graph inputs at the given shapes."""
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    given = {}
    for spec in shapes:
        name, dims = spec.split("=")
        given[name] = [int(d) for d in dims.split("x")]
    rng = np.random.default_rng(0)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for i, inp in enumerate(x for x in model.graph.input if x.name not in inits):
        tt = inp.type.tensor_type
        shape = given.get(inp.name) or [d.dim_value for d in tt.shape.dim]
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]
        if "mask" in inp.name:
            # Attention masks: attend everywhere but the last position of
            # odd rows (a padded batch).
            value = np.ones(shape, dtype)
            value[1::2, ..., -1] = 0
        elif np.issubdtype(dtype, np.integer):
            value = rng.integers(0, int_high, size=shape).astype(dtype)
        else:
            value = rng.standard_normal(shape).astype(dtype)
        path = os.path.join(out_dir, f"input_{i}.npy")
        np.save(path, value)
        paths.append(path)
    return paths


def exported_models(path, family):
    """--model specs of the static exports listed in `path` (make_exports.py's
    models.txt), those whose family matches the regex `family`."""
    folder = os.path.dirname(os.path.abspath(path))
    specs, io = [], {}
    with open(path) as f:
        for line in f:
            name, fam, _ = line.split()
            if family is None or re.search(family, fam):
                specs.append(f"{name}:{os.path.join(folder, name + '.onnx')}:")
                io[name] = os.path.join(folder, name)
    return specs, io


def describe_plan(plan):
    stages = " | ".join(
        f"{len(s.get('ops', []))} ops on {s['data']}x{s['tensor']} "
        f"[{','.join(str(d) for d in s['devices'])}]"
        + (f" shares {s['batch_shares']}" if s.get("batch_shares") and s["data"] > 1 else "")
        for s in plan["stages"])
    return f"{len(plan['stages'])} stage(s), {plan['microbatches']} mb: {stages}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--models-file")
    ap.add_argument("--family")
    ap.add_argument("--cluster", action="append", required=True)
    ap.add_argument("--plan", action="append", default=None)
    ap.add_argument("--inputs")
    ap.add_argument("--reference")
    ap.add_argument("--int-high", type=int, default=2)
    ap.add_argument("--budget", default="5")
    ap.add_argument("--rtol", default="1e-3")
    ap.add_argument("--atol", default="1e-4")
    ap.add_argument("--opt-level", default="1",
                    help="-O level of the device programs' builds (0 halves "
                         "a small model's build)")
    args = ap.parse_args()
    opt_level = f"--opt-level={args.opt_level}"
    model_io = {}  # per model: a folder with its inputs and reference
    if args.models_file:
        specs, model_io = exported_models(args.models_file, args.family)
        args.model += specs
    if not args.model:
        ap.error("no models: give --model or --models-file")
    plans = args.plan or ["search"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               # Oversubscribed ranks must yield the core while they wait.
               OMPI_MCA_mpi_yield_when_idle="1")
    compile_ = os.path.join(args.bin, "hetpar-compile")
    run_ = os.path.join(args.bin, "hetpar-run")
    failures = 0
    os.makedirs(args.work, exist_ok=True)
    for spec in args.model:
        name, path, shapes = spec.split(":", 2)
        shapes = [s for s in shapes.split(";") if s]
        shape_args = [f"--input-shape={s}" for s in shapes]
        base = os.path.join(args.work, name)
        inputs_dir = model_io.get(name, args.inputs)
        if inputs_dir:
            inputs = sorted(
                (os.path.join(inputs_dir, f) for f in os.listdir(inputs_dir)
                 if f.startswith("input_") and f.endswith(".npy")),
                key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
        else:
            inputs = make_inputs(path, shapes, base + "-inputs", args.int_high)
        reference = model_io.get(name, args.reference)
        if not reference:
            reference = base + "-reference"
            r = run([compile_, path, *shape_args, "--targets=cpu",
                     opt_level, "-o", base + "-single"])
            if r.returncode == 0:
                r = run([run_, base + "-single", "--backend", "cpu",
                         "--inputs", ",".join(inputs), "--outputs", reference])
            if r.returncode:
                print(f"{name}: the one-device reference failed:\n{r.stdout}")
                failures += 1
                continue
        for cluster in args.cluster:
            cname = os.path.basename(cluster).rsplit(".", 1)[0]
            for plan in plans:
                tag = os.path.basename(plan).replace(":", "-")
                out = f"{base}-{cname}-{tag}"
                how = ["--search-budget", args.budget]
                if plan.startswith("baseline:"):
                    how = ["--baseline", plan.split(":", 1)[1]]
                elif plan != "search":
                    how = ["--plan", plan]
                r = run([compile_, path, *shape_args, "--cluster", cluster,
                         *how, "--targets=cpu", opt_level, "-o", out])
                label = f"{name:9} {cname:22} {os.path.basename(plan):26}"
                if r.returncode:
                    print(f"{label} COMPILE FAILED\n{r.stdout}")
                    failures += 1
                    continue
                with open(os.path.join(out, "plan.json")) as f:
                    p = json.load(f)
                r = run([run_, out, "--backend", "cpu", "--inputs",
                         ",".join(inputs), "--check", reference,
                         "--rtol", args.rtol, "--atol", args.atol], env=env,
                        timeout=600)
                ok = r.returncode == 0 and "MISMATCH" not in r.stdout
                status = "match" if ok else "MISMATCH"
                print(f"{label} {status:8} predicted {p['predicted_step_time_s']:.3e} s"
                      f"  {describe_plan(p)}")
                if not ok:
                    print(r.stdout[-3000:])
                    failures += 1
                sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
