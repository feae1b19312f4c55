#!/usr/bin/env python3
"""Writes the .npy fixtures and the fake program's output folder under Inputs/.

Run with Debian's Python (numpy 1.24): /usr/bin/python3 make_inputs.py
The files are committed; tests never run this script. RuntimeTest.cpp checks
that hetpar::rt::readNpy reads them and that writeNpy reproduces the version 1.0
files byte for byte.
"""
import json
import os
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "Inputs")


def save(name, array):
    np.save(os.path.join(INPUTS, name), array)


def save_version(name, array, version):
    with open(os.path.join(INPUTS, name), "wb") as f:
        np.lib.format.write_array(f, array, version=version)


def main():
    os.makedirs(INPUTS, exist_ok=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bias = np.array([1, 2, 3], dtype=np.float32)
    # One of each dtype hetpar-run reads, scalars and 0-size arrays.
    save("f32_2x3.npy", x)
    save("f32_1x3.npy", np.array([[1, 2, 3]], dtype=np.float32))
    save("f32_0x3.npy", np.zeros((0, 3), dtype=np.float32))
    save("f64_2x3.npy", x.astype(np.float64))
    save("f64_scalar.npy", np.array(3.25, dtype=np.float64))
    save("f16_4.npy", np.array([0.5, -1.0, 65504.0, np.inf], dtype=np.float16))
    save("i64_2x2.npy", np.array([[1, -2], [3, 1 << 40]], dtype=np.int64))
    save("i32_3.npy", np.array([7, -8, 2147483647], dtype=np.int32))
    save("i16_2.npy", np.array([-32768, 300], dtype=np.int16))
    save("i8_3.npy", np.array([-128, 0, 127], dtype=np.int8))
    save("u8_3.npy", np.array([0, 1, 255], dtype=np.uint8))
    save("bool_3.npy", np.array([True, False, True]))
    # Other header versions and the layouts the runtime rejects.
    save_version("f32_v2.npy", x, (2, 0))
    save_version("f32_v3.npy", x, (3, 0))
    save("f32_fortran.npy", np.asfortranarray(x))
    save("f32_bigendian.npy", np.arange(3, dtype=">f4"))
    save("u32_3.npy", np.array([1, 2, 3], dtype=np.uint32))
    # The fake program computes y = x + bias.
    save("fake_output.npy", x + bias)

    # An output folder for the fake program (runtime/test/FakeProgram.cpp);
    # tests copy libhetpar_fake_program.so into it as device_0.cpu.so.
    out = os.path.join(INPUTS, "fake-out")
    os.makedirs(out, exist_ok=True)
    blob = bias.tobytes()
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(blob)
    index = {"file": "weights.bin", "bytes": len(blob), "tensors": [
        {"name": "bias", "dtype": "float32", "shape": [3], "offset": 0,
         "bytes": len(blob), "crc32": zlib.crc32(blob)}]}
    manifest = {
        "format": "hetpar-program", "version": 1, "model": "model.onnx",
        "dtype": "float32",
        "devices": [{
            "id": 0, "source": "device_0.cu",
            "libraries": {"cpu": "device_0.cpu.so"},
            "arena_bytes": 256, "weights_bytes": len(blob),
            "weights": "weights.bin", "weights_index": "weights.json",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 3]}],
            "outputs": [{"name": "y", "dtype": "float32", "shape": [2, 3]}]}]}
    for name, doc in (("weights.json", index), ("manifest.json", manifest)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
