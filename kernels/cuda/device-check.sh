#!/usr/bin/env bash
# device-check.sh — whale's CUDA backend checked on a machine with an NVIDIA
# GPU, in one run of at most 8 minutes, into one JSON file.
#
# That machine may have nvcc, PyTorch and transformers but no Go, so the
# binaries are built beforehand on the build machine (Go, and the CUDA
# headers and stub libraries under /work/cuda/root) and copied over with
# this script. kernels/cuda/build-check.sh does all of it into
# dist/device-check; by hand:
#
#   cd <the repository>
#   R=$(.ci/cuda-headers.sh)     # the CUDA 11.8 headers and stub libraries
#   export CGO_CFLAGS="-I$R/usr/include" CGO_LDFLAGS="-L$R/usr/lib/x86_64-linux-gnu/stubs"
#   D=dist/device-check && mkdir -p "$D"
#   go test -c -tags cuda -o "$D/cuda.test" ./kernels/cuda
#   go build -tags cuda -ldflags="-s -w" -o "$D/whale" ./cmd/whale   # optional: a smoke run
#   git describe --always --dirty --abbrev=40 > "$D/COMMIT"
#   go run ./cmd/whale bench engine --json > "$D/cpu-engine.json"  # the CPU backend's figures
#   cp kernels/cuda/device-check.sh kernels/cuda/torch_ref.py kernels/cuda/check/combine.py "$D/"
#   cp -r core/bundle/testdata/transformers core/bundle/testdata/transformers_parity.py "$D/"
#
# (cpu-engine.json gives the CPU's batch-64 sampling tokens/s, sample_b64;
# WHALE_CPU_SAMPLE_B64=<tokens/s> or a file cpu-sample-b64.txt holding the
# number do as well.)
#
# Shared libraries: the tagged binaries link only libcuda.so.1 (the
# driver's, present on any GPU machine); cuBLAS is opened at run time,
# libcublas.so.13, .12 or .11, whichever the library path has first (a CUDA
# toolkit's lib64, or PyTorch's nvidia/cublas/lib wheel folder). The script
# puts its own directory and lib/ first on LD_LIBRARY_PATH, then every
# /usr/local/cuda*/lib64, then PyTorch's cuBLAS folder, and records what
# the test binary resolves (ldd) in the report.
#
# Run:   bash device-check.sh [DIR]     DIR holds the files above (default:
#        the script's directory). Writes $OUT/device-check.json ($OUT if
#        set, else the current directory) and the steps' logs beside it in
#        device-check-logs/. Exits 0 when every target passes.
#
# Steps (each under a timeout; together under WHALE_CHECK_SECONDS, 450 by
# default, so the run ends within 8 minutes even when a step hangs):
#   1. ./cuda.test -test.run TestDevice...: the op table every backend runs
#      (kernels/kerneltest) against the float64 reference (normalised error
#      within each op's tolerance: 1e-5 in f32 for most, 1e-2 with bf16
#      weights; bit-exact moves and roundings; deterministic), the sampler's
#      invariants (GPU alone, bit-exact), and 200-step training runs whose
#      losses must match the CPU's within 1e-3.
#   2. Benchmarks: GEMM (model shapes and 4096³, f32 and bf16), a 0.6B
#      training step (WHALE_BENCH_B × WHALE_BENCH_T, default 4 × 256), and
#      bench-small sampling at batch 64 and 1; then one step and one
#      sampling run again with the per-op profile on (profile.tsv).
#   3. python3 torch_ref.py: torch.matmul at the same shapes and an eager
#      PyTorch training step of the same 0.6B model, batch and length.
#   3b. python3 transformers_parity.py: Hugging Face transformers' logits
#      against whale's on the exported fixture folders (issue 15's check c).
#   4. Optional: ./whale bench engine --backend cuda --quick --json.
#   5. check/combine.py judges the targets and writes the report.

set -u -o pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=$(cd "${1:-$SELF}" && pwd) || { echo "device-check: no directory ${1:-}" >&2; exit 2; }
OUTDIR=${OUT:-$PWD}
mkdir -p "$OUTDIR"
LOGS=$OUTDIR/device-check-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
REPORT=$OUTDIR/device-check.json

DEADLINE=${WHALE_CHECK_SECONDS:-450}
RESERVE=15 # for the combining at the end
B=${WHALE_BENCH_B:-4}
T=${WHALE_BENCH_T:-256}
export WHALE_BENCH_B=$B WHALE_BENCH_T=$T

