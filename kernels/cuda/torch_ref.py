#!/usr/bin/env python3
"""PyTorch reference timings for whale's CUDA backend, on the same GPU.

device-check.sh runs this beside whale's Go benchmarks (bench_test.go) and
sets the two sides' figures against each other:

  * torch.matmul at the shapes of BenchmarkGemm: M=1024 with K, N in
    {256, 512, 704, 768} and 4096^3, in NN, NT and TN (transposed operands
    are views, as cuBLAS takes them), in float32 with TF32 disabled (the
    default state is recorded; 4096^3 is also timed with TF32 on, for
    information only), and in bf16 NT (bf16 x bf16 -> bf16 on the tensor
    cores, where whale's GemmBF16NT multiplies float32 activations by bf16
    weights into float32);
  * one training step of a Qwen3-shaped model in plain eager PyTorch,
    float32: embedding, RMSNorm, q/k/v/o projections with Qwen3's per-head
    q_norm/k_norm, rotary embeddings (rotate-half), grouped-query causal
    attention written out as matmul + masked softmax + matmul (eager, not
    flash attention or scaled_dot_product_attention; the SDPA figure is
    timed as well, for information), a SwiGLU MLP, a tied head,
    cross-entropy, global-norm clipping at 1 and AdamW(0.9, 0.95, 1e-8,
    weight decay 0.1 on matrices and embeddings) - the step whale's
    Trainer takes. Weights are random (normal 0.02 as whale initialises).

The shape is core/model's "qwen3-0.6b" preset (core/model/config.go):
vocab 151936, hidden 1024, intermediate 3072, 28 layers, 16 heads, 8
key/value heads, head_dim 128, rms eps 1e-6, rope theta 1e6, tied
embeddings. The Go benchmark reports the parameter count it trained; the
combined report checks the two agree.

torch is imported inside main() only, so that py_compile works where it is
not installed. Writes one JSON object (--out, default stdout).
"""

import argparse
import json
import math
import sys
import time

QWEN3_0P6B = dict(vocab=151936, hidden=1024, intermediate=3072, layers=28,
                  heads=16, kv_heads=8, head_dim=128, eps=1e-6, theta=1e6,
                  tied=True)

GEMM_SIZES = (256, 512, 704, 768)


def gemm_shapes():
    shapes = [(1024, k, n) for k in GEMM_SIZES for n in GEMM_SIZES]
    shapes.append((4096, 4096, 4096))
    return shapes


def time_cuda(torch, fn, min_seconds):
    """Mean seconds of fn over enough back-to-back calls to fill
    min_seconds, after a warm-up, timed with CUDA events."""
    fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    once = max(start.elapsed_time(end) / 1e3, 1e-6)
    n = max(3, int(min_seconds / once))
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / n


def bench_gemm(torch, min_seconds):
    dev = "cuda"
    figures = []
    gen = torch.Generator(device=dev).manual_seed(1)

    def operands(dtype, layout, m, k, n):
        a_shape = (k, m) if layout == "TN" else (m, k)
        b_shape = (n, k) if layout == "NT" else (k, n)
        a = torch.rand(a_shape, device=dev, generator=gen) * 2 - 1
        b = torch.rand(b_shape, device=dev, generator=gen) * 2 - 1
        a, b = a.to(dtype), b.to(dtype)
        if layout == "TN":
            a = a.t()
        if layout == "NT":
            b = b.t()
        return a, b, torch.empty((m, n), device=dev, dtype=dtype)

    def run(label, dtype, layout, m, k, n):
        a, b, out = operands(dtype, layout, m, k, n)
        s = time_cuda(torch, lambda: torch.matmul(a, b, out=out), min_seconds)
        figures.append(dict(dtype=label, layout=layout, m=m, k=k, n=n,
                            ms=s * 1e3, gflops=2.0 * m * k * n / s / 1e9))
        del a, b, out

    torch.backends.cuda.matmul.allow_tf32 = False
    for layout in ("NN", "NT", "TN"):
        for m, k, n in gemm_shapes():
            run("f32", torch.float32, layout, m, k, n)
    for m, k, n in gemm_shapes():
        run("bf16", torch.bfloat16, "NT", m, k, n)
    torch.backends.cuda.matmul.allow_tf32 = True
    for layout in ("NN", "NT", "TN"):
        run("f32_tf32", torch.float32, layout, 4096, 4096, 4096)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.empty_cache()
    return figures


