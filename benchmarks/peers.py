"""The workloads' math in jax and in torch, imported lazily: each peer is optional.

Every function maps ``(params, data)`` (dicts keyed as in ``benchmarks/workloads.py``) to the
scalar loss; the peers' own autodiff gives the gradients. Labels arrive as class indices,
tokens as integer ids: the one-hot selections topos records are gathers here, as a user of
these libraries would write them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from benchmarks import workloads as w

Loss = Callable[[dict[str, Any], dict[str, Any]], Any]


# --------------------------------------------------------------------------- jax


def jax_loss(key: str) -> Loss:
    import jax
    import jax.numpy as jnp

    def xent(logits: Any, labels: Any) -> Any:
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=1), labels[:, None], axis=1)
        return -picked.mean()

    def dense_mlp(p: dict[str, Any], d: dict[str, Any]) -> Any:
        hidden = jnp.tanh(d["x"] @ p["w1"] + p["b1"])
        return xent(hidden @ p["w2"] + p["b2"], d["labels"])

    def conv(x: Any, k: Any, b: Any, pad: int) -> Any:
        out = jax.lax.conv_general_dilated(x, k, (1, 1), [(pad, pad)] * 2, dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + b[None, :, None, None]

    def pool(x: Any) -> Any:
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def lenet(p: dict[str, Any], d: dict[str, Any]) -> Any:
        x = d["x"]
        h = pool(jnp.maximum(conv(x, p["k1"], p["c1"], 2), 0.0))
        h = pool(jnp.maximum(conv(h, p["k2"], p["c2"], 0), 0.0)).reshape(x.shape[0], 400)
        h = jnp.maximum(h @ p["w3"] + p["b3"], 0.0)
        return xent(h @ p["w4"] + p["b4"], d["labels"])

    def vgg(p: dict[str, Any], d: dict[str, Any]) -> Any:
        h = d["x"]
        for i in range(len(w.VGG_WIDTHS)):
            q = f"blocks.{i}."
            y = conv(h, p[q + "conv.weights"], p[q + "conv.bias"], 1)
            # Training-mode batch norm: each channel over the batch and every position, biased variance.
            centered = y - y.mean((0, 2, 3), keepdims=True)
            deviation = jnp.sqrt((centered * centered).mean((0, 2, 3), keepdims=True) + w.BN_EPSILON)
            y = centered / deviation * p[q + "norm.scale"][None, :, None, None] + p[q + "norm.shift"][None, :, None, None]
            h = jnp.maximum(y, 0.0)
            if i != 0:
                h = pool(h)
        h = jnp.maximum(h.reshape(h.shape[0], -1) @ p["hidden.weights"] + p["hidden.bias"], 0.0)
        return xent(h @ p["out.weights"] + p["out.bias"], d["labels"])

    def wide(p: dict[str, Any], d: dict[str, Any]) -> Any:
        hidden = jnp.maximum(d["x"] @ p["w1"] + p["b1"], 0.0)
        return xent(hidden @ p["w2"] + p["b2"], d["labels"])

    def norm(x: Any, g: Any, b: Any) -> Any:
        centered = x - x.mean(-1, keepdims=True)
        return centered / jnp.sqrt((centered * centered).mean(-1, keepdims=True) + 1e-5) * g + b

    def gpt(shape: w.GptShape, p: dict[str, Any], d: dict[str, Any]) -> Any:
        b, n, h, dim = shape.batch, shape.context, shape.heads, shape.dim
        hd = dim // h
        x = p["embedding.weights"][d["tokens"]].reshape(b, n, dim) + p["positions.weights"][None, :n]
        mask = jnp.where(jnp.triu(jnp.ones((n, n), bool), 1), jnp.float32(w.CLOSED), jnp.float32(0.0))
        for i in range(shape.layers):
            q = f"blocks.{i}."
            y = norm(x, p[q + "norm1.scale"], p[q + "norm1.shift"]) @ p[q + "attention.qkv.weights"] + p[q + "attention.qkv.bias"]
            qs, ks, vs = (y[..., j * dim : (j + 1) * dim].reshape(b, n, h, hd).transpose(0, 2, 1, 3) for j in range(3))
            scores = qs @ ks.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(hd)) + mask
            mixed = (jax.nn.softmax(scores, -1) @ vs).transpose(0, 2, 1, 3).reshape(b, n, dim)
            x = x + mixed @ p[q + "attention.output.weights"] + p[q + "attention.output.bias"]
            y = norm(x, p[q + "norm2.scale"], p[q + "norm2.shift"])
            y = jax.nn.gelu(y @ p[q + "feed_forward.layers.0.weights"] + p[q + "feed_forward.layers.0.bias"], approximate=True)
            x = x + y @ p[q + "feed_forward.layers.1.weights"] + p[q + "feed_forward.layers.1.bias"]
        logits = norm(x, p["norm.scale"], p["norm.shift"]).reshape(b * n, dim) @ p["embedding.weights"].T
        return xent(logits, d["labels"])

    def makemore(p: dict[str, Any], d: dict[str, Any]) -> Any:
        rows = p["table"][d["contexts"]].reshape(w.MM_BATCH, w.MM_CONTEXT * w.MM_DIM)
        hidden = jnp.tanh(rows @ p["w1"] + p["b1"])
        return xent(hidden @ p["w2"] + p["b2"], d["labels"])

    table: dict[str, Loss] = {
        "mlp": dense_mlp, "lenet": lenet, "vgg": vgg, "wide": wide, "gpt": functools.partial(gpt, w.SMALL_GPT),
        "makemore": makemore, "gpt2": functools.partial(gpt, w.GPT2_124M),
    }  # fmt: skip
    return table[key]


# --------------------------------------------------------------------------- torch


def torch_loss(key: str) -> Loss:
    import torch
    import torch.nn.functional as F

    def dense_mlp(p: dict[str, Any], d: dict[str, Any]) -> Any:
        hidden = torch.tanh(d["x"] @ p["w1"] + p["b1"])
        return F.cross_entropy(hidden @ p["w2"] + p["b2"], d["labels"])

    def lenet(p: dict[str, Any], d: dict[str, Any]) -> Any:
        x = d["x"]
        h = F.max_pool2d(torch.relu(F.conv2d(x, p["k1"], p["c1"], padding=2)), 2)
        h = F.max_pool2d(torch.relu(F.conv2d(h, p["k2"], p["c2"])), 2).reshape(x.shape[0], 400)
        h = torch.relu(h @ p["w3"] + p["b3"])
        return F.cross_entropy(h @ p["w4"] + p["b4"], d["labels"])

    def vgg(p: dict[str, Any], d: dict[str, Any]) -> Any:
        h = d["x"]
        for i in range(len(w.VGG_WIDTHS)):
            q = f"blocks.{i}."
            y = F.conv2d(h, p[q + "conv.weights"], p[q + "conv.bias"], padding=1)
            # training=True normalizes by the batch's statistics (biased variance); no running buffers.
            y = F.batch_norm(y, None, None, p[q + "norm.scale"], p[q + "norm.shift"], training=True, eps=w.BN_EPSILON)
            h = torch.relu(y)
            if i != 0:
                h = F.max_pool2d(h, 2)
        h = torch.relu(h.reshape(h.shape[0], -1) @ p["hidden.weights"] + p["hidden.bias"])
        return F.cross_entropy(h @ p["out.weights"] + p["out.bias"], d["labels"])

    def wide(p: dict[str, Any], d: dict[str, Any]) -> Any:
        hidden = torch.relu(d["x"] @ p["w1"] + p["b1"])
        return F.cross_entropy(hidden @ p["w2"] + p["b2"], d["labels"])

    def gpt(shape: w.GptShape, p: dict[str, Any], d: dict[str, Any]) -> Any:
        b, n, h, dim = shape.batch, shape.context, shape.heads, shape.dim
        hd = dim // h
        x = p["embedding.weights"][d["tokens"]].reshape(b, n, dim) + p["positions.weights"][None, :n]
        mask = torch.triu(torch.full((n, n), w.CLOSED), 1)
        for i in range(shape.layers):
            q = f"blocks.{i}."
            y = F.layer_norm(x, (dim,), p[q + "norm1.scale"], p[q + "norm1.shift"], 1e-5)
            y = y @ p[q + "attention.qkv.weights"] + p[q + "attention.qkv.bias"]
            qs, ks, vs = (y[..., j * dim : (j + 1) * dim].reshape(b, n, h, hd).transpose(1, 2) for j in range(3))
            scores = qs @ ks.transpose(2, 3) * (1.0 / math.sqrt(hd)) + mask
            mixed = (torch.softmax(scores, -1) @ vs).transpose(1, 2).reshape(b, n, dim)
            x = x + mixed @ p[q + "attention.output.weights"] + p[q + "attention.output.bias"]
            y = F.layer_norm(x, (dim,), p[q + "norm2.scale"], p[q + "norm2.shift"], 1e-5)
            y = F.gelu(y @ p[q + "feed_forward.layers.0.weights"] + p[q + "feed_forward.layers.0.bias"], approximate="tanh")
            x = x + y @ p[q + "feed_forward.layers.1.weights"] + p[q + "feed_forward.layers.1.bias"]
        logits = F.layer_norm(x, (dim,), p["norm.scale"], p["norm.shift"], 1e-5).reshape(b * n, dim)
        return F.cross_entropy(logits @ p["embedding.weights"].T, d["labels"])

    def makemore(p: dict[str, Any], d: dict[str, Any]) -> Any:
        rows = p["table"][d["contexts"]].reshape(w.MM_BATCH, w.MM_CONTEXT * w.MM_DIM)
        hidden = torch.tanh(rows @ p["w1"] + p["b1"])
        return F.cross_entropy(hidden @ p["w2"] + p["b2"], d["labels"])

    table: dict[str, Loss] = {
        "mlp": dense_mlp, "lenet": lenet, "vgg": vgg, "wide": wide, "gpt": functools.partial(gpt, w.SMALL_GPT),
        "makemore": makemore, "gpt2": functools.partial(gpt, w.GPT2_124M),
    }  # fmt: skip
    return table[key]
