"""Exports real PyTorch models to ONNX with Debian's torch and torchvision
(python3-torch 1.13, python3-torchvision 0.14), the way users export them:
torch.onnx.export of the library's own modules, in eval mode, opset 17,
static shapes.

The families are the ones issue 13 names: torchvision ViT, Swin, ConvNeXt,
MobileNetV2/V3, EfficientNet, RegNet, ResNet/ResNeXt, DenseNet, ShuffleNet,
SqueezeNet, MNASNet; the LR-ASPP segmentation head and a U-Net
(nearest and bilinear upsampling: Resize); nn.TransformerEncoder, nn.TransformerDecoder and
nn.Transformer with batch_first both ways; LSTM and bidirectional GRU
text classifiers. Widths and depths are cut down
(the builders' own configuration arguments) so that a test builds and runs
each in seconds; the layers, and so the ONNX graphs' patterns, are the
library's.

Writes DIR/NAME.onnx for each model, DIR/NAME/input_<i>.npy (the example
inputs) and DIR/NAME/output_0.npy (PyTorch's output on them, the reference),
and DIR/models.txt, one line per model:
"NAME FAMILY INPUT=SHAPE[;INPUT=SHAPE...]" (the first input's first dimension
is the batch unless FAMILY ends in "-seqfirst", where it is the second).
Deterministic (torch.manual_seed(0) before each model).

Usage: /usr/bin/python3 make_exports.py DIR [NAME ...]
"""
import os
import sys
import warnings

import numpy as np

import torch
from torch import nn
from torch.nn import functional as F
import torchvision
from torchvision import models as tvm
from torchvision.models import convnext, efficientnet, regnet, resnet
from torchvision.models import swin_transformer, vision_transformer

BATCH = 4
IMAGE = (BATCH, 3, 32, 32)


def vit():
    return vision_transformer.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32,
        mlp_dim=64, num_classes=10), {"image": IMAGE}


def swin():
    return swin_transformer.SwinTransformer(
        patch_size=[2, 2], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
        window_size=[4, 4], num_classes=10), {"image": IMAGE}


def convnext_tiny():
    blocks = [convnext.CNBlockConfig(16, 32, 1), convnext.CNBlockConfig(32, None, 1)]
    return convnext.ConvNeXt(blocks, num_classes=10), {"image": IMAGE}


def mobilenet_v3_small():
    return tvm.mobilenet_v3_small(width_mult=0.25, num_classes=10), {"image": IMAGE}


def mobilenet_v3_large():
    return tvm.mobilenet_v3_large(width_mult=0.25, num_classes=10), {"image": IMAGE}


def mobilenet_v2():
    return tvm.mobilenet_v2(width_mult=0.25, num_classes=10), {"image": IMAGE}


def efficientnet_b0():
    settings, last = efficientnet._efficientnet_conf(
        "efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return efficientnet.EfficientNet(settings, 0.2, last_channel=last,
                                     num_classes=10), {"image": IMAGE}


def regnet_y():
    params = regnet.BlockParams.from_init_params(
        depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return regnet.RegNet(params, num_classes=10), {"image": IMAGE}


def regnet_x():
    params = regnet.BlockParams.from_init_params(
        depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=4)
    return regnet.RegNet(params, num_classes=10), {"image": IMAGE}


def resnet18_narrow():
    return resnet.ResNet(resnet.BasicBlock, [1, 1, 1, 1], num_classes=10), {"image": IMAGE}


def resnext():
    return resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], groups=4,
                         width_per_group=4, num_classes=10), {"image": IMAGE}


def densenet():
    return tvm.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16,
                        bn_size=2, num_classes=10), {"image": IMAGE}


def shufflenet():
    return tvm.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), {"image": IMAGE}


def squeezenet():
    return tvm.squeezenet1_1(num_classes=10), {"image": IMAGE}


def mnasnet():
    return tvm.mnasnet0_5(num_classes=10), {"image": IMAGE}


class UNet(nn.Module):
    """A two-level U-Net: max-pool down, nn.Upsample (nearest) and
    F.interpolate (bilinear, with and without align_corners) up, skip
    connections joined with torch.cat."""

    def __init__(self):
        super().__init__()
        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
        self.down1, self.down2, self.mid = block(3, 8), block(8, 16), block(16, 16)
        self.up2, self.up1 = block(32, 8), block(16, 8)
        self.pool = nn.MaxPool2d(2)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(8, 5, 1)

    def forward(self, image):
        d1 = self.down1(image)
        d2 = self.down2(self.pool(d1))
        m = self.mid(self.pool(d2))
        u2 = self.up2(torch.cat([self.upsample(m), d2], 1))
        u1 = F.interpolate(u2, scale_factor=2, mode="bilinear", align_corners=False)
        u1 = self.up1(torch.cat([u1, d1], 1))
        return F.interpolate(self.head(u1), size=(40, 40), mode="bilinear",
                             align_corners=True)


def unet():
    return UNet(), {"image": IMAGE}


