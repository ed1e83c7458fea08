#!/usr/bin/env bash
# Regenerates whale.ptx, the embedded kernels of the CUDA backend, from
# src/*.cu: all of them compile as one translation unit to PTX for
# compute_80 (the driver JIT-compiles it for the GPU at hand, e.g. sm_90).
# The first line records the sources' sum (the scheme of SourceSum in
# ptxsum.go), which TestPTXIsCurrent checks.
#
#   kernels/cuda/gen.sh
#
# NVCC names the compiler (default: nvcc on PATH); NVCC_FLAGS adds flags,
# e.g. for the toolkit .ci/cuda-toolkit.sh unpacks:
#   R=$(.ci/cuda-toolkit.sh) LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu \
#   NVCC=$R/usr/lib/nvidia-cuda-toolkit/bin/nvcc \
#   NVCC_FLAGS="-ccbin /usr/bin/gcc --allow-unsupported-compiler -I$R/usr/include" kernels/cuda/gen.sh
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
NVCC_FLAGS=${NVCC_FLAGS:-}

# SourceSum: sha256 over every src/*.cu and src/*.cuh in byte order of
# their names, each as "<name>\n<size in bytes>\n<contents>".
files=$(cd src && LC_ALL=C ls | grep -E '\.(cu|cuh)$')
sum=$(for f in $files; do
	printf '%s\n%d\n' "$f" "$(wc -c <"src/$f")"
	cat "src/$f"
done | sha256sum | cut -d' ' -f1)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in $files; do
	case $f in *.cu) echo "#include \"$f\"" ;; esac
done >"$tmp/whale.cu"
# shellcheck disable=SC2086 # NVCC_FLAGS is a list of flags
"$NVCC" -ptx -arch=compute_80 -I"$PWD/src" $NVCC_FLAGS "$tmp/whale.cu" -o "$tmp/whale.ptx"
{
	echo "// whale-src-sha256: $sum"
	cat "$tmp/whale.ptx"
} >whale.ptx
echo "kernels/cuda/whale.ptx: $(grep -c '^.entry\|^\.visible \.entry' whale.ptx) kernels, sources $sum"
