#!/usr/bin/env bash
# The 2×2 of docs/HARNESS_SEARCH.md ("The 2×2 at today's defaults, with
# voting apart"): base and weight-only-trained weights × h0, the searched
# harness and a plain 4-sample vote, on math and searchqa, 256 test tasks
# × 8. Writes everything into DIR (default ./diag2x2) and prints the two
# tables. About 3 CPU-hours on 2 cores.
#
#   go build -o whale ./cmd/whale && experiments/diag2x2/run.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
whale=$(cd "$here/../../.." && pwd)/whale
D=${1:-diag2x2}
mkdir -p "$D" && cd "$D"
h=$here/../../../harnesses/lib
# The harnesses: h0 with one knob changed.
sed 's/^next_step = _route_free$/next_step = _route_check_own/' "$h/math/h0.star" >m-own.star
sed 's/^SAMPLES = 1$/SAMPLES = 4/' "$h/math/h0.star" >m-v4.star
sed 's/^SAMPLES = 1$/SAMPLES = 6/' "$h/searchqa/h0.star" >sq-s6.star
sed 's/^SAMPLES = 1$/SAMPLES = 4/' "$h/searchqa/h0.star" >sq-v4.star
for f in m-own m-v4 sq-s6 sq-v4; do cmp -s "$f.star" "$h/$([[ $f == m-* ]] && echo math || echo searchqa)/h0.star" && { echo "$f.star: the knob was not found in h0" >&2; exit 1; }; done
# The trained weights: a small weight-only run, its best checkpoint.
for dom in math searchqa; do
	[[ -s wo-$dom-model/model.safetensors ]] && continue
	"$whale" run --headless --condition weight-only --preset small --domain $dom --budget 1216 --seed 1 --db wo-$dom.db --json >wo-$dom.json
	ck=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['best_checkpoint'])" wo-$dom.json)
	"$whale" export "$ck" --db wo-$dom.db --out wo-$dom-model
done
ev() { # NAME DOMAIN HARNESS [MODEL]
	[[ -s ev-$1.json ]] && return
	"$whale" eval --domain "$2" --harness "$3" --split test --k 8 --n 256 ${4:+--model "$4"} --json --trace tr-$1.jsonl >ev-$1.json.tmp
	mv ev-$1.json.tmp ev-$1.json
}
for w in base wo; do
	mm=; ms=
	[[ $w == wo ]] && mm=wo-math-model/model.safetensors ms=wo-searchqa-model/model.safetensors
	ev math-$w-h0 math h0 $mm; ev math-$w-own math m-own.star $mm; ev math-$w-v4 math m-v4.star $mm
	ev sq-$w-h0 searchqa h0 $ms; ev sq-$w-s6 searchqa sq-s6.star $ms; ev sq-$w-v4 searchqa sq-v4.star $ms
done
python3 "$here/analyse.py" math-base-h0 math-base-own math-base-v4 math-wo-h0 math-wo-own math-wo-v4 \
	sq-base-h0 sq-base-s6 sq-base-v4 sq-wo-h0 sq-wo-s6 sq-wo-v4
python3 "$here/paired.py"
