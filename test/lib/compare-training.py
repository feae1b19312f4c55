#!/usr/bin/env python3
"""Checks a training run's checkpoint and loss log against PyTorch references
(docs/training-references.md); never against HetPar's own output.

  compare-training.py --checkpoint CK.safetensors|CK_DIR --ref DIR --model MODEL.onnx
                      --mode grad|adamw|adamw2 [--loss-log LOG] [--rtol R --atol A]

grad:   the run was one SGD step with lr 1 (no momentum or decay), so each
        trained parameter must equal initializer - DIR/grad_<name>.npy;
adamw:  one AdamW step: each parameter equals DIR/adamw_<name>.npy;
adamw2: two steps: DIR/adamw2_<name>.npy.
Buffers (BatchNormalization's running statistics, docs/training.md) are
compared where the reference has them: DIR/running_<name>.npy after step 1
(grad, adamw), DIR/running2_<name>.npy after step 2 (adamw2).
With --loss-log, step 1's loss must equal DIR/loss.npy (and step 2's
DIR/loss_step2.npy for adamw2). With --exported FILE.onnx (hetpar-run
--export-onnx of the same run), every checkpoint tensor named like one of its
initializers must equal it bit for bit. The tolerances default to
DIR/reference.json's "tolerance" for the mode when it gives one (a model whose
float32 gradients are noisier than the defaults allow says so there). Prints
the largest error per check and exits 1 on a mismatch (numpy.allclose
semantics)."""
import argparse
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_reader import read_checkpoints  # noqa: E402

# AdamW moves an element by lr * m / (sqrt(v) + eps), about lr * g / (|g| + eps)
# on step 1 (eps 1e-8): where |g| is near eps the move depends on the last bits of
# g, which another summation order changes. Elements whose step-1 gradient
# (DIR/grad_<name>.npy, PyTorch's) is below ILL_CONDITIONED (a hundred times the
# float32 gradient errors of the grad check, about 1e-8 to 4e-7) are therefore
# held only to the largest move AdamW can make: steps * lr * (1 + weight decay).
ILL_CONDITIONED = 1e-6

