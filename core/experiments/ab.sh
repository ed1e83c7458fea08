#!/usr/bin/env bash
# A/B of two whale builds on the same work, alternating on one machine.
#
#   core/experiments/ab.sh OLD NEW [DOMAINS] [ROUNDS]
#
# OLD and NEW are commits (built from `git archive` into a scratch
# directory; HEAD is the last commit, not the working tree) or whale
# binaries already built. For each of ROUNDS rounds (default 3) and each
# of DOMAINS (default "math searchqa"), it runs the bench workload
# (`whale bench rollouts --domain D --json`: the small preset cut to one
# cycle, embedded base model, scratch store) with OLD, then with NEW, and
# prints per run the wall time, the process's CPU time (user + sys,
# /usr/bin/time), episodes/s, episodes per CPU second, cores busy, the
# process's peak RSS (/usr/bin/time, VmHWM at exit) and the run's own (the
# JSON's, where the build reports it), test mean@8 (equal mean@8 says
# the builds did the same work), and the system CPU time and minor page
# faults within the CPU time; then per domain the medians and NEW over
# OLD. Load from other jobs moves every figure, CPU time least (a busy
# machine slows a run's wall clock far more than its CPU seconds):
# compare only figures of one invocation.
#
#   core/experiments/ab.sh BASE [DOMAIN] [REPEATS] [TASKS]
#
# (the older form: the second argument a domain, or none) compares BASE
# with HEAD on the evaluation workload instead: h0 on the val split, k 8,
# the first TASKS tasks (default 128), with core/basemodel/base.safetensors
# of HEAD as the model of both, REPEATS rounds (default 2).
set -euo pipefail
usage="usage: core/experiments/ab.sh OLD NEW [DOMAINS] [ROUNDS], or core/experiments/ab.sh BASE [DOMAIN] [REPEATS] [TASKS]"
old=${1:?$usage}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build REV NAME: a whale binary of REV (a commit, or a binary as it is).
build() {
  if [[ -f "$1" && -x "$1" ]]; then
    ln -s "$(realpath "$1")" "$work/whale-$2"
    return
  fi
  mkdir -p "$work/src-$2"
  git -C "$root" archive "$1" | tar -x -C "$work/src-$2"
  (cd "$work/src-$2" && go build -o "$work/whale-$2" ./cmd/whale)
}

# label REV: a short name for a commit or a binary.
label() {
  if [[ -f "$1" && -x "$1" ]]; then
    basename "$1"
  else
    git -C "$root" rev-parse --short "$1"
  fi
}

case "${2:-}" in
"" | math | searchqa | chess)
  dom=${2:-math}
  reps=${3:-2}
  tasks=${4:-128}
  a=$(label "$old")
  b=$(label HEAD)
  build "$old" "$a"
  build HEAD "$b"
  model="$root/core/basemodel/base.safetensors"
  for r in $(seq 1 "$reps"); do
    for name in "$a" "$b"; do
      start=$(date +%s.%N)
      out=$(/usr/bin/time -f '%U %S %M' -o "$work/time" "$work/whale-$name" eval --domain "$dom" --harness h0 --split val \
        --k 8 --n "$tasks" --max-new-tokens 128 --model "$model" --json 2>/dev/null)
      end=$(date +%s.%N)
      read -r user sys rss <"$work/time"
      mean=$(printf '%s' "$out" | sed -n 's/.*"mean_at_k": *\([0-9.e-]*\).*/\1/p')
      awk -v n="$name" -v s="$start" -v e="$end" -v u="$user" -v y="$sys" -v m="$rss" -v k="$tasks" -v mean="$mean" \
        'BEGIN { w = e - s; printf "%-10s wall %7.1f s  CPU %7.1f s  episodes/s %6.2f  episodes/CPU-s %6.2f  cores %4.2f  peak RSS %5d MiB  mean@8 %s\n", n, w, u + y, 8 * k / w, 8 * k / (u + y), (u + y) / w, m / 1024, mean }'
    done
  done
  exit 0
  ;;
esac

new=$2
doms=${3:-math searchqa}
rounds=${4:-3}
a=$(label "$old")
b=$(label "$new")
if [[ "$a" == "$b" ]]; then
  b="$b-new"
fi
build "$old" "$a"
build "$new" "$b"
# field JSON NAME: a number field of the bench's JSON row.
field() { printf '%s' "$1" | sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p"; }
for r in $(seq 1 "$rounds"); do
  for d in $doms; do
    for name in "$a" "$b"; do
      start=$(date +%s.%N)
      out=$(/usr/bin/time -f '%U %S %M %R' -o "$work/time" "$work/whale-$name" bench rollouts --domain "$d" --json 2>"$work/err" | tail -n 1) || {
        echo "$name on $d failed:" >&2
        tail -n 5 "$work/err" >&2
        exit 1
      }
      end=$(date +%s.%N)
      read -r user sys rss faults <"$work/time"
      eps=$(field "$out" episodes_per_s)
      episodes=$(field "$out" episodes)
      run=$(field "$out" peak_rss_bytes)
      mean=$(field "$out" test_mean_at_8)
      awk -v r="$r" -v d="$d" -v n="$name" -v s="$start" -v e="$end" -v u="$user" -v y="$sys" -v m="$rss" -v eps="$eps" -v k="$episodes" -v run="${run:-0}" -v mean="$mean" -v f="$faults" \
        'BEGIN { w = e - s; c = u + y; printf "round %d  %-9s %-14s wall %7.1f s  CPU %7.1f s  episodes/s %6.2f  episodes/CPU-s %6.2f  cores %4.2f  peak RSS %5d MiB (run %5d MiB)  test mean@8 %s  sys %.1f s  page faults %dk\n", r, d, n, w, c, eps, k / c, c / w, m / 1024, run / 1048576, mean, y, f / 1000 }' |
        tee -a "$work/rows"
    done
  done
done
echo
for d in $doms; do
  awk -v d="$d" -v a="$a" -v b="$b" '
    function median(v, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    $3 == d && $4 == a { na++; wa[na] = $6; ea[na] = $12; ca[na] = $14; ra[na] = $19 }
    $3 == d && $4 == b { nb++; wb[nb] = $6; eb[nb] = $12; cb[nb] = $14; rb[nb] = $19 }
    END {
      if (!na || !nb) exit
      mwa = median(wa, na); mwb = median(wb, nb); mea = median(ea, na); meb = median(eb, nb); mra = median(ra, na); mrb = median(rb, nb)
      mca = median(ca, na); mcb = median(cb, nb)
      printf "%-9s medians  %s: wall %.1f s, %.2f episodes/s, %.2f episodes/CPU-s, peak RSS %d MiB;  %s: wall %.1f s, %.2f episodes/s, %.2f episodes/CPU-s, peak RSS %d MiB;  %s/%s: wall %.2f×, episodes/s %.2f×, episodes/CPU-s %.2f×\n",
        d, a, mwa, mea, mca, mra, b, mwb, meb, mcb, mrb, b, a, mwb / mwa, meb / mea, mcb / mca
    }' "$work/rows"
done
