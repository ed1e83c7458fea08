#!/usr/bin/env bash
# Downloads Debian packages (main and non-free of this release) into the
# folder DIR without installing them or touching the system's apt
# configuration (a private sources list, lists and cache under a temporary
# folder). Used by cuda-headers.sh and cuda-toolkit.sh.
#   .ci/debian-download.sh DIR PACKAGE...
set -euo pipefail
out=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. /etc/os-release
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$out"
echo "deb http://deb.debian.org/debian ${VERSION_CODENAME} main non-free" > "$work/sources.list"
apt=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Debug::NoLocking=1)
apt-get "${apt[@]}" update -qq >&2
(cd "$out" && apt-get "${apt[@]}" download "$@" >&2)
