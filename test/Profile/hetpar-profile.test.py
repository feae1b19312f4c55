"""Reads a CPU profile's derived rates back against its raw measurements."""
import json
import sys

p = json.load(open(sys.argv[1]))
dev, meas = p["devices"]["CPU"], p["measurements"]
gemm = meas["gemm 512 512 512 1 4"]
ok = abs(dev["matmul_flops"] * gemm / 268435456 - 1) < 1e-4
print("matmul_flops = 268435456 / gemm time: %s" % ("ok" if ok else "WRONG"))
add = meas["elementwise 2097152 4 2 2097152 2097152"]
ok = abs(dev["memory_bandwidth"] * add / 25165824 - 1) < 1e-4
print("memory_bandwidth = 25165824 / elementwise time: %s" % ("ok" if ok else "WRONG"))
