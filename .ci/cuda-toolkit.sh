#!/usr/bin/env bash
# Unpacks Debian's CUDA 11.8 toolkit (nvcc, cicc, ptxas; the non-free
# packages nvidia-cuda-toolkit, nvidia-cuda-dev and libnvvm4, about 870 MB
# of downloads) into a folder (default /work/cuda/root; first argument to
# override) without installing anything or touching the system's apt
# configuration, and points the unpacked nvcc at its own tree (its
# nvcc.profile is a link to /etc/nvcc.profile). Prints the folder. Then:
#   R=$(.ci/cuda-toolkit.sh) LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu \
#   NVCC=$R/usr/lib/nvidia-cuda-toolkit/bin/nvcc \
#   NVCC_FLAGS="-ccbin /usr/bin/gcc --allow-unsupported-compiler -I$R/usr/include" kernels/cuda/gen.sh
set -euo pipefail
dest=${1:-/work/cuda/root}
bin=$dest/usr/lib/nvidia-cuda-toolkit/bin
if [ -x "$bin/nvcc" ] && [ -f "$bin/nvcc.profile" ] && [ ! -L "$bin/nvcc.profile" ]; then
  echo "$dest"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$(dirname "$0")/debian-download.sh" "$work" nvidia-cuda-toolkit nvidia-cuda-dev libnvvm4
mkdir -p "$dest"
for d in "$work"/*.deb; do dpkg-deb -x "$d" "$dest"; done
rm -f "$bin/nvcc.profile"
cat > "$bin/nvcc.profile" <<PROFILE
NVVMIR_LIBRARY_DIR = $dest/usr/lib/nvidia-cuda-toolkit/libdevice
PATH		+= $dest/usr/lib/nvidia-cuda-toolkit/bin:$dest/usr/bin:
INCLUDES	+= -I$dest/usr/include
LIBRARIES	=+ \$(_SPACE_) -L$dest/usr/lib/x86_64-linux-gnu/stubs -L$dest/usr/lib/x86_64-linux-gnu
PROFILE
test -x "$bin/nvcc"
echo "$dest"
