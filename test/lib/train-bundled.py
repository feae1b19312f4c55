#!/usr/bin/env python3
"""Trains bundled models one SGD step (lr 1: gradients) and two AdamW steps
(lr 1e-3) and compares with the PyTorch references through
compare-training.py.

  train-bundled.py [--compile-flag=FLAG ...] BIN_DIR MODELS_DIR WORK_DIR
                   MODEL:LOSS[:MODE+MODE] ...

MODE is grad or adamw2 (both by default). Each --compile-flag adds FLAG to
every hetpar-compile command (e.g. --compile-flag=--recompute).

Prints "<model> <mode>: <compare-training's last line>" per run and
"N passed, M failed"; exits 1 on a failure."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(bin_dir, models, work, model, loss, mode, flags=()):
    out = os.path.join(work, "%s-%s" % (model, mode))
    opt = ["--optimizer", "sgd", "--lr", "1"] if mode == "grad" else \
        ["--optimizer", "adamw", "--lr", "1e-3"]
    steps = {"grad": "1", "adamw": "1", "adamw2": "2"}[mode]
    src = os.path.join(models, model)
    cmds = [
        [os.path.join(bin_dir, "hetpar-compile"), os.path.join(src, "model.onnx"),
         "--mode", "training", "--loss", loss, "--labels", "labels", "--targets", "cpu",
         "--opt-level=1", "-o", out] + opt + list(flags),
        [os.path.join(bin_dir, "hetpar-run"), out, "--backend", "cpu", "--train", "--data",
         os.path.join(src, "train"), "--steps", steps, "--checkpoint", out + "-ck",
         "--loss-log", out + ".log"],
        [sys.executable, os.path.join(HERE, "compare-training.py"), "--checkpoint",
         out + "-ck", "--ref",
         os.path.join(src, "train"), "--model", os.path.join(src, "model.onnx"),
         "--mode", mode, "--loss-log", out + ".log"],
    ]
    for c in cmds:
        p = subprocess.run(c, capture_output=True, text=True)
        if p.returncode:
            lines = (p.stdout + p.stderr).strip().splitlines()
            return False, " | ".join(lines[-3:])
    return True, p.stdout.strip().splitlines()[-1]


def main():
    prefix = "--compile-flag="
    flags = [a[len(prefix):] for a in sys.argv[1:] if a.startswith(prefix)]
    args = [a for a in sys.argv[1:] if not a.startswith(prefix)]
    bin_dir, models, work = args[0:3]
    failed = total = 0
    for spec in args[3:]:
        model, loss, *modes = spec.split(":")
        for mode in (modes[0].split("+") if modes else ("grad", "adamw2")):
            ok, msg = run(bin_dir, models, work, model, loss, mode, flags)
            print("%s %s: %s" % (model, mode, msg))
            total += 1
            failed += not ok
    print("%d passed, %d failed" % (total - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
