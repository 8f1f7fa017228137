#!/usr/bin/env bash
# A fresh machine's first `make`: the MPI compiler wrapper exists only once the setup step
# (scripts/setup.sh, run by the Makefile's stamp) has installed MPI. The Makefile must read
# the MPI flags when a recipe runs, never when it is parsed (a parse-time $(shell mpicc ...)
# made the README's first `make demo` fail with "mpi.h: No such file" on a fresh Debian).
set -u
cd "$(dirname "$0")/../.."
real=$(command -v mpicc) || { echo "fresh_make: no mpicc here"; exit 77; }
# under build/, not TMPDIR: make cannot take a BUILD path with spaces
mkdir -p build && tmp=$(mktemp -d "$PWD/build/fresh_make.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# 1. Parsing never asks the wrapper: a dry run of every goal leaves the spy uncalled.
printf '#!/bin/sh\necho "$@" >> %s/calls\nexec %s "$@"\n' "$tmp" "$real" >"$tmp/spy"
chmod +x "$tmp/spy"
make -n BUILD="$tmp/dry" MPICC="$tmp/spy" all test demo bench >/dev/null 2>&1
if [ -e "$tmp/calls" ]; then
  echo "FAIL: parsing the Makefile ran the MPI wrapper: $(head -2 "$tmp/calls" | tr '\n' ' ')"
  fail=1
else
  echo "ok   parsing the Makefile runs no MPI wrapper"
fi

# 2. A clean build where the wrapper appears only during setup: the MPI object compiles.
mkdir -p "$tmp/bin"
if make BUILD="$tmp/b" MPICC="$tmp/bin/mpicc" SETUP="ln -s $real $tmp/bin/mpicc" \
     "$tmp/b/comm/comm_mpi.o" >"$tmp/make.log" 2>&1; then
  echo "ok   clean build with the MPI wrapper installed by setup compiles comm/comm_mpi.c"
else
  echo "FAIL: clean build with the MPI wrapper installed by setup:"; tail -5 "$tmp/make.log"
  fail=1
fi
exit $fail
