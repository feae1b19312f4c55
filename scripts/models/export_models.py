#!/usr/bin/env python3
"""Exports the small real models bundled in examples/models/ with PyTorch's ONNX
exporter and stores ONNX Runtime reference outputs next to them.

Each model is exported twice from the same weights:
  model.onnx          static shapes
  model-dynamic.onnx  dynamic batch (and sequence) axes
and gets inputs input_<i>.npy and ONNX Runtime outputs output_<i>.npy (computed on
the static model; the dynamic model is checked to give the same outputs).

Architectures (tiny configurations, randomly initialized with a fixed seed):
  gpt2    Hugging Face GPT2LMHeadModel        (decoder, learned positions, GELU-tanh)
  bert    Hugging Face BertModel              (encoder, attention mask, GELU-erf)
  llama   Hugging Face LlamaForCausalLM       (RMSNorm, rotary, SwiGLU, 4 heads / 2 KV heads)
  vit     Hugging Face ViTForImageClassification
  resnet18  ResNet-18 topology (BasicBlock x [2,2,2,2]) at 1/8 width
  mlp     3-layer perceptron with GELU

Requirements (not needed by the tests, which use the committed files): Debian's
python3-torch 1.13 and python3-onnx, plus onnxruntime and transformers 4.36 from
PyPI, for example in a venv made with `python3 -m venv --system-site-packages`.
Usage: python3 scripts/models/export_models.py [--out examples/models] [names...]
"""
import argparse
import os
import sys

import numpy as np
import torch

OPSET = 17  # the newest opset torch 1.13 exports


class FirstOutput(torch.nn.Module):
    """Calls a Hugging Face model with positional inputs bound to `names` and
    returns its first output (logits or hidden states) as a plain tensor."""

    def __init__(self, model, names, **extra):
        super().__init__()
        self.m = model
        self.names = names
        self.extra = extra

    def forward(self, *inputs):
        return self.m(**dict(zip(self.names, inputs)), return_dict=False, **self.extra)[0]


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
    model = GPT2LMHeadModel(cfg)

    ids = torch.randint(0, 512, (2, 16), dtype=torch.int64)
    return FirstOutput(model, ["input_ids"], use_cache=False), (ids,), ["input_ids"], ["logits"], {
        "input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}


def tiny_bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertModel(cfg, add_pooling_layer=False)


    ids = torch.randint(0, 512, (2, 16), dtype=torch.int64)
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 12:] = 0
    return FirstOutput(model, ["input_ids", "attention_mask"]), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], {
        "input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
        "last_hidden_state": {0: "batch", 1: "sequence"}}


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      rms_norm_eps=1e-5, use_cache=False, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg)

    ids = torch.randint(0, 512, (2, 16), dtype=torch.int64)
    return FirstOutput(model, ["input_ids"], use_cache=False), (ids,), ["input_ids"], ["logits"], {
        "input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}


def tiny_vit():
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=128, num_labels=10,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = ViTForImageClassification(cfg)

    x = torch.randn(2, 3, 32, 32)
    return FirstOutput(model, ["pixel_values"]), (x,), ["pixel_values"], ["logits"], {
        "pixel_values": {0: "batch"}, "logits": {0: "batch"}}


class BasicBlock(torch.nn.Module):
    """torchvision's ResNet BasicBlock: two 3x3 convolutions and a shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(torch.nn.Module):
    """ResNet-18 (He et al. 2016): stem, 4 stages of 2 BasicBlocks, global pool, fc."""

    def __init__(self, width=8, classes=10):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, width, 7, 2, 3, bias=False),
                                        torch.nn.BatchNorm2d(width), torch.nn.ReLU(),
                                        torch.nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for i, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
            for j in range(2):
                blocks.append(BasicBlock(cin, cout, 2 if (i > 0 and j == 0) else 1))
                cin = cout
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def tiny_resnet18():
    model = ResNet18()
    # Non-trivial batch-norm statistics so that folding them is visible.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 64, 64)
    return model, (x,), ["image"], ["logits"], {"image": {0: "batch"}, "logits": {0: "batch"}}


def tiny_mlp():
    model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 10))
    x = torch.randn(4, 32)
    return model, (x,), ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}}


MODELS = {"gpt2": tiny_gpt2, "bert": tiny_bert, "llama": tiny_llama, "vit": tiny_vit,
          "resnet18": tiny_resnet18, "mlp": tiny_mlp}


def export(name, out_root):
    # Imported here so that the model builders (MODELS) need only torch, as
    # bench/codegen/torch_eager.py does on GPU machines.
    import onnx
    import onnxruntime as ort

    torch.manual_seed(0)
    np.random.seed(0)
    model, args, in_names, out_names, dyn_axes = MODELS[name]()
    model.eval()
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    static_path = os.path.join(out, "model.onnx")
    dynamic_path = os.path.join(out, "model-dynamic.onnx")
    # Not under torch.no_grad(): torch 1.13's fast attention path does not export.
    torch.onnx.export(model, args, static_path, input_names=in_names, output_names=out_names,
                      opset_version=OPSET, do_constant_folding=True)
    torch.onnx.export(model, args, dynamic_path, input_names=in_names, output_names=out_names,
                      dynamic_axes=dyn_axes, opset_version=OPSET, do_constant_folding=True)
    for p in (static_path, dynamic_path):
        onnx.checker.check_model(onnx.load(p))

    feeds = {n: a.numpy() for n, a in zip(in_names, args)}
    for i, n in enumerate(in_names):
        np.save(os.path.join(out, f"input_{i}.npy"), feeds[n])
    ref = ort.InferenceSession(static_path, providers=["CPUExecutionProvider"]).run(None, feeds)
    dyn = ort.InferenceSession(dynamic_path, providers=["CPUExecutionProvider"]).run(None, feeds)
    for i, (r, d) in enumerate(zip(ref, dyn)):
        np.testing.assert_allclose(r, d, rtol=1e-5, atol=1e-5)
        np.save(os.path.join(out, f"output_{i}.npy"), r)
    # The exporter's own outputs agree with ONNX Runtime's.
    with torch.enable_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    for r, e in zip(ref, expected):
        np.testing.assert_allclose(r, e.detach().numpy(), rtol=1e-4, atol=1e-4)
    sizes = {p: os.path.getsize(p) for p in (static_path, dynamic_path)}
    for p, s in sizes.items():
        if s > 2 * 1024 * 1024:
            sys.exit(f"{p} is {s} bytes; bundled models must stay under 2 MB")
    print(f"{name}: " + ", ".join(f"{os.path.basename(p)} {s} bytes" for p, s in sizes.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "examples", "models"))
    ap.add_argument("names", nargs="*", default=list(MODELS))
    a = ap.parse_args()
    for n in a.names:
        export(n, a.out)


if __name__ == "__main__":
    main()
