#!/usr/bin/env python3
"""Compares the arena of two compiled programs (manifest.json
devices[0].arena_bytes: activations, gradients and temporaries).

  arena-ratio.py BASE_DIR OTHER_DIR MAX_RATIO

Prints "arena: BASE -> OTHER bytes" and "ratio at most MAX_RATIO: yes|no"
(OTHER / BASE); exits 1 when the ratio is above MAX_RATIO."""
import json
import os
import sys


def arena(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        return int(json.load(f)["devices"][0]["arena_bytes"])


def main():
    base, other, limit = arena(sys.argv[1]), arena(sys.argv[2]), float(sys.argv[3])
    ratio = other / base
    print("arena: %d -> %d bytes (ratio %.3f)" % (base, other, ratio))
    ok = ratio <= limit
    print("ratio at most %s: %s" % (sys.argv[3], "yes" if ok else "no"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
