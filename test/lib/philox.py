#!/usr/bin/env python3
"""A reference Philox4x32-10 and the Dropout mask HetPar draws with it, in
numpy, written from the published algorithm (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC 2011; Random123's philox4x32 with R = 10):
tests compute the masks they expect with it, never with HetPar's kernel.
Checked against Random123's tests/kat_vectors on import (`kat()`).

HetPar's Dropout (onnx.Dropout, runtime/include/hetpar/device/hetpar_device.h):
element i of the flattened tensor takes word i % 4 of
philox(counter = (g lo, g hi, step lo, step hi) with g = i // 4 (32-bit
halves of 64-bit values), key = (seed lo, seed hi)) and is dropped when that
word is below floor(ratio * 2**32). A Dropout without an ONNX seed gets
splitmix64(program_seed + k), k counting such Dropouts in program order.
"""
import numpy as np

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr, key):
    """ctr: uint32 array [..., 4]; key: two ints. Returns uint32 [..., 4]."""
    c = [np.asarray(ctr, np.uint64)[..., j] for j in range(4)]
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0, p1 = M0 * c[0], M1 * c[2]  # exact: 32 x 32 bits fit in uint64
        hi0, lo0 = p0 >> np.uint64(32), p0 & MASK32
        hi1, lo1 = p1 >> np.uint64(32), p1 & MASK32
        c = [hi1 ^ c[1] ^ np.uint64(k0), lo1, hi0 ^ c[3] ^ np.uint64(k1), lo0]
    return np.stack(c, axis=-1).astype(np.uint32)


def kat():
    """Random123's three philox4x32 10 known answers."""
    vectors = [
        ([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
        ([0xffffffff] * 4, [0xffffffff] * 2, [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
        ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
         [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]),
    ]
    for ctr, key, want in vectors:
        got = philox4x32_10(np.array(ctr, np.uint32), key)
        assert [int(v) for v in got] == want, (ctr, key, [hex(v) for v in got])


def splitmix64(x):
    m = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def dropout_mask(shape, seed, step, ratio):
    """The keep mask (bool, `shape`) of a Dropout with this seed (uint64),
    training step (steps taken before) and float32 ratio."""
    n = int(np.prod(shape))
    g = np.arange((n + 3) // 4, dtype=np.uint64)
    seed &= (1 << 64) - 1
    ctr = np.stack([g & MASK32, g >> np.uint64(32),
                    np.full_like(g, step & 0xFFFFFFFF), np.full_like(g, step >> 32)], -1)
    words = philox4x32_10(ctr, (seed & 0xFFFFFFFF, seed >> 32)).reshape(-1)[:n]
    r = float(np.float32(ratio))
    threshold = 0 if r <= 0 else (1 << 32 if r >= 1 else int(r * 2.0 ** 32))
    return (words.astype(np.uint64) >= np.uint64(threshold)).reshape(shape)


kat()
