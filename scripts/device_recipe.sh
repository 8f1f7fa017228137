#!/usr/bin/env bash
# The GPU machine's recipe for this tree, run here in the project root before a lease: fills
# .device/ (kept out of git) with Debian's packages of what that machine lacks and env.sh,
# which unpacks them there. Then carry ".device" and begin each device command with
# `source .device/env.sh && ...` (README, "On a GPU").
#
#   bash scripts/device_recipe.sh
#
# It is the GPU machine recipe's (README, "On a GPU") (its package list, read from it, and its env.sh)
# plus what the Makefile has linked since: protobuf-c, since the Makefile links libprotobuf-c
# and generates C from src/formats/tb_event.proto with protoc-c (libprotobuf-c1,
# libprotobuf-c-dev, protobuf-c-compiler and the C++ libraries protoc-c runs on, libprotoc32
# and libprotobuf32); env.sh then also puts protoc-c on the PATH and names a missing
# protobuf-c header or protoc-c at once. It works in a git worktree too (prepare.sh writes
# .git/info/exclude, which a worktree does not have).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${DEVICE_RECIPE:-$(cd .. && pwd)/shared/device}
[ -f "$shared/prepare.sh" ] && [ -f "$shared/env.sh" ] ||
    { echo "device_recipe.sh: no $shared/prepare.sh and env.sh (DEVICE_RECIPE=...)" >&2; exit 1; }
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.device/' "$exclude" 2> /dev/null || echo '/.device/' >> "$exclude"
# the shared list: the words between "apt-get download" and "2>&1" in prepare.sh
pkgs=$(sed -n '/apt-get download/,/2>&1/p' "$shared/prepare.sh" | tr -d '\\' | tr '\n' ' ' |
    sed 's/.*apt-get download//; s/2>&1.*//')
[ -n "${pkgs// /}" ] || { echo "device_recipe.sh: no package list in $shared/prepare.sh" >&2; exit 1; }
added="libprotobuf-c1 libprotobuf-c-dev protobuf-c-compiler libprotoc32 libprotobuf32"
rm -rf .device
mkdir -p .device/debs
cp "$shared/env.sh" .device/env.sh
# shellcheck disable=SC2086 # package names are words
(cd .device/debs && apt-get download $pkgs $added 2>&1 | grep -v unsandboxed || true)
for p in $pkgs $added; do
    ls .device/debs/"${p}"_*.deb > /dev/null 2>&1 || { echo "device_recipe.sh: apt-get download $p failed" >&2; exit 1; }
done
cat >> .device/env.sh << 'EOF'
# scripts/device_recipe.sh's additions: protoc-c (unpacked above with its C++ libraries)
export PATH=$_zt_deps/usr/bin${PATH:+:$PATH}
[ -f $_zt_deps/usr/include/protobuf-c/protobuf-c.h ] || [ -f /usr/include/protobuf-c/protobuf-c.h ] ||
    echo "env.sh: MISSING header protobuf-c/protobuf-c.h (bash scripts/device_recipe.sh here)"
{ command -v protoc-c > /dev/null && protoc-c --version > /dev/null 2>&1; } ||
    echo "env.sh: MISSING a working protoc-c (bash scripts/device_recipe.sh here)"
EOF
ls -1 .device/debs
echo "ready: carry [\".device\"] and begin each device command with: source .device/env.sh &&"
