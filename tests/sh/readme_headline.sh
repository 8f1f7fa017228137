#!/usr/bin/env bash
# Every command in the README, run as written, top to bottom (issue 39): the first command must
# train on any machine a user first tries, as root or not, with fewer cores than ranks, and
# without the warning that the default validation split is smaller than what a validation
# reads; then every other command line of every code block (a line ending in \ joined to the
# next; a "$ " transcript's command without its prompt and output; blocks of output skipped),
# in a scratch directory that mirrors the repository, where mybook.txt, book.txt, book1.txt and
# book2.txt are license texts of /usr/share/common-licenses. Each must exit 0. The commands that
# need a cluster, a GPU or the whole suite are listed below with the reason; a listed command
# that the README no longer holds fails the test, so the list stays true. SKIPs without mpirun
# or GPT-2's vocabulary (offline).
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
root=$(pwd)
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }
out=build/test_readme_headline; rm -rf $out; mkdir -p $out/work
zt_gpt2_vocab $out/cache || { echo "SKIP: GPT-2's vocabulary cannot be had (offline)"; exit 77; }

cmd=$(awk '/^```/{n++; next} n==1{print; exit}' README.md)
echo "README: $cmd"
case "$cmd" in build/zerotrain*) ;; *) echo "FAIL: unexpected first command"; exit 1 ;; esac
timeout 600 bash -c "$cmd" > $out/out.txt 2>&1
rc=$?
grep -E '^zerotrain launch:|^layout:|^done:' $out/out.txt
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; tail -20 $out/out.txt; exit 1; }
grep -q '^done: ' $out/out.txt || { echo "FAIL: no 'done' line"; exit 1; }
if grep -q 'warning: validation reads' $out/out.txt; then
  echo "FAIL: the default run warns about its validation split: $(grep 'warning: validation' $out/out.txt)"; exit 1
fi
# the defaults agree on 8 ranks of data parallelism too (a global batch of 64 sequences): no
# validation reads a sequence twice
build/zerotrain launch -np 8 train --steps 2 > $out/dp8.txt 2>&1 || { echo "FAIL: launch -np 8 train --steps 2"; tail -5 $out/dp8.txt; exit 1; }
if grep -q 'warning: validation reads' $out/dp8.txt; then
  echo "FAIL: launch -np 8 train warns: $(grep 'warning: validation' $out/dp8.txt)"; exit 1
fi
echo "ok: launch -np 8 train (dp 8) validates without a warning"

# The commands not run here, each with the reason (a prefix of the README's line).
declare -A NOT_RUN=(
  ["make test"]="the whole suite, of which this test is part"
  ["make cuda"]="needs the CUDA toolkit and a GPU (scripts/gpu_checks.sh)"
  ["make test-cuda"]="needs a GPU (scripts/gpu_checks.sh)"
  ["build/zerotrain-cuda --backend cuda"]="needs a GPU"
  ["mpirun -np 8 build/zerotrain-cuda"]="needs GPUs"
  ["bash scripts/gpu_checks.sh"]="a GPU machine's checks"
  ["mpirun -np 16 --hostfile hosts"]="needs several machines"
  ["srun --mpi=pmix"]="inside a Slurm allocation: tests/sh/slurm.sh runs it on a Slurm of its own"
  ["mpirun -np 8 build/zerotrain --zero 1 --model gpt2 --data train.bin"]="inside a Slurm allocation (tests/sh/slurm.sh)"
  ["sbatch scripts/slurm_train.sbatch"]="submits a Slurm job (tests/sh/slurm.sh runs the script)"
)
# every command line of the README after the first, one per line
"${PYTHON:-/usr/bin/python3}" - README.md > $out/commands.txt <<'PYEOF'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
starts = ("build/", "make ", "bash ", "OMP_NUM_THREADS=", "mpirun ", "srun ", "sbatch ",
          "python3 ", "BACKEND=", "$ ")
cmds, block, inb = [], [], False
for line in lines:
    if line.startswith("```"):
        if inb:
            first = next((l for l in block if l.strip() and not l.lstrip().startswith("#")), "")
            if first.startswith(starts):  # a block of commands, not of output
                transcript = first.startswith("$ ")
                i = 0
                while i < len(block):
                    l = block[i]
                    if transcript and not l.startswith("$ "):
                        i += 1; continue
                    l = l[2:] if transcript else l
                    if not l.strip() or l.lstrip().startswith("#"):
                        i += 1; continue
                    while l.rstrip().endswith("\\") and i + 1 < len(block):
                        i += 1; l = l.rstrip()[:-1] + " " + block[i].strip()
                    cmds.append(l.strip()); i += 1
        inb, block = not inb, []
    elif inb:
        block.append(line)
for c in cmds[1:]:
    print(c)
PYEOF
echo "README: $(wc -l < $out/commands.txt) more commands"
# the scratch directory: the repository's entries as links (build too), and the texts
for f in "$root"/*; do ln -s "$f" $out/work/; done
L=/usr/share/common-licenses
cat $L/GPL-3 $L/GPL-2 > $out/work/mybook.txt
cat $L/GPL-3 $L/GPL-2 $L/LGPL-2.1 > $out/work/book.txt
cp $L/GPL-3 $out/work/book1.txt; cp $L/LGPL-2.1 $out/work/book2.txt
fail=0; n=0; declare -A used=()
while IFS= read -r c; do
  why=""
  for k in "${!NOT_RUN[@]}"; do [[ "$c" == "$k"* ]] && { why=${NOT_RUN[$k]}; used[$k]=1; }; done
  if [ -n "$why" ]; then echo "not run: $c  ($why)"; continue; fi
  n=$((n + 1))
  t0=$(date +%s)
  (cd $out/work && timeout 900 bash -c "$c") > $out/cmd$n.txt 2>&1 < /dev/null
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL (exit $rc, $(( $(date +%s) - t0 )) s): $c"; tail -8 $out/cmd$n.txt | sed 's/^/    | /'; fail=1
  elif grep -q 'warning: validation reads' $out/cmd$n.txt; then
    echo "FAIL (validation warning): $c"; grep 'warning: validation' $out/cmd$n.txt; fail=1
  else echo "ok ($(( $(date +%s) - t0 )) s): $c"; fi
done < $out/commands.txt
for k in "${!NOT_RUN[@]}"; do
  [ -n "${used[$k]:-}" ] || { echo "FAIL: the list of commands not run names '$k', which the README no longer holds"; fail=1; }
done
echo "$n README commands run, $(grep -c . $out/commands.txt) in all after the first"
exit $fail