def define_model(torch):
    nn = torch.nn
    F = torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.eps = eps

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    class Attention(nn.Module):
        def __init__(self, c, sdpa):
            super().__init__()
            C, H, KVH, hd = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"]
            self.H, self.KVH, self.hd, self.sdpa = H, KVH, hd, sdpa
            self.q_proj = nn.Linear(C, H * hd, bias=False)
            self.k_proj = nn.Linear(C, KVH * hd, bias=False)
            self.v_proj = nn.Linear(C, KVH * hd, bias=False)
            self.o_proj = nn.Linear(H * hd, C, bias=False)
            self.q_norm = RMSNorm(hd, c["eps"])
            self.k_norm = RMSNorm(hd, c["eps"])

        def forward(self, x, cos, sin, causal):
            B, T, _ = x.shape
            q = self.q_norm(self.q_proj(x).view(B, T, self.H, self.hd)).transpose(1, 2)
            k = self.k_norm(self.k_proj(x).view(B, T, self.KVH, self.hd)).transpose(1, 2)
            v = self.v_proj(x).view(B, T, self.KVH, self.hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            g = self.H // self.KVH
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
            if self.sdpa:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
                s = s.masked_fill(~causal, float("-inf"))
                o = torch.softmax(s, dim=-1) @ v
            return self.o_proj(o.transpose(1, 2).reshape(B, T, self.H * self.hd))

    class MLP(nn.Module):
        def __init__(self, c):
            super().__init__()
            C, I = c["hidden"], c["intermediate"]
            self.gate_proj = nn.Linear(C, I, bias=False)
            self.up_proj = nn.Linear(C, I, bias=False)
            self.down_proj = nn.Linear(I, C, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self, c, sdpa):
            super().__init__()
            self.input_layernorm = RMSNorm(c["hidden"], c["eps"])
            self.self_attn = Attention(c, sdpa)
            self.post_attention_layernorm = RMSNorm(c["hidden"], c["eps"])
            self.mlp = MLP(c)

        def forward(self, x, cos, sin, causal):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, causal)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Model(nn.Module):
        def __init__(self, c, sdpa):
            super().__init__()
            self.c = c
            self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
            self.layers = nn.ModuleList(Layer(c, sdpa) for _ in range(c["layers"]))
            self.norm = RMSNorm(c["hidden"], c["eps"])
            if not c["tied"]:
                self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

        def forward(self, tokens, targets):
            B, T = tokens.shape
            c = self.c
            hd = c["head_dim"]
            pos = torch.arange(T, device=tokens.device, dtype=torch.float64)
            inv = c["theta"] ** (-torch.arange(0, hd, 2, device=tokens.device, dtype=torch.float64) / hd)
            ang = torch.outer(pos, inv)
            ang = torch.cat((ang, ang), dim=-1)
            cos, sin = ang.cos().float(), ang.sin().float()
            causal = torch.ones(T, T, device=tokens.device, dtype=torch.bool).tril()
            x = self.embed_tokens(tokens)
            for layer in self.layers:
                x = layer(x, cos, sin, causal)
            x = self.norm(x)
            w = self.embed_tokens.weight if c["tied"] else self.lm_head.weight
            logits = x @ w.t()
            return F.cross_entropy(logits.view(-1, c["vocab"]), targets.reshape(-1))

    def init(model, c):
        # whale's initialisation: normal(0, 0.02) matrices and embeddings,
        # o_proj and down_proj scaled by 1/sqrt(2 layers), norms 1.
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() < 2:
                    continue
                std = 0.02
                if name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                    std /= math.sqrt(2 * c["layers"])
                p.normal_(0.0, std)

    return Model, init


