#!/usr/bin/env bash
# Builds, on the build machine, everything kernels/cuda/device-check.sh
# needs on a GPU machine into one folder (default dist/device-check, about
# 35 MB): the cuda-tagged test binary and whale, the commit, this machine's
# CPU figures, the scripts and the transformers fixture. Then, on the GPU
# machine: OUT=<folder> bash <that folder>/device-check.sh <that folder>.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${1:-dist/device-check}
R=$(.ci/cuda-headers.sh)
export CGO_CFLAGS="-I$R/usr/include" CGO_LDFLAGS="-L$R/usr/lib/x86_64-linux-gnu/stubs"
rm -rf "$D"
mkdir -p "$D"
go test -c -tags cuda -o "$D/cuda.test" ./kernels/cuda
go build -tags cuda -ldflags="-s -w" -o "$D/whale" ./cmd/whale
git describe --always --dirty --abbrev=40 > "$D/COMMIT"
if [ -z "${WHALE_CPU_SAMPLE_B64:-}" ]; then
  go run ./cmd/whale bench engine --json > "$D/cpu-engine.json"
else
  echo "$WHALE_CPU_SAMPLE_B64" > "$D/cpu-sample-b64.txt"
fi
cp kernels/cuda/device-check.sh kernels/cuda/torch_ref.py kernels/cuda/check/combine.py "$D/"
cp -r core/bundle/testdata/transformers core/bundle/testdata/transformers_parity.py "$D/"
du -sh "$D"