# find FILE: the first of DIR/FILE, the script's directory, its check/.
find_file() {
	local f
	for f in "$DIR/$1" "$SELF/$1" "$SELF/check/$1" "$DIR/check/$1"; do
		if [[ -e $f ]]; then
			echo "$f"
			return 0
		fi
	done
	return 1
}

# Libraries: ours first, then the CUDA toolkits, then PyTorch's cuBLAS.
libpath="$DIR:$DIR/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64; do
	[[ -d $d ]] && libpath="$libpath:$d"
done
if torchblas=$(python3 -c 'import nvidia.cublas as c, os; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null); then
	[[ -d $torchblas ]] && libpath="$libpath:$torchblas"
fi
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

STEPS=$LOGS/steps.tsv
: >"$STEPS"

# step NAME CAP CMD...: runs CMD with its output in LOGS/NAME.log under a
# timeout of CAP seconds or what is left of the deadline, whichever is
# less, and records its exit status and time; 124 means it timed out.
step() {
	local name=$1 cap=$2
	shift 2
	local left=$((DEADLINE - SECONDS - RESERVE))
	((left < cap)) && cap=$left
	if ((cap < 5)); then
		echo "device-check: $name skipped: out of time" | tee -a "$LOGS/$name.log"
		printf '%s\tskipped\t0\t0\n' "$name" >>"$STEPS"
		return 0
	fi
	echo "device-check: $name (up to ${cap}s)"
	local t0=$SECONDS rc=0
	timeout -k 5 "$cap" "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
	printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$cap" >>"$STEPS"
	echo "device-check: $name: exit $rc after $((SECONDS - t0))s"
}

TEST=$DIR/cuda.test
if [[ ! -x $TEST ]]; then
	echo "device-check: $TEST missing (build it first: see the top of this script)" | tee "$LOGS/cuda.test.log"
fi

# A tagged binary whose driver does not load exits at start-up (the cu
# package's init); say so in the report rather than as six failed steps.
nvidia-smi >"$LOGS/nvidia-smi.log" 2>&1 || true
ldd "$TEST" >"$LOGS/ldd.log" 2>&1 || true

# 1. Correctness: ops, the sampler's invariants, training curves, each in
# a process of its own, so that an error that spoils the CUDA context
# (a misaligned access in the ops' odd-offset pass) spoils one step only.
step tests-ops 150 env WHALE_REQUIRE_GPU=1 WHALE_CHECK_JSON="$LOGS/ops.json" \
	"$TEST" -test.run '^TestDeviceOpsMatchReference$' -test.v -test.timeout 145s
step tests-invariants 40 env WHALE_REQUIRE_GPU=1 WHALE_CHECK_JSON="$LOGS/invariants.json" \
	"$TEST" -test.run '^TestDeviceSamplerInvariants$' -test.v -test.timeout 35s
step tests-train 120 env WHALE_REQUIRE_GPU=1 WHALE_CHECK_JSON_TRAIN="$LOGS/train.json" \
	"$TEST" -test.run '^TestDeviceTrainingMatchesCPU$' -test.v -test.timeout 115s

# 2. whale's figures. Benchtimes keep the three under ~2 minutes: GEMM
# for 150 ms a shape (68 shapes), the training steps and sampling a fixed
# number of times (the testing package runs one more, b.N = 1, first).
step bench-gemm 75 "$TEST" -test.run '^$' -test.bench '^BenchmarkGemm$' -test.benchtime 150ms -test.timeout 70s
step bench-train 90 "$TEST" -test.run '^$' -test.bench '^BenchmarkTrainStep' -test.benchtime 3x -test.timeout 85s
step bench-sample 60 "$TEST" -test.run '^$' -test.bench '^BenchmarkSampleBenchSmall$' -test.benchtime 2x -test.timeout 55s
# 2b. Where the time goes: one 0.6B training step and one sampling run at
# each batch again, with the per-op profile on (WHALE_CUDA_PROFILE; its
# events slow launch-bound work, so these runs are not the figures above),
# into profile.tsv, which combine.py copies into the report.
step profile 20 env WHALE_CUDA_PROFILE=1 WHALE_CUDA_PROFILE_OUT="$LOGS/profile.tsv" "$TEST" -test.run '^$' \
	-test.bench '^(BenchmarkTrainStep0p6B|BenchmarkSampleBenchSmall)$' -test.benchtime 1x -test.timeout 18s

# 3. PyTorch on the same GPU.
if TORCH_REF=$(find_file torch_ref.py); then
	step torch 120 python3 "$TORCH_REF" --B "$B" --T "$T" --out "$LOGS/torch.json"
else
	echo "device-check: torch_ref.py not found" | tee "$LOGS/torch.log"
fi

# 3b. Hugging Face transformers' own logits against whale's on the
# folders whale exported (core/bundle/testdata/transformers).
if HF_PARITY=$(find_file transformers_parity.py) && HF_FIXTURE=$(find_file transformers); then
	step transformers 90 python3 "$HF_PARITY" "$HF_FIXTURE" --out "$LOGS/transformers.json"
else
	echo "device-check: transformers_parity.py or the transformers fixture not found" | tee "$LOGS/transformers.log"
fi

# 4. The tagged whale binary end to end (optional).
if [[ -x $DIR/whale ]]; then
	step whale-engine 45 bash -c '"$0" bench engine --backend cuda --quick --json >"$1"' "$DIR/whale" "$LOGS/engine.json"
fi

# 5. Meta and the report.
commit=${WHALE_COMMIT:-}
if [[ -z $commit && -f $DIR/COMMIT ]]; then
	commit=$(head -n1 "$DIR/COMMIT")
fi
if [[ -z $commit ]] && command -v git >/dev/null; then
	commit=$(git -C "$SELF" describe --always --dirty --abbrev=40 2>/dev/null || true)
fi
WHALE_COMMIT_FOUND=$commit DIR="$DIR" LOGS="$LOGS" python3 - >"$LOGS/meta.json" <<'EOF'
import datetime, json, os, socket, subprocess
logs, d = os.environ["LOGS"], os.environ["DIR"]

def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""

smi = run("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
header = next((l.strip(" |") for l in run("nvidia-smi").splitlines() if "Driver Version" in l), "")
cpu, source = os.environ.get("WHALE_CPU_SAMPLE_B64", ""), "env WHALE_CPU_SAMPLE_B64"
if not cpu and os.path.exists(os.path.join(d, "cpu-engine.json")):
    try:
        cpu = json.load(open(os.path.join(d, "cpu-engine.json")))["sample_b64"]["tokens_per_s"]
        source = "cpu-engine.json (whale bench engine --json on the build machine)"
    except Exception as e:
        source = "cpu-engine.json unreadable: %s" % e
if not cpu and os.path.exists(os.path.join(d, "cpu-sample-b64.txt")):
    cpu, source = open(os.path.join(d, "cpu-sample-b64.txt")).read().strip(), "cpu-sample-b64.txt"
if not cpu:
    source = "none given"
steps = {}
for line in open(os.path.join(logs, "steps.tsv")):
    name, rc, secs, cap = line.rstrip("\n").split("\t")
    steps[name] = dict(exit=rc if rc == "skipped" else int(rc), seconds=int(secs), timeout=int(cap),
                       timed_out=rc in ("124", "137"))
ldd = open(os.path.join(logs, "ldd.log")).read().splitlines() if os.path.exists(os.path.join(logs, "ldd.log")) else []
libs = dict(ld_library_path=os.environ.get("LD_LIBRARY_PATH", ""),
            resolved=[l.strip() for l in ldd if "=>" in l],
            missing=[l.split()[0] for l in ldd if "not found" in l])
init = ""
tl = os.path.join(logs, "tests-ops.log")
if os.path.exists(tl):
    init = next((l.strip() for l in open(tl, errors="replace") if "Error in initialization" in l or "error while loading shared libraries" in l), "")
json.dump(dict(when=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               host=socket.gethostname(), commit=os.environ.get("WHALE_COMMIT_FOUND") or None,
               gpu_name=smi.split(",")[0].strip() if smi else None,
               nvidia_smi=dict(query=smi, header=header), cpu_sample_b64=cpu or None,
               cpu_sample_source=source, steps=steps, libraries=libs, startup_error=init or None), open(1, "w"), indent=1)
EOF

COMBINE=$(find_file combine.py) || { echo "device-check: check/combine.py not found" >&2; exit 2; }
args=(--meta "$LOGS/meta.json" --ops "$LOGS/ops.json" --invariants "$LOGS/invariants.json" --train "$LOGS/train.json"
	--bench-gemm "$LOGS/bench-gemm.log" --bench-train "$LOGS/bench-train.log"
	--bench-sample "$LOGS/bench-sample.log" --torch "$LOGS/torch.json" --profile "$LOGS/profile.tsv" --out "$REPORT")
[[ -f $LOGS/engine.json ]] && args+=(--engine "$LOGS/engine.json")
[[ -f $LOGS/transformers.json ]] && args+=(--transformers "$LOGS/transformers.json")
python3 "$COMBINE" "${args[@]}"
rc=$?
echo "device-check: ${SECONDS}s in all"
exit $rc