def bench_train(torch, c, B, T, warmup, steps, sdpa):
    Model, init = define_model(torch)
    torch.manual_seed(1)
    model = Model(c, sdpa).cuda()
    init(model, c)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    params = list(model.parameters())
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=0.1), dict(params=rest, weight_decay=0.0)],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator(device="cuda").manual_seed(2)
    batch = torch.randint(0, c["vocab"], (B, T + 1), device="cuda", generator=g)
    tokens, targets = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        # whale's Trainer reads the loss and the gradient norm back every
        # step; reading the loss here keeps the two steps alike.
        return loss.item()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    torch.cuda.synchronize()
    s = (time.perf_counter() - t0) / steps
    out = dict(ms_per_step=s * 1e3, tokens_per_s=B * T / s, loss=loss,
               peak_mem_gib=torch.cuda.max_memory_allocated() / 2**30,
               params=sum(p.numel() for p in params))
    del model, opt, params, decay, rest
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="JSON file to write (default: stdout)")
    ap.add_argument("--B", type=int, default=4, help="sequences a training step (as WHALE_BENCH_B)")
    ap.add_argument("--T", type=int, default=256, help="predictions a sequence (as WHALE_BENCH_T)")
    ap.add_argument("--gemm-seconds", type=float, default=0.2, help="time per GEMM shape")
    ap.add_argument("--warmup", type=int, default=3, help="training steps before timing")
    ap.add_argument("--steps", type=int, default=5, help="timed training steps")
    ap.add_argument("--no-sdpa", action="store_true", help="skip the informational SDPA step")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--skip-train", action="store_true")
    args = ap.parse_args()

    r = dict(errors=[], notes=[])
    try:
        import torch
    except Exception as e:  # no torch: say so in the report
        r["errors"].append("import torch: %s" % e)
        return write(r, args.out, 1)
    r["torch"] = torch.__version__
    r["torch_cuda"] = torch.version.cuda
    if not torch.cuda.is_available():
        r["errors"].append("torch.cuda.is_available() is False")
        return write(r, args.out, 1)
    r["device"] = torch.cuda.get_device_name(0)
    r["capability"] = list(torch.cuda.get_device_capability(0))
    r["tf32"] = dict(matmul_allow_tf32_default=bool(torch.backends.cuda.matmul.allow_tf32),
                     float32_matmul_precision_default=torch.get_float32_matmul_precision(),
                     f32_figures_use_tf32=False)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    if not args.skip_gemm:
        try:
            r["gemm"] = bench_gemm(torch, args.gemm_seconds)
        except Exception as e:
            r["errors"].append("gemm: %r" % e)
    if not args.skip_train:
        c = QWEN3_0P6B
        t = dict(config=c, B=args.B, T=args.T, dtype="float32", tf32=False,
                 optimizer="torch.optim.AdamW (default implementation), clip_grad_norm_ 1.0",
                 attention="eager: q@k^T, masked_fill, softmax, @v (no flash, no SDPA)")
        try:
            t["eager"] = bench_train(torch, c, args.B, args.T, args.warmup, args.steps, False)
        except Exception as e:
            r["errors"].append("train eager: %r" % e)
            torch.cuda.empty_cache()
        # SDPA is for information only: its absence or failure is a note.
        if args.no_sdpa:
            pass
        elif not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            r["notes"].append("sdpa: not in torch %s" % torch.__version__)
        else:
            try:
                t["sdpa"] = bench_train(torch, c, args.B, args.T, args.warmup, args.steps, True)
            except Exception as e:
                r["notes"].append("train sdpa: %r" % e)
                torch.cuda.empty_cache()
        r["train"] = t
    return write(r, args.out, 0 if not r["errors"] else 1)


def write(r, path, rc):
    data = json.dumps(r, indent=1, sort_keys=True)
    if path:
        with open(path, "w") as f:
            f.write(data + "\n")
    else:
        print(data)
    return rc


if __name__ == "__main__":
    sys.exit(main())
