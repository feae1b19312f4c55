#!/usr/bin/env python3
"""Exports the two small models that HetPar's convergence tests train from scratch,
with plain torch (no transformers), and records a PyTorch training run of each as the
convergence reference.

  digits-mlp  64-128-10 perceptron with ReLU, for scikit-learn's digits
              (scripts/models/make_digits.py). Input `x` float32 [B, 64], output
              `logits` [B, 10].
  char-gpt    tiny GPT for byte-level text (scripts/models/make_chars.py on
              /usr/share/common-licenses/GPL-3): 2 pre-LayerNorm blocks, d=64,
              4 heads, causal mask, learned token and position embeddings, MLP 4d with
              GELU (erf), final LayerNorm, untied head. Input `input_ids` int64
              [B, 32], output `logits` [B, 32, V], V = 76 for GPL-3; an untrained
              model's cross-entropy is about ln(V) = 4.3307.

Written to examples/models/<name>/:
  model.onnx          static batch (32 for digits-mlp, 16 for char-gpt), as the other
                      bundled models' model.onnx
  model-dynamic.onnx  dynamic batch axis (the sequence stays 32)
  input_0.npy, output_0.npy   the first batch of the data set and ONNX Runtime's output
                      on model.onnx (the dynamic model is checked to agree)
  convergence.json    a PyTorch run: AdamW (lr 1e-3, betas (0.9, 0.999), eps 1e-8,
                      weight decay 0.01), constant lr, batches taken in order from the
                      training data (step i uses samples [i*B, (i+1)*B) modulo the
                      number of full batches), the loss at every step, and (digits) the
                      test accuracy before and after.

The models are exported in training mode (torch.onnx.TrainingMode.TRAINING, no
constant folding; there is no dropout or batch norm, so the graph computes the same
function): in eval mode torch 1.13 merges initializers of equal value, which would
tie all LayerNorm weights (all ones at initialization) into one ONNX parameter. So
every float initializer here is exactly one torch parameter, under its torch name,
in its torch layout (nn.Linear weights [out, in], used by Gemm transB=1 or by MatMul
after a Transpose node).

Usage: python3 scripts/models/export_train_models.py [--out examples/models] [names...]
Requirements: python3-torch 1.13, python3-onnx, python3-sklearn; onnxruntime (PyPI)
for the reference outputs.
"""
import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_chars  # noqa: E402
import make_digits  # noqa: E402

OPSET = 17
TEXT = "/usr/share/common-licenses/GPL-3"
SEQ = 32


class DigitsMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Block(torch.nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.out = torch.nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        # Static sequence and head sizes (-1 for the batch), so that the export has no
        # Shape ops and only the batch axis is dynamic.
        t, d = self.causal.shape[0], self.ln1.normalized_shape[0]
        h, hd = self.heads, d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.reshape(-1, t, h, hd).transpose(1, 2)
        k = k.reshape(-1, t, h, hd).transpose(1, 2)
        v = v.reshape(-1, t, h, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.causal, float("-inf"))
        y = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(-1, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class CharGPT(torch.nn.Module):
    def __init__(self, vocab, d=64, heads=4, layers=2, seq=SEQ):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(seq, d)
        self.blocks = torch.nn.ModuleList([Block(d, heads, seq) for _ in range(layers)])
        self.ln_f = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)
        for m in self.modules():  # GPT-2 style initialization
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(m.weight, 0.0, 0.02)
                if isinstance(m, torch.nn.Linear):
                    torch.nn.init.zeros_(m.bias)

    def forward(self, input_ids):  # input_ids [B, seq] (the sequence is fixed)
        x = self.tok(input_ids) + self.pos.weight
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def digits_data():
    (xtr, ytr), (xte, yte) = make_digits.load()
    return {"x": xtr}, ytr, ({"x": xte}, yte)


def chars_data():
    with open(TEXT, "rb") as f:
        data = f.read()
    x, y, vocab = make_chars.make(data, SEQ)
    return {"input_ids": x}, y, (vocab, hashlib.sha256(data).hexdigest())


def digits_mlp():
    feeds, labels, test = digits_data()
    return DigitsMLP(), feeds, labels, test, 32, ["x"], ["logits"], {"x": {0: "batch"}, "logits": {0: "batch"}}


def char_gpt():
    feeds, labels, (vocab, sha) = chars_data()
    return (CharGPT(len(vocab)), feeds, labels, (vocab, sha), 16, ["input_ids"], ["logits"],
            {"input_ids": {0: "batch"}, "logits": {0: "batch"}})


MODELS = {"digits-mlp": digits_mlp, "char-gpt": char_gpt}


def build(name):
    """The module with export-time weights (seed 0), its graph input and output names
    (for train_reference.py, as export_models.MODELS)."""
    torch.manual_seed(0)
    model, feeds, _, _, batch, ins, outs, _ = MODELS[name]()
    return model, tuple(torch.tensor(feeds[n][:batch]) for n in ins), ins, outs, None


def first_labels(name):
    """The labels of the first batch of the data set (the batch of input_0.npy)."""
    torch.manual_seed(0)
    _, _, labels, _, batch, _, _, _ = MODELS[name]()
    return labels[:batch]


def train_run(model, feeds, labels, batch, steps, names):
    model = model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    nb = len(labels) // batch
    losses = []
    for i in range(steps):
        j = (i % nb) * batch
        out = model(*[torch.tensor(feeds[n][j:j + batch]) for n in names])
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), torch.tensor(labels[j:j + batch]).reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(round(float(loss.item()), 6))
    return losses


