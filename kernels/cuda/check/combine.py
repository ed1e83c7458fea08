#!/usr/bin/env python3
"""Combine the device check's pieces into one JSON report.

device-check.sh calls this at its end with the files its steps wrote: the
op and training reports of the Go tests (WHALE_CHECK_JSON,
WHALE_CHECK_JSON_TRAIN), the text output of the Go benchmarks, torch_ref.py's
JSON, the optional `whale bench engine --backend cuda --quick --json`, and a
meta file of the script's own (GPU, driver, commit, step exit codes and
times, libraries, the CPU's sampling figure). Every target is judged here:

  ops          every op case within tolerance, deterministic, and every
               invariant of the sampler bit-exact (device_test.go)
  training     every step's loss within 1e-3 of the CPU's (device_test.go)
  gemm         whale ≥ 0.8× torch.matmul GFLOP/s at every shape, f32 and bf16
  train_step   0.6B step: torch eager ms / whale ms ≥ 0.5
  sampling     bench-small batch 64 tokens/s ≥ 20× the CPU backend's

A missing piece fails its target and says why in "notes". The per-op
profile of one training step and of sampling (profile.tsv, written by the
benchmarks under WHALE_CUDA_PROFILE) is copied in as train_step_profile and
sampling_profile, unjudged. Standard library only.
"""

import argparse
import json
import os
import re
import sys

GEMM_TARGET = 0.8
TRAIN_TARGET = 0.5
SAMPLE_TARGET = 20.0


def load_json(path, notes, what):
    if not path or not os.path.exists(path):
        notes.append("%s: no file (%s)" % (what, path or "not given"))
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # a truncated file from a killed step
        notes.append("%s: unreadable %s: %s" % (what, path, e))
        return None


def parse_bench(path, notes, what):
    """Go benchmark lines -> {name without the -GOMAXPROCS suffix: {unit: value}}."""
    out = {}
    if not path or not os.path.exists(path):
        notes.append("%s: no output (%s)" % (what, path or "not given"))
        return out
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 4 or not fields[0].startswith("Benchmark"):
                continue
            name = re.sub(r"-\d+$", "", fields[0])
            try:
                metrics = {"iterations": float(fields[1])}
                rest = fields[2:]
                for i in range(0, len(rest) - 1, 2):
                    metrics[rest[i + 1]] = float(rest[i])
            except ValueError:
                continue
            out[name] = metrics
    if not out:
        notes.append("%s: no benchmark lines in %s" % (what, path))
    return out


def num(v):
    """A JSON number from Go's encoding of errors ("NaN", "+Inf")."""
    if isinstance(v, str):
        return float(v.replace("+", ""))
    return v


def finite_or_str(v):
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return repr(v)
    return v


def judge_ops(ops, notes):
    if ops is None:
        return dict(pass_=False)
    cases = ops.get("cases", [])
    failed = [c["name"] for c in cases if not c.get("pass")]
    nondet = [c["name"] for c in cases if not c.get("deterministic")]
    errs = {}
    for k in ("f32", "bf16"):
        es = [num(c.get("err", 0)) for c in cases if c.get("kind") == k]
        if es:
            errs[k] = float("nan") if any(e != e for e in es) else max(es)
    per_op = [dict(name=c["name"], kind=c.get("kind"), err=c.get("err"), tol=c.get("tol"),
                   worst_output=c.get("worst_output"), deterministic=c.get("deterministic"),
                   pass_=c.get("pass"), error=c.get("error"))
              for c in cases]
    ops_cases = [c for c in cases if c.get("kind") != "invariant"]
    ok = bool(ops_cases) and not failed
    if not ops_cases:
        notes.append("ops: the report holds no op cases")
    return dict(pass_=ok, backend=ops.get("backend"), cases=len(cases), failed=failed,
                nondeterministic=nondet,
                max_err={k: finite_or_str(v) for k, v in errs.items()}, per_op=per_op)


def judge_training(train, notes):
    if train is None:
        return dict(pass_=False)
    runs = []
    for r in train.get("runs", []):
        runs.append(dict(preset=r.get("preset"), B=r.get("B"), T=r.get("T"), steps=r.get("steps"),
                         lr=r.get("lr"), tol=r.get("tol"), max_abs_diff=r.get("max_abs_diff"),
                         worst_step=r.get("worst_step"), pass_=r.get("pass"), error=r.get("error"),
                         cpu_loss=r.get("cpu_loss"), gpu_loss=r.get("gpu_loss")))
    ok = bool(runs) and all(r["pass_"] for r in runs)
    if not runs:
        notes.append("training: the report holds no runs")
    return dict(pass_=ok, runs=runs)


