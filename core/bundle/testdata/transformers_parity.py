#!/usr/bin/env python3
"""Hugging Face transformers' own logits against whale's, on the folders of
core/bundle/testdata/transformers (random-weight Qwen3 and Qwen2 models that
whale exported, each with whale_logits.json: whale's logits on fixed token
ids; TestTransformersFixtureIsWhales keeps them current).

    transformers_parity.py [FIXTURE_DIR] [--device cuda|cpu] [--out FILE]

Loads every folder with AutoModelForCausalLM (float32, eager attention, no
remote code), runs the ids through it and compares: the largest absolute
difference must be at most 1e-4 (both sides run in float32 and differ only
in summation order; a wrong RoPE pairing, bias or norm moves logits by
1e-2 or more). Prints one JSON object and exits 1 if any model fails.
"""
import argparse
import json
import os
import sys

TOLERANCE = 1e-4


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture", nargs="?", default=os.path.join(here, "transformers"))
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    result = {"transformers": transformers.__version__, "torch": torch.__version__, "device": device,
              "tolerance": TOLERANCE, "models": {}}
    ok = True
    names = sorted(n for n in os.listdir(args.fixture) if os.path.isdir(os.path.join(args.fixture, n)))
    if not names:
        sys.exit(f"transformers_parity.py: no model folders in {args.fixture}")
    for name in names:
        folder = os.path.join(args.fixture, name)
        with open(os.path.join(folder, "whale_logits.json")) as f:
            want = json.load(f)
        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
        model.to(device).eval()
        ids = torch.tensor([want["ids"]], dtype=torch.long, device=device)
        with torch.no_grad():
            got = model(input_ids=ids).logits[0].double().cpu()
        whale = torch.tensor(want["logits"], dtype=torch.float64)
        if got.shape != whale.shape:
            result["models"][name] = {"error": f"transformers gave {tuple(got.shape)} logits, whale {tuple(whale.shape)}"}
            ok = False
            continue
        diff = (got - whale).abs().max().item()
        passed = diff <= TOLERANCE
        ok = ok and passed
        result["models"][name] = {"max_abs_diff": diff, "max_abs_logit": whale.abs().max().item(),
                                  "architecture": model.config.architectures, "pass": passed}
    result["pass"] = ok
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
