#!/usr/bin/env bash
# A/B of rollout throughput between two commits on the same work.
#
#   experiments/ab.sh BASE [DOMAIN] [REPEATS] [TASKS]
#
# builds BASE and the working tree's HEAD into a scratch directory and runs,
# alternately (BASE, HEAD, BASE, HEAD, ...), the evaluation workload that
# both can run the same way: h0 on the val split, k 8, the first TASKS
# tasks (default 128), with core/basemodel/base.safetensors of HEAD as the
# model of both, so the trajectories are the same whatever the build.
# Per run it prints wall time, episodes/s, cores busy (CPU time over wall
# time), peak RSS and mean@8 (equal mean@8 says the builds did the same
# work). Run it on a quiet machine: load from other jobs moves every figure.
set -euo pipefail
base=${1:?usage: experiments/ab.sh BASE [DOMAIN] [REPEATS] [TASKS]}
dom=${2:-math}
reps=${3:-2}
tasks=${4:-128}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for rev in "$base" HEAD; do
  name=$(git -C "$root" rev-parse --short "$rev")
  mkdir -p "$work/src-$name"
  git -C "$root" archive "$rev" | tar -x -C "$work/src-$name"
  (cd "$work/src-$name" && go build -o "$work/whale-$name" ./cmd/whale)
done
model="$root/core/basemodel/base.safetensors"
a=$(git -C "$root" rev-parse --short "$base")
b=$(git -C "$root" rev-parse --short HEAD)
for r in $(seq 1 "$reps"); do
  for name in "$a" "$b"; do
    start=$(date +%s.%N)
    out=$(/usr/bin/time -f '%U %S %M' -o "$work/time" "$work/whale-$name" eval --domain "$dom" --harness h0 --split val \
      --k 8 --n "$tasks" --max-new-tokens 128 --model "$model" --json 2>/dev/null)
    end=$(date +%s.%N)
    read -r user sys rss < "$work/time"
    mean=$(printf '%s' "$out" | sed -n 's/.*"mean_at_k": *\([0-9.e-]*\).*/\1/p')
    awk -v n="$name" -v s="$start" -v e="$end" -v u="$user" -v y="$sys" -v m="$rss" -v k="$tasks" -v mean="$mean" \
      'BEGIN { w = e - s; printf "%-10s wall %7.1f s  episodes/s %6.2f  cores %4.2f  peak RSS %5d MB  mean@8 %s\n", n, w, 8 * k / w, (u + y) / w, m / 1024, mean }'
  done
done
