#!/usr/bin/python3
"""Compares plan.json's flops_per_step with the standard dense-transformer count
(Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC 2021, section 5.1): a forward pass of a GPT model with L
layers, hidden size h, vocabulary V, on B sequences of s tokens takes
    24 B s L h^2  +  4 B s^2 L h  +  2 B s h V   FLOP
(the 2 x parameters x tokens of the matmuls, the attention scores and their
weighted sum, and the logits). Training (forward and backward) takes 3x that.

Usage: transformer-flops.py plan.json B s L h V factor   (factor: 1 or 3)
Prints both counts and their relative difference; exits 1 beyond 2%.
"""
import json
import sys

plan, B, s, L, h, V, factor = sys.argv[1], *map(int, sys.argv[2:8])
got = json.load(open(plan))["flops_per_step"]
want = factor * (24 * B * s * L * h * h + 4 * B * s * s * L * h + 2 * B * s * h * V)
diff = got / want - 1
print("flops_per_step %d, dense-transformer count %d, difference %.2f%%" % (got, want, 100 * diff))
if abs(diff) > 0.02:
    print("more than 2% apart")
    sys.exit(1)
print("within 2%")
