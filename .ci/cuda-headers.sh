#!/usr/bin/env bash
# Unpacks the CUDA headers and the stub libcuda.so / libcublas.so that the
# cuda-tagged build compiles and links against, from Debian's non-free
# nvidia-cuda-dev package, into a cache folder (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/whale-cuda; first argument to override),
# without touching the system's apt configuration. Prints the folder.
# Nothing here needs a GPU: the stubs only satisfy the linker.
#   R=$(.ci/cuda-headers.sh)
#   CGO_CFLAGS="-I$R/usr/include" CGO_LDFLAGS="-L$R/usr/lib/x86_64-linux-gnu/stubs" go build -tags cuda ./cmd/whale
set -euo pipefail
dest=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/whale-cuda}
if [ -f "$dest/usr/include/cuda.h" ] && [ -f "$dest/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" ]; then
  echo "$dest"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$(dirname "$0")/debian-download.sh" "$work" nvidia-cuda-dev
mkdir -p "$dest"
dpkg-deb --fsys-tarfile "$work"/nvidia-cuda-dev_*.deb |
  tar -x -C "$dest" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/stubs/*'
test -f "$dest/usr/include/cuda.h"
echo "$dest"
