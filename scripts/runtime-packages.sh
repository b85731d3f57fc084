#!/bin/sh
# Prints the Debian packages that own the shared libraries the given binaries link directly
# (their DT_NEEDED entries), one per line; apt brings what those need in turn. The Dockerfile's
# runtime stage installs exactly these. Fails, naming the binary and library, when a library is
# not found or belongs to no package (something installed by hand).
# Usage: scripts/runtime-packages.sh build/bin/fanout-*
set -eu
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for b in "$@"; do
  ldd "$b" > "$tmp"
  for lib in $(objdump -p "$b" | awk '/NEEDED/{print $2}'); do
    path=$(awk -v l="$lib" '$1 == l && $3 ~ /^\// {print $3}' "$tmp")
    if [ -z "$path" ]; then echo "runtime-packages: $b needs $lib, which is not found" >&2; exit 1; fi
    real=$(readlink -f "$path")
    # Debian 12 merges /lib into /usr/lib; dpkg knows a file by the path its package ships.
    owner=$(dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)
    if [ -z "$owner" ]; then echo "runtime-packages: $b needs $path, which no Debian package owns" >&2; exit 1; fi
    echo "$owner" | head -1 | cut -d: -f1
  done
done | sort -u