def export(name, out_root):
    import onnx
    from onnx import numpy_helper
    import onnxruntime as ort

    torch.manual_seed(0)
    model, feeds, labels, extra, batch, ins, outs, dyn = MODELS[name]()
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    args = tuple(torch.tensor(feeds[n][:batch]) for n in ins)
    static_path, dynamic_path = os.path.join(out, "model.onnx"), os.path.join(out, "model-dynamic.onnx")
    for path, axes in ((static_path, None), (dynamic_path, dyn)):
        torch.onnx.export(model, args, path, input_names=ins, output_names=outs, dynamic_axes=axes,
                          opset_version=OPSET, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        m = onnx.load(path)
        if axes:  # the exporter names some static output dims symbolically: pin them
            static = onnx.load(static_path).graph.output
            for o, so in zip(m.graph.output, static):
                for i, (dd, sd) in enumerate(zip(o.type.tensor_type.shape.dim, so.type.tensor_type.shape.dim)):
                    if i not in axes.get(o.name, {}) and dd.dim_param:
                        dd.dim_value = sd.dim_value
            onnx.save(m, path)
        onnx.checker.check_model(m)
        got = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer
               if t.data_type == onnx.TensorProto.FLOAT}
        want = {k: v.detach().numpy() for k, v in model.named_parameters()}
        assert sorted(got) == sorted(want), (sorted(got), sorted(want))
        for k in want:
            assert np.array_equal(got[k], want[k]), k
    feed = {n: a.numpy() for n, a in zip(ins, args)}
    for i, n in enumerate(ins):
        np.save(os.path.join(out, f"input_{i}.npy"), feed[n])
    ref = ort.InferenceSession(static_path, providers=["CPUExecutionProvider"]).run(None, feed)
    dyn_out = ort.InferenceSession(dynamic_path, providers=["CPUExecutionProvider"]).run(None, feed)
    with torch.no_grad():
        expected = model(*args).numpy()
    np.testing.assert_allclose(ref[0], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dyn_out[0], ref[0], rtol=1e-5, atol=1e-5)
    np.save(os.path.join(out, "output_0.npy"), ref[0])

    conv = {"optimizer": {"kind": "adamw", "lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
                          "weight_decay": 0.01, "schedule": "constant"},
            "loss": "cross-entropy", "batch_size": batch,
            "batches": "in order: step i uses samples [i*B, (i+1)*B) modulo the full batches",
            "initial_weights": "model.onnx"}
    if name == "digits-mlp":
        xte, yte = extra
        steps = 450  # 10 epochs of 45 batches
        with torch.no_grad():
            acc0 = float((model(torch.tensor(xte["x"])).argmax(-1).numpy() == yte).mean())
        losses = train_run(model, feeds, labels, batch, steps, ins)
        with torch.no_grad():
            acc = float((model(torch.tensor(xte["x"])).argmax(-1).numpy() == yte).mean())
        conv.update(data="python3 scripts/models/make_digits.py DIR; train on DIR/train (x.npy, labels.npy)",
                    steps=steps, test_accuracy_before=acc0, test_accuracy_after=acc,
                    train_loss=losses)
    else:
        vocab, sha = extra
        steps = 300
        losses = train_run(model, feeds, labels, batch, steps, ins)
        conv.update(data=f"python3 scripts/models/make_chars.py {TEXT} DIR --seq {SEQ}",
                    text_sha256=sha, vocab_size=len(vocab), ln_vocab=math.log(len(vocab)),
                    steps=steps, train_loss=losses)
    with open(os.path.join(out, "convergence.json"), "w") as f:
        json.dump(conv, f, indent=1)
        f.write("\n")
    l = conv["train_loss"]
    print(f"{name}: loss {l[0]:.4f} -> {np.mean(l[-10:]):.4f} (mean of last 10) after {len(l)} steps"
          + (f", test accuracy {conv['test_accuracy_before']:.3f} -> {conv['test_accuracy_after']:.3f}"
             if "test_accuracy_after" in conv else f", ln V = {conv['ln_vocab']:.4f}")
          + ", " + ", ".join(f"{os.path.basename(p)} {os.path.getsize(p)} bytes" for p in (static_path, dynamic_path)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "examples", "models"))
    ap.add_argument("names", nargs="*", default=list(MODELS))
    a = ap.parse_args()
    for n in a.names:
        export(n, a.out)


if __name__ == "__main__":
    main()
