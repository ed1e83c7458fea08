#!/usr/bin/env python3
"""An independent reference for whale's decoder: the forward pass of a
Qwen3 or Qwen2 model (Qwen3ForCausalLM / Qwen2ForCausalLM) written in plain
PyTorch from the architecture, not with transformers, reading a Hugging
Face folder as `whale export --format hf` writes it.

    qwen_torch.py DIR --ids 1,2,3 [--dtype float32|float64]

prints one JSON object {"logits": [[...V floats...] per position]}: row t
holds the logits that predict token t+1. With --stdin instead of DIR and
--ids it reads one JSON object {"dir": DIR, "ids": [...], "dtype": ...} per
line and answers each with one such line (one process for many models:
importing torch is most of the time). Weights are read from
model.safetensors or model.safetensors.index.json and its shards (F32,
F16 or BF16), converted to --dtype; every operation runs in that dtype
except the rotary angles, computed in float64.
"""
import argparse
import json
import math
import os
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + lo : base + hi]), dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).clone()
    return out


def read_weights(d):
    single = os.path.join(d, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for s in shards:
        out.update(read_safetensors(os.path.join(d, s)))
    return out


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate(x, theta):
    """Rotary embedding of x (heads, T, D), the halves-paired layout of
    Qwen (rotate_half): element i pairs with element i + D/2."""
    T, D = x.shape[1], x.shape[2]
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def attention(x, W, p, c):
    T = x.shape[0]
    hq, hk = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim") or c["hidden_size"] // hq
    bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)

    def proj(name, heads):
        y = linear(x, W[p + name + ".weight"], W[p + name + ".bias"] if bias else None)
        return y.reshape(T, heads, D).transpose(0, 1)  # (heads, T, D)

    q, k, v = proj("q_proj", hq), proj("k_proj", hk), proj("v_proj", hk)
    if c["model_type"] == "qwen3":
        q = rms_norm(q, W[p + "q_norm.weight"], c["rms_norm_eps"])
        k = rms_norm(k, W[p + "k_norm.weight"], c["rms_norm_eps"])
    q, k = rotate(q, c["rope_theta"]), rotate(k, c["rope_theta"])
    group = hq // hk
    k = k.repeat_interleave(group, dim=0)  # query head h reads key/value head h // group
    v = v.repeat_interleave(group, dim=0)
    scores = (q @ k.transpose(1, 2)) / math.sqrt(D)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # (hq, T, D)
    return linear(out.transpose(0, 1).reshape(T, hq * D), W[p + "o_proj.weight"])


def forward(W, c, ids):
    eps = c["rms_norm_eps"]
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        x = x + attention(rms_norm(x, W[p + "input_layernorm.weight"], eps), W, p + "self_attn.", c)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        m = p + "mlp."
        gate = torch.nn.functional.silu(linear(h, W[m + "gate_proj.weight"]))
        x = x + linear(gate * linear(h, W[m + "up_proj.weight"]), W[m + "down_proj.weight"])
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else W["lm_head.weight"]
    return x @ head.T


def logits_of(d, ids, dtype):
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    if c.get("architectures") not in (["Qwen3ForCausalLM"], ["Qwen2ForCausalLM"]):
        sys.exit(f"{d}/config.json: architectures {c.get('architectures')} is not Qwen3 or Qwen2")
    if dtype not in ("float32", "float64"):
        sys.exit(f"dtype {dtype!r}: want float32 or float64")
    dt = getattr(torch, dtype)
    W = {k: v.to(dt) for k, v in read_weights(d).items()}
    with torch.no_grad():
        return forward(W, c, [int(i) for i in ids]).tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--ids", help="comma-separated token ids")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--stdin", action="store_true", help="read requests as JSON lines from stdin")
    a = ap.parse_args()
    if a.stdin:
        for line in sys.stdin:
            if line.strip():
                r = json.loads(line)
                json.dump({"logits": logits_of(r["dir"], r["ids"], r.get("dtype", "float32"))}, sys.stdout)
                sys.stdout.write("\n")
                sys.stdout.flush()
        return
    if a.dir is None or a.ids is None:
        ap.error("give DIR and --ids, or --stdin")
    json.dump({"logits": logits_of(a.dir, a.ids.split(","), a.dtype)}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
