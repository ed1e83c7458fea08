#!/usr/bin/env bash
# whale's engine figures beside its peers', alternately, on this machine.
#
#   experiments/peers.sh rounds RB WHALE [ROUNDS]
#   experiments/peers.sh gemm   RB WHALE
#
# RB is a scratch folder with ../shared/refbench's programs built (see its
# README): triad, run (llama2.c's run.c) with small.bin and tok.bin from
# mk_llama2c.py at bench-small's shape, and sgemm (OpenBLAS). WHALE is a
# whale binary.
#
# rounds: per round, triad's read median, run.c five times, `whale bench
# engine --json`, run.c five times; prints each figure of issue 17 with its
# ratio (batch 1 against the mean of run.c's two medians). gemm: OpenBLAS
# (2 threads, median of its reps) and whale on the bench's 48 GEMM shapes,
# twice each, alternately; prints the ratio of the better of each side's
# two runs per shape. Run both on a quiet machine.
set -euo pipefail
mode=${1:?usage: experiments/peers.sh rounds|gemm RB WHALE [ROUNDS]}
rb=$(cd "${2:?refbench folder}" && pwd)
whale=$(realpath "${3:?whale binary}")
rounds=${4:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

runc() { # median of five runs of run.c at bench-small's shape
  (cd "$rb" && for _ in 1 2 3 4 5; do
    OMP_NUM_THREADS=2 ./run small.bin -z tok.bin -t 1.0 -p 1.0 -s 1 -n 256 2>&1 |
      sed -n 's/.*achieved tok\/s: \([0-9.]*\).*/\1/p'
  done) | sort -n | sed -n 3p
}

case $mode in
rounds)
  for r in $(seq 1 "$rounds"); do
    read=$(cd "$rb" && OMP_NUM_THREADS=2 ./triad | sed -n 's/^read .*median=\([0-9.]*\).*/\1/p')
    before=$(runc)
    "$whale" bench engine --json 2>/dev/null >"$work/e.json"
    after=$(runc)
    python3 - "$work/e.json" "$r" "$(date +%T)" "$read" "$before" "$after" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r, t, read, before, after = sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
b1, bf, b64, big = d['sample_b1'], d['sample_b1_bf16'], d['sample_b64'], d['sample_110m_b1']
print(f"round {r} ({t}): triad read {read:.1f} GB/s; run.c {before:.0f} / {after:.0f}")
print(f"  batch 1 {b1['tokens_per_s']:.0f} ({b1['min_tokens_per_s']:.0f}-{b1['max_tokens_per_s']:.0f}), "
      f"{b1['tokens_per_s'] / ((before + after) / 2):.2f}x run.c; bf16 {bf['tokens_per_s']:.0f}")
print(f"  batch 64 {b64['tokens_per_s']:.0f} ({b64['min_tokens_per_s']:.0f}-{b64['max_tokens_per_s']:.0f}), "
      f"{b64['tokens_per_s'] / b1['tokens_per_s']:.2f}x batch 1")
print(f"  110M bf16 {big['tokens_per_s']:.1f} tokens/s, {big['gbps']:.1f} GB/s: {big['gbps'] / read:.2f} of triad's read, "
      f"{big.get('of_read_weights', 0):.2f} of the bench's weights-sized sweep ({d['read_gbps_110m_weights']:.1f} GB/s)")
print(f"  training {d['train']['of_bound']:.3f} of the {d['peak_gflops']:.0f} GFLOP/s peak")
PY
  done
  ;;
gemm)
  for i in 1 2; do
    for L in NN NT TN; do
      ta=0 tb=0
      [ "$L" = NT ] && tb=1
      [ "$L" = TN ] && ta=1
      for K in 256 512 704 768; do for N in 256 512 704 768; do
        g=$(cd "$rb" && TRANSA=$ta TRANSB=$tb env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=2 \
          ./sgemm 1024 "$K" "$N" 5 | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
        echo "$L $K $N $g" >>"$work/openblas$i.txt"
      done; done
    done
    "$whale" bench engine --json 2>/dev/null >"$work/whale$i.json"
  done
  python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def blas(i):
    return {(l, int(k), int(n)): float(g) for l, k, n, g in (x.split() for x in open(f"{w}/openblas{i}.txt"))}
def ours(i):
    return {(g['layout'], g['k'], g['n']): g['gflops'] for g in json.load(open(f"{w}/whale{i}.json"))['gemm']}
o1, o2, w1, w2 = blas(1), blas(2), ours(1), ours(2)
r = sorted((max(w1[s], w2[s]) / max(o1[s], o2[s]), s) for s in w1)
print(f"whale / OpenBLAS over {len(r)} shapes (better of two runs each): "
      f"min {r[0][0]:.2f} {r[0][1]}, median {r[len(r) // 2][0]:.2f}, max {r[-1][0]:.2f}; "
      f"below 0.9: {[s for x, s in r if x < 0.9]}")
PY
  ;;
*)
  echo "experiments/peers.sh: unknown mode $mode (rounds or gemm)" >&2
  exit 2
  ;;
esac
