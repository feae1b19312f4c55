#!/usr/bin/python3
"""A sweep of every operator schema of the ONNX library through the importer.

For each schema of the default domain that Debian's onnx package knows (every
version: `onnx.defs.get_all_schemas_with_history()`), and for each of its
inputs in turn, writes one-node models at the schema's opset where that input
has rank 0, 1 and 2 and the others rank 4 (float32, dims of 2; required
attributes filled with a value of their type), then runs
`hetpar-compile MODEL --emit=mlir` on each. An error is the expected answer
to most of them; a signal (a crash) or a run over the time limit (a hang) is
a defect. The inference functions of ONNX assume ranks their schemas do not
check (STFT, the opset-1 recurrences: docs/reliability.md), which is what
this sweep looks for, beside the coverage-guided fuzzers.

Usage: /usr/bin/python3 bench/fuzz/schema_sweep.py [BUILD_DIR]
  (BUILD_DIR: a HetPar build, default build/). Prints each crashing or
  hanging model and a summary; exit status 1 when there is one. About two
  minutes on 2 cores for the 2151 models of onnx 1.12.
"""
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, defs, helper

TIMEOUT_S = 20  # a hang: one model compiles in well under a second
AttrType = defs.OpSchema.AttrType
DEFAULTS = {
    AttrType.INT: 1,
    AttrType.INTS: [1],
    AttrType.FLOAT: 1.0,
    AttrType.FLOATS: [1.0],
    AttrType.STRING: "a",
    AttrType.STRINGS: ["a"],
}


def required_attributes(schema):
    """The schema's required attributes with a value each, or None when one
    has a kind this sweep cannot fill (a graph)."""
    out = {}
    for name, attr in schema.attributes.items():
        if not attr.required:
            continue
        if attr.type == AttrType.TENSOR:
            out[name] = helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0])
        elif attr.type == AttrType.STRING and schema.name == "Einsum":
            out[name] = "ab,b->a"
        elif attr.type in DEFAULTS:
            out[name] = DEFAULTS[attr.type]
        else:
            return None
    return out


def models(folder):
    """Writes the sweep's models into `folder`; yields their paths."""
    for schema in defs.get_all_schemas_with_history():
        if schema.domain != "" or schema.deprecated or not schema.inputs:
            continue
        attrs = required_attributes(schema)
        if attrs is None:
            continue
        n_in = len(schema.inputs)
        outs = ["o%d" % j for j in range(max(1, len(schema.outputs)))]
        for pos in range(n_in):
            for rank in (0, 1, 2):
                names = ["i%d" % k for k in range(n_in)]
                inputs = [
                    helper.make_tensor_value_info(
                        name, TensorProto.FLOAT,
                        [2] * rank if k == pos else [2, 2, 2, 2])
                    for k, name in enumerate(names)
                ]
                node = helper.make_node(schema.name, names, outs, **attrs)
                graph = helper.make_graph(
                    [node], "g", inputs,
                    [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                     for o in outs])
                model = helper.make_model(
                    graph,
                    opset_imports=[helper.make_opsetid("", schema.since_version)])
                model.ir_version = 7
                path = os.path.join(folder, "%s-v%d-in%d-r%d.onnx" % (
                    schema.name, schema.since_version, pos, rank))
                onnx.save(model, path)
                yield path


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    compiler = os.path.join(build, "bin", "hetpar-compile")
    if not os.access(compiler, os.X_OK):
        sys.exit("schema_sweep.py: %s not found (scripts/build.sh)" % compiler)
    bad, total = [], 0
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "out.mlir")
        for path in models(folder):
            total += 1
            try:
                run = subprocess.run(
                    [compiler, path, "--emit=mlir", "-o", out],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    timeout=TIMEOUT_S)
                if run.returncode < 0 or run.returncode >= 128:
                    bad.append("%s: signal %d" % (
                        os.path.basename(path),
                        -run.returncode if run.returncode < 0
                        else run.returncode - 128))
            except subprocess.TimeoutExpired:
                bad.append("%s: over %d s" % (os.path.basename(path),
                                               TIMEOUT_S))
    for line in bad:
        print(line)
    print("schema sweep: %d models, %d crashed or hung" % (total, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