def judge_gemm(bench, torch, notes):
    theirs = {}
    for g in (torch or {}).get("gemm", []):
        theirs[(g["dtype"], g["layout"], g["m"], g["k"], g["n"])] = g["gflops"]
    figures = []
    for name, m in sorted(bench.items()):
        mm = re.match(r"BenchmarkGemm/(f32|bf16)/(NN|NT|TN)/(\d+)x(\d+)x(\d+)$", name)
        if not mm or "GFLOP/s" not in m:
            continue
        dtype, layout = mm.group(1), mm.group(2)
        M, K, N = (int(mm.group(i)) for i in (3, 4, 5))
        w = m["GFLOP/s"]
        t = theirs.get((dtype, layout, M, K, N))
        f = dict(dtype=dtype, layout=layout, m=M, k=K, n=N, whale_gflops=w, torch_gflops=t)
        if t:
            f["ratio"] = w / t
            f["pass_"] = f["ratio"] >= GEMM_TARGET
        else:
            f["pass_"] = False
            if theirs:
                notes.append("gemm %s: no torch figure" % name)
        figures.append(f)
    if not theirs:
        notes.append("gemm: no torch figures")
    if not figures:
        notes.append("gemm: no whale figures")
        return dict(pass_=False, target=GEMM_TARGET, figures=[])

    def group(sel):
        fs = [f for f in figures if sel(f)]
        rs = [f["ratio"] for f in fs if "ratio" in f]
        return dict(shapes=len(fs), min_ratio=min(rs) if rs else None,
                    pass_=bool(fs) and all(f["pass_"] for f in fs))

    big = lambda f: f["m"] == f["k"] == f["n"] == 4096
    groups = {
        "model_shapes_f32": group(lambda f: f["dtype"] == "f32" and not big(f)),
        "model_shapes_bf16": group(lambda f: f["dtype"] == "bf16" and not big(f)),
        "4096_f32": group(lambda f: f["dtype"] == "f32" and big(f)),
        "4096_bf16": group(lambda f: f["dtype"] == "bf16" and big(f)),
    }
    info = [g for g in (torch or {}).get("gemm", []) if g["dtype"] == "f32_tf32"]
    return dict(pass_=all(g["pass_"] for g in groups.values()), target=GEMM_TARGET, groups=groups,
                figures=figures, torch_tf32_info=info,
                note="torch bf16 is bf16 x bf16 -> bf16; whale's GemmBF16NT is f32 x bf16 -> f32")


def judge_train_step(bench, torch, notes):
    w = bench.get("BenchmarkTrainStep0p6B")
    small = bench.get("BenchmarkTrainStepBenchSmall")
    t = (torch or {}).get("train") or {}
    eager, sdpa = t.get("eager") or {}, t.get("sdpa") or {}
    r = dict(target=TRAIN_TARGET, B=t.get("B"), T=t.get("T"),
             whale_ms=w and w.get("ms/step"), whale_tokens_per_s=w and w.get("tokens/s"),
             whale_gflops=w and w.get("GFLOP/s"), torch_eager_ms=eager.get("ms_per_step"),
             torch_sdpa_ms=sdpa.get("ms_per_step"), torch_peak_mem_gib=eager.get("peak_mem_gib"),
             params_whale=w and w.get("params"), params_torch=eager.get("params"),
             bench_small_B8T128=small)
    r["params_match"] = bool(r["params_whale"]) and r["params_whale"] == r["params_torch"]
    if r["whale_ms"] and r["torch_eager_ms"]:
        r["ratio"] = r["torch_eager_ms"] / r["whale_ms"]
        r["pass_"] = r["ratio"] >= TRAIN_TARGET
        if r["torch_sdpa_ms"]:
            r["ratio_vs_sdpa"] = r["torch_sdpa_ms"] / r["whale_ms"]
    else:
        r["pass_"] = False
        notes.append("train_step: missing %s" % ("whale's figure" if not r["whale_ms"] else "torch's eager figure"))
    if r["params_whale"] and not r["params_match"]:
        notes.append("train_step: whale trained %s parameters, torch %s: not the same model"
                     % (r["params_whale"], r["params_torch"]))
        r["pass_"] = False
    return r


def judge_sampling(bench, cpu, cpu_source, notes):
    b64 = bench.get("BenchmarkSampleBenchSmall/batch=64") or {}
    b1 = bench.get("BenchmarkSampleBenchSmall/batch=1") or {}
    r = dict(target=SAMPLE_TARGET, gpu_tokens_per_s_b64=b64.get("tokens/s"),
             gpu_tokens_per_s_b1=b1.get("tokens/s"), cpu_tokens_per_s_b64=cpu, cpu_source=cpu_source)
    if r["gpu_tokens_per_s_b64"] and cpu:
        r["ratio"] = r["gpu_tokens_per_s_b64"] / cpu
        r["pass_"] = r["ratio"] >= SAMPLE_TARGET
    else:
        r["pass_"] = False
        notes.append("sampling: missing %s" % ("the GPU figure" if not r["gpu_tokens_per_s_b64"]
                                               else "the CPU figure (WHALE_CPU_SAMPLE_B64 or cpu-engine.json)"))
    return r