def file_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mode", choices=["grad", "adamw", "adamw2"], required=True)
    ap.add_argument("--loss-log")
    ap.add_argument("--lr", type=float, default=1e-3, help="the AdamW runs' learning rate")
    ap.add_argument("--exported")
    ap.add_argument("--rtol", type=float, default=None, help="default 1e-4")
    ap.add_argument("--atol", type=float, default=None,
                    help="default 1e-5 for grad; 5e-5 for adamw/adamw2: AdamW moves each "
                    "weight by about lr whatever the gradient, so near-zero gradients "
                    "(summed in another order) move it differently; 5e-5 is 2.5%% of "
                    "two steps at lr 1e-3")
    a = ap.parse_args()
    ref_json = os.path.join(a.ref, "reference.json")
    given = (json.load(open(ref_json)).get("tolerance", {}).get(a.mode, {})
             if os.path.exists(ref_json) else {})
    if a.atol is None:
        a.atol = given.get("atol", 1e-5 if a.mode == "grad" else 5e-5)
    if a.rtol is None:
        a.rtol = given.get("rtol", 1e-4)
    # A folder: its files joined (a pipeline writes one per stage, a sharded
    # run one per device).
    paths = [a.checkpoint]
    if os.path.isdir(a.checkpoint):
        paths = [os.path.join(a.checkpoint, f) for f in sorted(os.listdir(a.checkpoint))
                 if f.endswith(".safetensors")]
    try:
        ck = read_checkpoints(paths)
    except ValueError as e:
        sys.exit(str(e))
    model = onnx.load(a.model, load_external_data=False)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    ok, worst = True, (0.0, "")
    checked = ill_conditioned = 0
    ill_worst = 0.0
    for name, init in inits.items():
        if init.dtype != np.float32:
            continue
        base = os.path.join(a.ref, "%s_%s.npy" % ({"grad": "grad", "adamw": "adamw",
                                                   "adamw2": "adamw2"}[a.mode],
                                                  file_name(name)))
        if not os.path.exists(base):
            continue  # a Constant-like initializer the reference does not train
        ref = np.load(base)
        expected = init - ref if a.mode == "grad" else ref
        if name not in ck:
            print("FAIL %s: not in the checkpoint" % name)
            ok = False
            continue
        got = ck[name]
        err = np.abs(got.astype(np.float64) - expected)
        tol = a.atol + a.rtol * np.abs(expected)
        grad = os.path.join(a.ref, "grad_%s.npy" % file_name(name))
        if a.mode != "grad" and os.path.exists(grad):
            steps = 2 if a.mode == "adamw2" else 1
            ill = np.abs(np.load(grad)) < ILL_CONDITIONED
            tol = np.where(ill, steps * a.lr * 1.01 + a.atol, tol)
            ill_conditioned += int(ill.sum())
            if ill.any():
                ill_worst = max(ill_worst, float(err[ill].max()))
        if not np.all(err <= tol):
            i = int(np.argmax(err - tol))
            print("FAIL %s: max error %.3g at %d (got %.7g, expected %.7g)"
                  % (name, err.max(), i, got.ravel()[i], expected.ravel()[i]))
            ok = False
        conditioned = err[tol <= a.atol + a.rtol * np.abs(expected)]
        if conditioned.size:
            worst = max(worst, (float(conditioned.max()), name))
        checked += 1
    if checked == 0:
        print("FAIL: no parameter compared")
        ok = False
    buffers = 0
    prefix = "running2_" if a.mode == "adamw2" else "running_"
    for name in inits:
        path = os.path.join(a.ref, prefix + file_name(name) + ".npy")
        if not os.path.exists(path):
            continue
        expected = np.load(path).astype(np.float64)
        got = ck.get(name)
        if got is None:
            print("FAIL buffer %s: not in the checkpoint" % name)
            ok = False
            continue
        err = np.abs(got.astype(np.float64) - expected)
        if not np.all(err <= a.atol + a.rtol * np.abs(expected)):
            print("FAIL buffer %s: max error %.3g (got %s, expected %s)"
                  % (name, err.max(), got.ravel()[:4], expected.ravel()[:4]))
            ok = False
        print("buffer %s: largest error %.3g" % (name, err.max()))
        buffers += 1
    if a.loss_log:
        losses = [json.loads(l)["loss"] for l in open(a.loss_log) if l.strip()]
        refs = [float(np.load(os.path.join(a.ref, "loss.npy")))]
        if a.mode == "adamw2":
            refs.append(float(np.load(os.path.join(a.ref, "loss_step2.npy"))))
        for k, r in enumerate(refs):
            if k >= len(losses) or not np.isclose(losses[k], r, rtol=1e-4, atol=1e-6):
                print("FAIL loss of step %d: %s, expected %.7g"
                      % (k + 1, losses[k] if k < len(losses) else "missing", r))
                ok = False
            else:
                print("loss step %d: %.7g (reference %.7g)" % (k + 1, losses[k], r))
    if a.exported:
        exported = {i.name: numpy_helper.to_array(i)
                    for i in onnx.load(a.exported).graph.initializer}
        same = [n for n in ck if n in exported]
        bad = [n for n in same if exported[n].tobytes() != ck[n].tobytes()]
        if bad or not same:
            print("FAIL exported: %s differ from the checkpoint" % (bad or "no tensors"))
            ok = False
        else:
            print("exported: %d tensors equal the checkpoint's" % len(same))
    if ill_conditioned:
        print("ill-conditioned: %d elements with |step-1 gradient| < %g, held to %d x lr; "
              "largest error among them %.3g"
              % (ill_conditioned, ILL_CONDITIONED, 2 if a.mode == "adamw2" else 1, ill_worst))
    print("%s: %d parameters%s, largest error %.3g (%s)"
          % ("match" if ok else "MISMATCH", checked,
             ", %d buffers" % buffers if buffers else "", worst[0], worst[1]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
