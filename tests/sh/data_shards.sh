#!/usr/bin/env bash
# --data as shards: the embedded default tokens split into three files named as llm.c names
# its shards, given as a glob (quoted) and as a comma-separated list, train exactly as the one
# file they came from where no sample crosses a shard's end (checked on a run whose samples
# all sit inside shards); a run checkpointed at step 6 (manifest: shard 0, sample 24) and
# resumed across the boundary into shard 1 gives losses bit-identical to the run that did not
# stop; a 2-rank run reads the same batches. The headerless nanoGPT file is refused with the
# conversion command, which then trains.
set -u
cd "$(dirname "$0")/../.."
source tests/env.sh
ZT=${ZT:-build/zerotrain}
PY=${PYTHON:-/usr/bin/python3}
out=build/test_data_shards; rm -rf $out; mkdir -p $out/shards
export OMP_NUM_THREADS=1
fail=0
# T 64, 4 samples a step: shard 0 holds samples 0-29 (the boundary is inside step 8), shard 1
# 30-49, shard 2 the rest of the first 80 samples. Each shard repeats one token of its
# neighbour so that the samples of the three shards are the samples of the whole.
$PY - build/data/default_train.bin $out <<'PYEOF'
import sys, numpy as np
src, out = sys.argv[1], sys.argv[2]
tok = np.fromfile(src, dtype="<u2", offset=1024)
T = 64
def write(path, t):
    h = np.zeros(256, "<i4"); h[:3] = [20240520, 1, len(t)]
    with open(path, "wb") as f: f.write(h.tobytes()); f.write(t.astype("<u2").tobytes())
bounds = [0, 30, 50, 80]
for k in range(3):
    write(f"{out}/shards/fineweb_train_{k + 1:06d}.bin", tok[bounds[k] * T: bounds[k + 1] * T + 1])
write(f"{out}/whole.bin", tok[: 80 * T + 1])
tok[: 80 * T + 1].astype("<u2").tofile(f"{out}/nanogpt_train.bin")  # nanoGPT: no header
PYEOF
R=(--seq 64 --micro-batch 4 --val-every 0 --steps 12 --lr 1e-3)
losses() { grep -o '"step":[0-9]*,"loss":[^,]*' "$1"; }
run() { # name, flags...
  local name=$1; shift
  $ZT "${R[@]}" "$@" --log $out/$name.jsonl > $out/$name.out 2>&1 || { echo "FAIL: $name"; tail -5 $out/$name.out; fail=1; }
}
run whole --data $out/whole.bin
run glob --data "$out/shards/fineweb_train_*.bin" --ckpt-dir $out/ck --ckpt-every 6
S=$out/shards/fineweb_train_00000
run list --data "${S}1.bin,${S}2.bin,${S}3.bin"
if diff <(losses $out/whole.jsonl) <(losses $out/glob.jsonl) > /dev/null &&
   diff <(losses $out/whole.jsonl) <(losses $out/list.jsonl) > /dev/null; then
  echo "ok: the glob and the list of shards train as the whole file (12 steps, 3 shards)"
else echo "FAIL: shards differ from the whole file"; diff <(losses $out/whole.jsonl) <(losses $out/glob.jsonl) | head; fail=1; fi
# where the checkpoint stands: step 6 = sample 24 of shard 0
$PY - $out/ck/step-6/manifest.json <<'PYEOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))["data"]
want = {"shards": 3, "samples_per_epoch": 80, "epoch": 0, "shard": 0, "sample_in_shard": 24,
        "token_in_shard": 24 * 64}
bad = {k: (d.get(k), v) for k, v in want.items() if d.get(k) != v}
assert d["shard_path"].endswith("fineweb_train_000001.bin"), d
assert not bad, bad
print("ok: the step-6 manifest says shard 0 (%s), sample 24" % d["shard_path"])
PYEOF
# resume at step 6 across the shard boundary (step 8): the losses of steps 7-12 bit for bit
run resumed --data "$out/shards/fineweb_train_*.bin" --resume $out/ck/step-6
if diff <(losses $out/glob.jsonl | sed -n '7,12p') <(losses $out/resumed.jsonl) > /dev/null &&
   [ "$(losses $out/resumed.jsonl | wc -l)" -eq 6 ]; then
  echo "ok: resumed at step 6, steps 7-12 (across into shard 1 at step 8) bit-identical"
else echo "FAIL: the resume across the shard boundary differs"; diff <(losses $out/glob.jsonl | sed -n '7,12p') <(losses $out/resumed.jsonl); fail=1; fi
# two ranks read the same global batches
if command -v mpirun > /dev/null; then
  mpirun --oversubscribe --allow-run-as-root -np 2 $ZT "${R[@]}" --steps 3 --micro-batch 2 \
    --data "$out/shards/fineweb_train_*.bin" --log $out/dp2.jsonl > $out/dp2.out 2>&1 < /dev/null &&
  $PY - $out/whole.jsonl $out/dp2.jsonl <<'PYEOF' && echo "ok: dp 2 over the shards matches one rank (float reassociation)" || { echo "FAIL: dp 2"; tail -3 $out/dp2.out; fail=1; }
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l][:3]
b = [json.loads(l) for l in open(sys.argv[2]) if '"loss"' in l][:3]
# the mean of 4 sample losses summed as two pairs: float reassociation only, a few ulp of ~5
assert len(b) == 3 and all(abs(x["loss"] - y["loss"]) <= 1e-5 * abs(x["loss"]) for x, y in zip(a, b)), (a, b)
PYEOF
fi
# nanoGPT's headerless file: the error names it and the conversion, which then trains
$ZT "${R[@]}" --data $out/nanogpt_train.bin > $out/nano.out 2>&1 && { echo "FAIL: nanoGPT file accepted"; fail=1; }
conv=$(grep -o 'zerotrain prepare --from-nanogpt [^;]*' $out/nano.out)
if [ -n "$conv" ]; then
  echo "ok: $(grep -o "nanoGPT's headerless[^;]*" $out/nano.out)"
  build/$conv > /dev/null && run nano --data $out/nanogpt_train.bin.zt.bin &&
  diff <(losses $out/whole.jsonl) <(losses $out/nano.jsonl) > /dev/null &&
  echo "ok: '$conv' converts it, and it trains as the llm.c file" || { echo "FAIL: converted nanoGPT file"; fail=1; }
else echo "FAIL: no conversion in: $(cat $out/nano.out)"; fail=1; fi
exit $fail
