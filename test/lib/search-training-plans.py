#!/usr/bin/env python3
"""Plans the training step of each model on each cluster with the search and
compiles the plan into one program per device (hetpar-compile --mode training
--cluster C --targets none: the partition, the training passes of every
device and code generation, without building).

  search-training-plans.py --bin BIN --work DIR
      --model NAME:MODEL.onnx:SHAPES:LOSS ... --cluster C.yaml ...

SHAPES is NAME=DxD[;NAME=DxD...] (--input-shape each), LOSS cross-entropy or
mse (against the input "labels"). Prints per model and cluster the searched
plan's stages, data-parallel replicas and their rows per microbatch (from
hetpar-compile's summary), or REFUSED with the message, and a last line
"N compiled, M refused"; exits 1 when any was refused."""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--cluster", action="append", default=[])
    args = ap.parse_args()
    done = refused = 0
    for spec in args.model:
        name, path, shapes, loss = spec.split(":")
        for cluster in args.cluster:
            cname = os.path.splitext(os.path.basename(cluster))[0]
            out = os.path.join(args.work, "%s-%s" % (name, cname))
            cmd = [os.path.join(args.bin, "hetpar-compile"), path, "--mode",
                   "training", "--loss", loss, "--labels", "labels",
                   "--targets", "none", "--eval-program=false",
                   "--search-budget", "2", "--cluster", cluster, "-o", out]
            for s in shapes.split(";"):
                cmd += ["--input-shape", s]
            p = subprocess.run(cmd, capture_output=True, text=True)
            text = p.stdout + p.stderr
            stages = re.search(r"plan \(search[^)]*\): (\d+) stage", text)
            rows = re.search(r"training programs: (.*)", text)
            if p.returncode or not stages:
                refused += 1
                lines = [l for l in text.splitlines() if "error" in l]
                print("%s %s: REFUSED %s" % (name, cname,
                                             (lines or [text.strip()])[0]))
                continue
            done += 1
            print("%s %s: %s stage(s); %s" % (
                name, cname, stages.group(1),
                rows.group(1) if rows else "pipeline programs"))
    print("%d compiled, %d refused" % (done, refused))
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