def parse_profile(path, notes):
    """cuda-profile lines (WriteProfile in profile.go) -> {label: table}.

    Each line: cuda-profile, label, op, count, GPU ms, host ms, GPU % of
    wall; the op "(wall)" is the summary (count = runs, GPU ms summed over
    every op, host ms = the wall time)."""
    out = {}
    if not path or not os.path.exists(path):
        notes.append("profile: no file (%s)" % (path or "not given"))
        return out
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 7 or fields[0] != "cuda-profile":
                continue
            label, op = fields[1], fields[2]
            try:
                count, gpu, host, pct = int(fields[3]), float(fields[4]), float(fields[5]), float(fields[6])
            except ValueError:
                continue
            t = out.setdefault(label, dict(runs=None, wall_ms=None, gpu_ms_in_ops=None, ops=[]))
            if op == "(wall)":
                t.update(runs=count, wall_ms=host, gpu_ms_in_ops=gpu, gpu_pct_of_wall=pct)
            else:
                t["ops"].append(dict(op=op, count=count, gpu_ms=gpu, host_ms=host, gpu_pct_of_wall=pct))
    if not out:
        notes.append("profile: no cuda-profile lines in %s" % path)
    return out


def rename_pass(v):
    """pass_ (a Python keyword dodge) -> pass, all the way down."""
    if isinstance(v, dict):
        return {("pass" if k == "pass_" else k): rename_pass(x) for k, x in v.items()}
    if isinstance(v, list):
        return [rename_pass(x) for x in v]
    return finite_or_str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for a in ("meta", "ops", "invariants", "train", "bench-gemm", "bench-train", "bench-sample", "torch", "engine", "transformers",
              "profile"):
        ap.add_argument("--" + a)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    notes = []
    meta = load_json(args.meta, notes, "meta") or {}
    ops = load_json(args.ops, notes, "ops")
    inv = load_json(args.invariants, notes, "invariants") if args.invariants else None
    if inv is not None:
        # The sampler's invariants are cases of the ops target.
        ops = ops or dict(backend=inv.get("backend"), device=inv.get("device"), cases=[])
        ops["cases"] = ops.get("cases", []) + inv.get("cases", [])
    train = load_json(args.train, notes, "training")
    torch = load_json(args.torch, notes, "torch")
    engine = load_json(args.engine, [], "engine") if args.engine else None
    # Hugging Face transformers' own logits against whale's on the
    # exported fixture folders (issue 15's parity check c): reported
    # beside the CUDA targets, judged by transformers_parity.py itself.
    hf = load_json(args.transformers, notes, "transformers parity") if args.transformers else None
    bench = {}
    bench.update(parse_bench(args.bench_gemm, notes, "bench gemm"))
    bench.update(parse_bench(args.bench_train, notes, "bench train"))
    bench.update(parse_bench(args.bench_sample, notes, "bench sample"))
    if meta.get("startup_error"):
        notes.append("the test binary did not start: " + meta["startup_error"])
    for e in (torch or {}).get("errors", []):
        notes.append("torch_ref: " + e)

    profile = parse_profile(args.profile, notes) if args.profile else {}

    cpu = meta.get("cpu_sample_b64")
    try:
        cpu = float(cpu) if cpu not in (None, "") else None
    except ValueError:
        notes.append("cpu_sample_b64 %r is not a number" % cpu)
        cpu = None

    report = dict(
        when=meta.get("when"), commit=meta.get("commit"), host=meta.get("host"),
        gpu=dict(name=meta.get("gpu_name") or (ops or {}).get("device"), nvidia_smi=meta.get("nvidia_smi"),
                 torch_device=(torch or {}).get("device"), capability=(torch or {}).get("capability")),
        torch=dict(version=(torch or {}).get("torch"), cuda=(torch or {}).get("torch_cuda"),
                   tf32=(torch or {}).get("tf32")),
        libraries=meta.get("libraries"), steps=meta.get("steps"), startup_error=meta.get("startup_error"),
        ops=judge_ops(ops, notes),
        training=judge_training(train, notes),
        gemm=judge_gemm(bench, torch, notes),
        train_step=judge_train_step(bench, torch, notes),
        sampling=judge_sampling(bench, cpu, meta.get("cpu_sample_source"), notes),
        train_step_profile=next((t for k, t in sorted(profile.items()) if k.startswith("BenchmarkTrainStep0p6B")), None),
        sampling_profile={k: t for k, t in sorted(profile.items()) if k.startswith("BenchmarkSampleBenchSmall")} or None,
        whale_engine_quick=engine,
        transformers_parity=hf,
    )
    targets = {k: bool(report[k]["pass_"]) for k in ("ops", "training", "gemm", "train_step", "sampling")}
    report["targets"] = targets
    report["pass"] = all(targets.values())
    report["notes"] = notes
    with open(args.out, "w") as f:
        json.dump(rename_pass(report), f, indent=1)
        f.write("\n")
    summary = ", ".join("%s %s" % (k, "pass" if v else "FAIL") for k, v in targets.items())
    print("device check: %s -> %s" % (summary, args.out))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
