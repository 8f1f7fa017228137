#!/usr/bin/env bash
# The README's first command, run verbatim (the first line of its first code block): it must
# train on any machine a user first tries, as root or not, with fewer cores than ranks.
set -u
cd "$(dirname "$0")/../.."
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
cmd=$(awk '/^```/{n++; next} n==1{print; exit}' README.md)
echo "README: $cmd"
case "$cmd" in build/zerotrain*) ;; *) echo "FAIL: unexpected first command"; exit 1 ;; esac
out=build/test_readme_headline; rm -rf $out; mkdir -p $out
timeout 600 bash -c "$cmd" > $out/out.txt 2>&1
rc=$?
grep -E '^zerotrain launch:|^layout:|^done:' $out/out.txt
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; tail -20 $out/out.txt; exit 1; }
grep -q '^done: ' $out/out.txt || { echo "FAIL: no 'done' line"; exit 1; }
