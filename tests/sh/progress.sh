#!/usr/bin/env bash
# What a training run shows of its progress (src/app/train_report.c):
# - the step line carries the elapsed time and the ETA ("-" after the run's first step, also
#   when resumed); --log-every N prints it every N steps and for the first and last, while
#   the --log keeps a record of every step; without --peak-tflops the line shows TFLOP/s;
# - the ETA in the log is the steps left times the mean time per step after the first:
#   eta_s = (steps - step) (elapsed_s - elapsed_s of step 1) / (step - 1), to the rounding of
#   the log's milliseconds;
# - the log's first record keeps the backend's fields (blas_core_by, ...) and adds
#   zerotrain's version (git describe), the layout, and every option --help lists with the
#   value the run used; given back as --config (nulls left out), it trains the same run,
#   loss for loss.
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}
out=build/test_progress; rm -rf $out; mkdir -p $out
export OMP_NUM_THREADS=1
MPI="mpirun --oversubscribe $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root ) -x OMP_NUM_THREADS"
ZT=build/zerotrain
T="--n-layer 2 --n-head 4 --n-embd 64 --n-ctx 64 --seq 32 --micro-batch 2 --lr 1e-3"
fail=0
bad() { echo "FAIL $*"; fail=1; }

$ZT $T --steps 7 --log-every 3 --val-every 7 --log $out/a.jsonl --ckpt-dir $out/ck > $out/a.out 2>&1 ||
  { cat $out/a.out; exit 1; }
steps=$(grep -E '^step +[0-9]+/7 \| loss' $out/a.out | sed -E 's/^step +([0-9]+)\/.*/\1/' | tr '\n' ' ')
[ "$steps" = "1 3 6 7 " ] && echo "ok   --log-every 3 prints steps $steps" || bad "--log-every 3 printed steps '$steps'"
grep -Eq '^step +1/7 \| .* tok/s \|  *[0-9.]+ TFLOP/s \| elapsed 0:0[0-9] \| ETA - \| params ' $out/a.out ||
  bad "step 1's line: $(grep -E '^step +1/7' $out/a.out)"
grep -Eq '^step +6/7 \| .* \| elapsed [0-9]+:[0-5][0-9] \| ETA [0-9]+:[0-5][0-9]$' $out/a.out ||
  bad "step 6's line: $(grep -E '^step +6/7' $out/a.out)"
grep -Eq '^step +7/7 \| .* \| ETA 0:00$' $out/a.out || bad "step 7's line: $(grep -E '^step +7/7 \| loss' $out/a.out)"
grep -q 'MFU' $out/a.out && bad "an MFU without --peak-tflops"
grep -Eq '^step +7/7 \| val loss' $out/a.out || bad "no validation line"

# the log: every step, the ETA from the mean after the first step, the first record
$PY - $out/a.jsonl "$($ZT --help)" "$(cat build/version.stamp 2>/dev/null)" <<'EOF' || fail=1
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
head, steps = recs[0], [r for r in recs if "loss" in r]
bad = []
if [r["step"] for r in steps] != list(range(1, 8)):
    bad.append("step records %s" % [r["step"] for r in steps])
if steps[0]["eta_s"] is not None:
    bad.append("step 1's eta_s %s: nothing to average yet" % steps[0]["eta_s"])
t1 = steps[0]["elapsed_s"]
for r in steps[1:]:
    want = (7 - r["step"]) * (r["elapsed_s"] - t1) / (r["step"] - 1)
    if abs(r["eta_s"] - want) > 1e-3 * (7 - r["step"]) + 2e-3:
        bad.append("step %d: eta_s %.3f, the mean after step 1 gives %.3f" % (r["step"], r["eta_s"], want))
for k in ("blas", "blas_core", "blas_core_by", "zerotrain_version", "backend", "layout", "config"):
    if k not in head:
        bad.append("the first record lacks %s" % k)
if head.get("layout") != {"world": 1, "dp": 1, "pp": 1, "tp": 1}:
    bad.append("layout %s" % head.get("layout"))
names = re.findall(r"^  --([a-z0-9-]+)", sys.argv[2], re.M)
cfg = head.get("config", {})
missing = [n for n in names if n != "config" and n not in cfg]
if missing or len(cfg) != len(names) - 1:
    bad.append("config keys: missing %s; %d keys for %d options" % (missing, len(cfg), len(names) - 1))
want = {"n-layer": 2, "n-embd": 64, "seq": 32, "steps": 7, "log-every": 3, "lr": 0.001,
        "model": "tiny", "vocab": 256, "data": None, "ckpt-dir": sys.argv[1].replace("a.jsonl", "ck")}
for k, v in want.items():
    if cfg.get(k) != v:
        bad.append("config %s = %r, the run used %r" % (k, cfg.get(k), v))
# the version the binary was built with (the Makefile's build/version.stamp: git describe
# then, which later commits do not change)
ver, built = head.get("zerotrain_version", ""), sys.argv[3]
if not ver or (built and ver != built):
    bad.append("zerotrain_version %r, built as %r" % (ver, built))
for b in bad:
    print("FAIL", b)
if not bad:
    print("ok   the log: 7 step records, eta_s from the mean after step 1, the first record "
          "with %d options, version %s" % (len(cfg), ver))
sys.exit(1 if bad else 0)
EOF

# the configuration record trains the same run (a --log of its own; no checkpoints)
$PY -c '
import json, sys
c = json.loads(open(sys.argv[1]).readline())["config"]
c = {k: v for k, v in c.items() if v is not None and k not in ("log", "ckpt-dir")}
json.dump(c, open(sys.argv[2], "w"))' $out/a.jsonl $out/again.json
$ZT --config $out/again.json --log $out/again.jsonl > $out/again.out 2>&1 || { cat $out/again.out; exit 1; }
losses() { grep '"loss"' $1 | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' '; }
[ "$(losses $out/again.jsonl)" = "$(losses $out/a.jsonl)" ] && echo "ok   the config record reproduces the run" ||
  bad "the config record's run: losses $(losses $out/again.jsonl) against $(losses $out/a.jsonl)"

# resumed: the first step of this run has no ETA yet
$ZT $T --steps 9 --log-every 3 --resume $out/ck > $out/r.out 2>&1 || { cat $out/r.out; exit 1; }
steps=$(grep -E '^step +[0-9]+/9 \| loss' $out/r.out | sed -E 's/^step +([0-9]+)\/.*/\1/' | tr '\n' ' ')
[ "$steps" = "8 9 " ] || bad "resumed at 7, --log-every 3 printed steps '$steps'"
grep -Eq '^step +8/9 \| .* \| ETA - \| params ' $out/r.out || bad "resumed: step 8's line: $(grep -E '^step +8/9' $out/r.out)"

# the layout under mpirun
$MPI -np 4 $ZT $T --steps 2 --pp 2 --tp 2 --log $out/m.jsonl > $out/m.out 2>&1 || { cat $out/m.out; exit 1; }
head -1 $out/m.jsonl | grep -q '"layout":{"world":4,"dp":1,"pp":2,"tp":2}' || bad "mpirun layout: $(head -c 300 $out/m.jsonl)"
head -1 $out/m.jsonl | grep -q '"blas_core_by":' || bad "the first record lost blas_core_by"

# --log-every 0
if $ZT $T --log-every 0 > $out/zero.out 2>&1; then bad "--log-every 0 accepted"
else grep -q -- "--log-every must be at least 1" $out/zero.out || bad "--log-every 0: $(cat $out/zero.out)"; fi
exit $fail
