#!/usr/bin/env bash
# regen.sh remakes the llama.cpp fixture that core/ckpt/gguf_llama_test.go
# reads: llama.cpp's logits for whale's GGUF export of small random models,
# and its token ids for whale's GGUF of Qwen3's tokenizer.
#
#   LLAMA_CPP=/path/to/llama.cpp core/ckpt/testdata/llama/regen.sh
#
# LLAMA_CPP is a llama.cpp source tree (github.com/ggml-org/llama.cpp) that
# has been built, CPU backend only, Release, with its shared libraries in
# build/bin (libllama.so, libggml.so, libggml-base.so, libggml-cpu.so).
# llama.cpp is not part of whale: none of it is committed here, and this
# script does not build it. The fixture in this folder was made at
# commit 81ff7abe50b95fb81cc70a6cdba1eb1a02a48f62 (2026-07-08), built for
# the host CPU (AMD Zen 3: AVX2, FMA, F16C; no AVX-512). Set
# LLAMA_CPP_COMMIT when the tree is not a git checkout.
#
# What it does:
#   1. compiles logits.cpp and tokenize.cpp (ours; llama.h's API only)
#      against that build;
#   2. has the Go test TestWriteLlamaCppFixtureInputs write each case's
#      GGUF file (seeded, so the same bytes every time), the token ids,
#      the tokenizer strings and fixture.json (with each file's sha256);
#   3. runs llama.cpp on them: logits.cpp (one thread, F32 KV cache, no
#      flash attention) for each model, tokenize.cpp for the strings;
#   4. gzips the results here (-9n: no name or time, so reruns are
#      byte-identical) beside fixture.json, and runs the fixture tests.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
: "${LLAMA_CPP:?set LLAMA_CPP to a built llama.cpp tree}"
commit=${LLAMA_CPP_COMMIT:-$(git -C "$LLAMA_CPP" rev-parse HEAD)}
lib=$LLAMA_CPP/build/bin

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for prog in logits tokenize; do
	g++ -O2 -std=c++17 -Wall -Wextra -I"$LLAMA_CPP/include" -I"$LLAMA_CPP/ggml/include" \
		"$here/$prog.cpp" -L"$lib" -lllama -lggml -lggml-base -Wl,-rpath,"$lib" -o "$work/$prog"
done

(cd "$root" && WHALE_LLAMA_FIXTURE=$work WHALE_LLAMA_COMMIT=$commit \
	go test ./core/ckpt -run '^TestWriteLlamaCppFixtureInputs$' -count=1)

read -r -a ids <"$work/ids.txt"
for gguf in "$work"/*.gguf; do
	name=$(basename "$gguf" .gguf)
	[ "$name" = qwen3-tokenizer ] && continue
	"$work/logits" "$gguf" "$work/$name.f32" "${ids[@]}"
	gzip -9n -c "$work/$name.f32" >"$here/$name.f32.gz"
done
"$work/tokenize" "$work/qwen3-tokenizer.gguf" <"$work/strings.hex" >"$work/tokens.jsonl"
gzip -9n -c "$work/tokens.jsonl" >"$here/qwen3-tokens.jsonl.gz"
cp "$work/fixture.json" "$here/fixture.json"

(cd "$root" && go test ./core/ckpt -run 'LlamaCpp' -count=1 -v)