class Segmentation(nn.Module):
    """A torchvision segmentation model's "out" map (they return a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        return self.model(image)["out"]


def lraspp():
    return Segmentation(tvm.segmentation.lraspp_mobilenet_v3_large(
        num_classes=5, weights=None, weights_backbone=None)), {"image": IMAGE}


class Encoder(nn.Module):
    """nn.TransformerEncoder over token embeddings, with a classifier."""

    def __init__(self, batch_first, norm_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.embed = nn.Embedding(100, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1,
                                           batch_first=batch_first,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(32, 10)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


class Decoder(nn.Module):
    """nn.TransformerDecoder with a causal mask over a given memory."""

    def __init__(self, batch_first):
        super().__init__()
        self.batch_first = batch_first
        layer = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.1,
                                           batch_first=batch_first)
        self.decoder = nn.TransformerDecoder(layer, 2)

    def forward(self, target, memory):
        length = target.shape[1 if self.batch_first else 0]
        mask = nn.Transformer.generate_square_subsequent_mask(length)
        return self.decoder(target, memory, tgt_mask=mask)


class Seq2Seq(nn.Module):
    """nn.Transformer (encoder and decoder)."""

    def __init__(self, batch_first):
        super().__init__()
        self.model = nn.Transformer(32, 4, 1, 1, 64, dropout=0.1,
                                    batch_first=batch_first)

    def forward(self, source, target):
        return self.model(source, target)


class Recurrent(nn.Module):
    """A text classifier: embedding, a 2-layer nn.LSTM or nn.GRU, the last
    step's features through a Linear."""

    def __init__(self, cell, bidirectional):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.rnn = cell(16, 24, num_layers=2, batch_first=True,
                        bidirectional=bidirectional)
        self.head = nn.Linear(48 if bidirectional else 24, 10)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out[:, -1])


def recurrent(cell, bidirectional):
    def make():
        return Recurrent(cell, bidirectional), {"tokens": ((BATCH, 8), torch.int64)}
    return make


def seq(batch_first, *dims):
    """A [N, L, ...] shape, or [L, N, ...] when sequence-first."""
    n, l = BATCH, dims[0]
    return (n, l, *dims[1:]) if batch_first else (l, n, *dims[1:])


def encoder(batch_first, norm_first=False):
    def make():
        shape = seq(batch_first, 8)
        return Encoder(batch_first, norm_first), {"tokens": (shape, torch.int64)}
    return make


def decoder(batch_first):
    def make():
        return Decoder(batch_first), {"target": seq(batch_first, 6, 32),
                                      "memory": seq(batch_first, 8, 32)}
    return make


def transformer(batch_first):
    def make():
        return Seq2Seq(batch_first), {"source": seq(batch_first, 8, 32),
                                      "target": seq(batch_first, 6, 32)}
    return make


MODELS = {
    # name: (family, builder)
    "vit": ("attention", vit),
    "swin": ("attention", swin),
    "convnext": ("conv", convnext_tiny),
    "mobilenet-v3-small": ("conv", mobilenet_v3_small),
    "mobilenet-v3-large": ("conv", mobilenet_v3_large),
    "mobilenet-v2": ("conv", mobilenet_v2),
    "efficientnet-b0": ("conv", efficientnet_b0),
    "regnet-y": ("conv", regnet_y),
    "regnet-x": ("conv", regnet_x),
    "resnet18": ("conv", resnet18_narrow),
    "resnext": ("conv", resnext),
    "densenet": ("conv", densenet),
    "shufflenet-v2": ("conv", shufflenet),
    "squeezenet": ("conv", squeezenet),
    "mnasnet": ("conv", mnasnet),
    "unet": ("conv", unet),
    "lraspp": ("conv", lraspp),
    "encoder-bf": ("attention", encoder(True)),
    "encoder-sf": ("attention-seqfirst", encoder(False)),
    "encoder-prenorm-bf": ("attention", encoder(True, norm_first=True)),
    "decoder-bf": ("attention", decoder(True)),
    "decoder-sf": ("attention-seqfirst", decoder(False)),
    "transformer-bf": ("attention", transformer(True)),
    "transformer-sf": ("attention-seqfirst", transformer(False)),
    "lstm": ("recurrent", recurrent(nn.LSTM, False)),
    "gru-bidirectional": ("recurrent", recurrent(nn.GRU, True)),
}


def example(spec):
    shape, dtype = spec if isinstance(spec[0], tuple) else (spec, torch.float32)
    if dtype == torch.int64:
        return torch.randint(0, 100, shape)
    return torch.randn(shape)


def export(name, out_dir):
    family, build = MODELS[name]
    torch.manual_seed(0)
    model, inputs = build()
    model.eval()
    args = tuple(example(spec) for spec in inputs.values())
    path = os.path.join(out_dir, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, input_names=list(inputs),
                          output_names=["output"], opset_version=17,
                          do_constant_folding=True)
    # PyTorch's outputs on the example inputs: the reference of every plan.
    io_dir = os.path.join(out_dir, name)
    os.makedirs(io_dir, exist_ok=True)
    with torch.no_grad():
        outputs = model(*args)
    for i, a in enumerate(args):
        np.save(os.path.join(io_dir, f"input_{i}.npy"), a.numpy())
    np.save(os.path.join(io_dir, "output_0.npy"), outputs.numpy())
    shapes = ";".join(
        name_ + "=" + "x".join(str(d) for d in (spec[0] if isinstance(spec[0], tuple) else spec))
        for name_, spec in inputs.items())
    return f"{name} {family} {shapes}"


def main():
    out_dir = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out_dir, exist_ok=True)
    lines = [export(n, out_dir) for n in names]
    with open(os.path.join(out_dir, "models.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
